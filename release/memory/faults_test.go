package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

var (
	cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	boom  = errors.New("boom")
)

func configMap(data string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "apps"},
		"data":     map[string]any{"k": data},
	}}
}

func kind(k string) func(release.ObjectRef) bool {
	return func(ref release.ObjectRef) bool { return ref.Kind == k }
}

// A fault fails one call of one operation before it changes anything,
// names the cluster, the operation and the object, and lets the next
// call through.
func TestFaultFailsOneCallAndChangesNothing(t *testing.T) {
	ctx := context.Background()
	ref := release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "settings"}
	calls := map[memory.Operation]func(c *memory.Cluster) error{
		memory.OpGet: func(c *memory.Cluster) error { _, err := c.Get(ctx, ref); return err },
		memory.OpList: func(c *memory.Cluster) error {
			_, err := c.List(ctx, cmGVK, "apps", nil)
			return err
		},
		memory.OpApply: func(c *memory.Cluster) error {
			_, err := c.Apply(ctx, configMap("applied"), release.ApplyOptions{FieldManager: "platform", Force: true})
			return err
		},
		memory.OpPatch: func(c *memory.Cluster) error {
			_, err := c.Patch(ctx, ref, []byte(`[{"op":"replace","path":"/data/k","value":"patched"}]`), release.PatchOptions{})
			return err
		},
		memory.OpUpdate: func(c *memory.Cluster) error {
			_, err := c.Update(ctx, configMap("updated"), "kubectl-edit")
			return err
		},
		memory.OpDelete: func(c *memory.Cluster) error { return c.Delete(ctx, ref, release.DeleteOptions{}) },
	}
	tests := []struct {
		op   memory.Operation
		want string
	}{
		{memory.OpGet, "cluster prod-eu-1: get v1 ConfigMap apps/settings: injected: boom"},
		{memory.OpList, "cluster prod-eu-1: list v1 ConfigMap in apps: injected: boom"},
		{memory.OpApply, "cluster prod-eu-1: apply v1 ConfigMap apps/settings: injected: boom"},
		{memory.OpPatch, "cluster prod-eu-1: patch v1 ConfigMap apps/settings: injected: boom"},
		{memory.OpUpdate, "cluster prod-eu-1: update v1 ConfigMap apps/settings: injected: boom"},
		{memory.OpDelete, "cluster prod-eu-1: delete v1 ConfigMap apps/settings: injected: boom"},
	}
	for _, tt := range tests {
		t.Run(string(tt.op), func(t *testing.T) {
			c := memory.New("prod-eu-1")
			_, err := c.Apply(ctx, configMap("v1"), release.ApplyOptions{FieldManager: "platform"})
			require.NoError(t, err)
			before := c.Objects()

			// Every other operation goes through; only tt.op fails.
			c.SetFaults(func(op memory.Operation, r release.ObjectRef) error {
				if op == tt.op {
					return boom
				}
				return nil
			})
			err = calls[tt.op](c)
			require.Error(t, err)
			assert.EqualError(t, err, tt.want)
			assert.ErrorIs(t, err, boom)
			var fe *memory.FaultError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "prod-eu-1", fe.Cluster)
			assert.Equal(t, tt.op, fe.Op)
			assert.Equal(t, "ConfigMap", fe.Object.Kind)
			assert.Equal(t, before, c.Objects(), "a failed call changes nothing")
			for op, call := range calls {
				if op != tt.op && op != memory.OpDelete {
					assert.NoError(t, call(c), "%s is not faulted", op)
				}
			}

			c.SetFaults(nil)
			assert.NoError(t, calls[tt.op](c), "SetFaults(nil) clears the fault")
		})
	}
}

func TestFailNthFailsOnlyTheNthMatchingCall(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m1")
	c.SetFaults(memory.FailNth(memory.OpApply, kind("ConfigMap"), 2, boom))
	apply := func(obj *unstructured.Unstructured) error {
		_, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "platform"})
		return err
	}
	secret := configMap("x")
	secret.SetKind("Secret")
	assert.NoError(t, apply(secret), "other kinds do not count")
	assert.NoError(t, apply(configMap("1")), "first match")
	assert.ErrorIs(t, apply(configMap("2")), boom, "second match")
	assert.NoError(t, apply(configMap("3")), "only once")
	_, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "settings"})
	assert.NoError(t, err, "other operations do not count")
}

func TestFailNthIsSafeForConcurrentUse(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m1")
	_, err := c.Apply(ctx, configMap("v"), release.ApplyOptions{FieldManager: "platform"})
	require.NoError(t, err)
	c.SetFaults(memory.FailNth(memory.OpGet, nil, 17, boom))
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed int
	)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "settings"}); err != nil {
				mu.Lock()
				failed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, failed)
}

func TestUnreachableAndCancelComeBeforeFaults(t *testing.T) {
	c := memory.New("m1")
	asked := 0
	c.SetFaults(func(memory.Operation, release.ObjectRef) error { asked++; return boom })
	ref := release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "settings"}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Get(ctx, ref)
	assert.ErrorIs(t, err, context.Canceled)
	c.SetUnreachable(errors.New("connection refused"))
	_, err = c.Get(context.Background(), ref)
	assert.ErrorContains(t, err, "unreachable: connection refused")
	assert.Zero(t, asked)
}

func install(t *testing.T, c *memory.Cluster) (*helmrelease.Release, error) {
	t.Helper()
	in := action.NewInstall(helmConfig(t, c))
	in.ReleaseName, in.Namespace, in.Wait, in.Timeout = "web", "apps", true, time.Second
	return in.RunWithContext(context.Background(), testchart.MustLoad("6.5.0"), nil)
}

func lastStatus(t *testing.T, c *memory.Cluster) helmrelease.Status {
	t.Helper()
	rel, err := c.Storage("apps").Last("web")
	require.NoError(t, err)
	return rel.Info.Status
}

// Faults reach the calls Helm's actions make: one request per object,
// so the objects Helm wrote before the failed one stay, as on a real
// cluster, and the next Helm action continues from there.
func TestFaultsInHelmInstall(t *testing.T) {
	all := []string{
		"ConfigMap apps/web-podinfo", "Deployment apps/web-podinfo", "Ingress apps/web-podinfo",
		"Secret apps/web-podinfo", "Service apps/web-podinfo",
	}
	tests := []struct {
		name  string
		fault memory.Fault
		want  string
		left  []string
	}{
		{
			name:  "create of one object",
			fault: memory.FailNth(memory.OpHelmCreate, kind("Deployment"), 1, boom),
			want:  "cluster m1: helm create apps/v1 Deployment apps/web-podinfo: injected: boom",
			// Helm creates the other kinds of the chart before Deployments.
			left: []string{"ConfigMap apps/web-podinfo", "Secret apps/web-podinfo", "Service apps/web-podinfo"},
		},
		{
			name:  "read before install",
			fault: memory.FailNth(memory.OpHelmGet, kind("Service"), 1, boom),
			want:  "cluster m1: helm get v1 Service apps/web-podinfo: injected: boom",
			// Helm checks every object before it creates any.
		},
		{
			name:  "build of a manifest",
			fault: memory.FailNth(memory.OpHelmBuild, kind("Ingress"), 1, boom),
			want:  "cluster m1: helm build networking.k8s.io/v1 Ingress apps/web-podinfo: injected: boom",
		},
		{
			name:  "storage create",
			fault: memory.FailNth(memory.OpStorageCreate, nil, 1, boom),
			want:  "cluster m1: storage create v1 Secret apps/sh.helm.release.v1.web.v1: injected: boom",
			// Helm writes its record before any object.
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := memory.New("m1")
			c.SetFaults(tt.fault)
			_, err := install(t, c)
			require.Error(t, err)
			assert.ErrorContains(t, err, tt.want)
			assert.ErrorIs(t, err, boom, "Helm keeps the injected error in the chain")
			assert.ElementsMatch(t, tt.left, c.Summary())

			c.SetFaults(nil)
			if _, err := c.Storage("apps").Last("web"); errors.Is(err, driver.ErrReleaseNotFound) {
				_, err = install(t, c)
				require.NoError(t, err)
			} else {
				assert.Equal(t, helmrelease.StatusFailed, lastStatus(t, c))
				up := action.NewUpgrade(helmConfig(t, c))
				up.Namespace = "apps"
				_, err := up.RunWithContext(context.Background(), "web", testchart.MustLoad("6.5.0"), nil)
				require.NoError(t, err)
			}
			assert.Equal(t, helmrelease.StatusDeployed, lastStatus(t, c))
			assert.Equal(t, all, c.Summary(), "the next action creates what the failed one left out")
		})
	}
}

func TestFaultsInHelmUpgradeAndUninstall(t *testing.T) {
	t.Run("update and delete in an upgrade", func(t *testing.T) {
		c := memory.New("m1")
		_, err := install(t, c)
		require.NoError(t, err)
		c.SetFaults(func(op memory.Operation, ref release.ObjectRef) error {
			if (op == memory.OpHelmUpdate && ref.Kind == "Deployment") || (op == memory.OpHelmDelete && ref.Kind == "Ingress") {
				return boom
			}
			return nil
		})
		up := action.NewUpgrade(helmConfig(t, c))
		up.Namespace = "apps"
		_, err = up.RunWithContext(context.Background(), "web", testchart.MustLoad("6.5.0"), map[string]any{"replicaCount": 3, "ingress": map[string]any{"enabled": false}})
		assert.ErrorContains(t, err, "cluster m1: helm update apps/v1 Deployment apps/web-podinfo: injected: boom")
		dep, err := c.Get(context.Background(), release.ObjectRef{GroupVersionKind: deployGVK, Namespace: "apps", Name: "web-podinfo"})
		require.NoError(t, err)
		n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		assert.Equal(t, int64(1), n, "the failed patch changed nothing")

		c.SetFaults(func(op memory.Operation, ref release.ObjectRef) error {
			if op == memory.OpHelmDelete && ref.Kind == "Ingress" {
				return boom
			}
			return nil
		})
		_, err = up.RunWithContext(context.Background(), "web", testchart.MustLoad("6.5.0"), map[string]any{"replicaCount": 3, "ingress": map[string]any{"enabled": false}})
		assert.ErrorContains(t, err, "cluster m1: helm delete networking.k8s.io/v1 Ingress apps/web-podinfo: injected: boom")
		assert.Contains(t, c.Summary(), "Ingress apps/web-podinfo")
	})

	t.Run("delete in an uninstall", func(t *testing.T) {
		c := memory.New("m1")
		_, err := install(t, c)
		require.NoError(t, err)
		c.SetFaults(memory.FailNth(memory.OpHelmDelete, kind("Deployment"), 1, boom))
		_, err = action.NewUninstall(helmConfig(t, c)).Run("web")
		assert.EqualError(t, err, "failed to delete release: web", "Helm logs the delete errors of an uninstall and returns this")
		assert.Equal(t, []string{"Deployment apps/web-podinfo"}, c.Summary(), "the other objects are deleted")
	})

	t.Run("storage write leaves the release pending", func(t *testing.T) {
		c := memory.New("m1")
		var refs []string
		var mu sync.Mutex
		c.SetFaults(func(op memory.Operation, ref release.ObjectRef) error {
			if op != memory.OpStorageUpdate {
				return nil
			}
			mu.Lock()
			refs = append(refs, ref.String())
			mu.Unlock()
			return boom
		})
		_, err := install(t, c)
		assert.NoError(t, err, "Helm's install only logs a failed write of its final record")
		assert.Equal(t, helmrelease.StatusPendingInstall, lastStatus(t, c), "as after a crash mid-install")
		assert.Contains(t, refs, "v1 Secret apps/sh.helm.release.v1.web.v1")
	})
}
