package memory_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

var deployGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func helmConfig(t *testing.T, c *memory.Cluster) *action.Configuration {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	return cfg
}

func TestHelmInstallUpgradeRollbackUninstall(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	cfg := helmConfig(t, c)

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.Wait, install.Timeout = "web", "apps", true, time.Second
	rel, err := install.RunWithContext(ctx, testchart.MustLoad("6.5.0"), map[string]any{"replicaCount": 2})
	require.NoError(t, err)
	assert.Equal(t, helmrelease.StatusDeployed, rel.Info.Status)
	assert.Equal(t, []string{
		"ConfigMap apps/web-podinfo", "Deployment apps/web-podinfo", "Ingress apps/web-podinfo",
		"Secret apps/web-podinfo", "Service apps/web-podinfo",
	}, c.Summary())

	dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: deployGVK, Namespace: "apps", Name: "web-podinfo"})
	require.NoError(t, err)
	replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	assert.Equal(t, int64(2), replicas)
	assert.Equal(t, "web", dep.GetAnnotations()["meta.helm.sh/release-name"])
	assert.Equal(t, int64(1), dep.GetGeneration())
	require.NotEmpty(t, dep.GetManagedFields())
	assert.Equal(t, "helm", dep.GetManagedFields()[0].Manager)

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace, upgrade.Wait, upgrade.Timeout = "apps", true, time.Second
	rel, err = upgrade.RunWithContext(ctx, "web", testchart.MustLoad("6.5.1"), map[string]any{"replicaCount": 3, "ingress": map[string]any{"enabled": false}})
	require.NoError(t, err)
	assert.Equal(t, 2, rel.Version)
	assert.NotContains(t, c.Summary(), "Ingress apps/web-podinfo", "objects dropped from the chart are deleted")
	dep, err = c.Get(ctx, release.ObjectRef{GroupVersionKind: deployGVK, Namespace: "apps", Name: "web-podinfo"})
	require.NoError(t, err)
	replicas, _, _ = unstructured.NestedInt64(dep.Object, "spec", "replicas")
	assert.Equal(t, int64(3), replicas)
	assert.Equal(t, int64(2), dep.GetGeneration())

	rb := action.NewRollback(cfg)
	rb.Version, rb.Wait, rb.Timeout = 1, true, time.Second
	require.NoError(t, rb.Run("web"))
	assert.Contains(t, c.Summary(), "Ingress apps/web-podinfo", "rollback brings the ingress back")

	hist, err := action.NewHistory(cfg).Run("web")
	require.NoError(t, err)
	require.Len(t, hist, 3)
	assert.Equal(t, helmrelease.StatusSuperseded, hist[0].Info.Status)
	assert.Equal(t, helmrelease.StatusDeployed, hist[2].Info.Status)

	un := action.NewUninstall(cfg)
	_, err = un.Run("web")
	require.NoError(t, err)
	assert.Empty(t, c.Summary())
}

func TestWaitTimesOutOnUnreadyDeployment(t *testing.T) {
	c := memory.New("m", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" {
			return memory.Health{Message: "0/1 replicas available"}
		}
		return memory.Health{Ready: true}
	}))
	install := action.NewInstall(helmConfig(t, c))
	install.ReleaseName, install.Namespace, install.Wait, install.Timeout = "web", "apps", true, 50*time.Millisecond
	rel, err := install.RunWithContext(context.Background(), testchart.MustLoad(""), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Deployment apps/web-podinfo: 0/1 replicas available")
	assert.Equal(t, helmrelease.StatusFailed, rel.Info.Status)
}

func TestHelmTestHookFailure(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m")
	cfg := helmConfig(t, c)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "web", "apps"
	_, err := install.RunWithContext(ctx, testchart.MustLoad(""), nil)
	require.NoError(t, err)

	c.SetHealth(func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Pod" {
			return memory.Health{Failed: true, Message: "curl exit 7"}
		}
		return memory.Health{Ready: true}
	})
	test := action.NewReleaseTesting(cfg)
	test.Namespace, test.Timeout = "apps", time.Second
	rel, err := test.Run("web")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "curl exit 7")
	var phase helmrelease.HookPhase
	for _, h := range rel.Hooks {
		phase = h.LastRun.Phase
	}
	assert.Equal(t, helmrelease.HookPhaseFailed, phase)

	c.SetHealth(nil)
	_, err = test.Run("web")
	require.NoError(t, err)
}

func TestServerSideApplyOwnership(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m")
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "apps", "labels": map[string]any{"team": "a"}},
		"data":     map[string]any{"color": "blue"},
	}}
	_, err := c.Apply(ctx, cm, release.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)

	other := cm.DeepCopy()
	other.Object["data"] = map[string]any{"color": "red"}
	_, err = c.Apply(ctx, other, release.ApplyOptions{FieldManager: "bob"})
	var conflict *release.ConflictError
	require.ErrorAs(t, err, &conflict)
	require.Len(t, conflict.Conflicts, 1)
	assert.Equal(t, "alice", conflict.Conflicts[0].Manager)
	assert.Equal(t, ".data.color", conflict.Conflicts[0].Path)

	got, err := c.Apply(ctx, other, release.ApplyOptions{FieldManager: "bob", Force: true})
	require.NoError(t, err)
	assert.Equal(t, "red", got.Object["data"].(map[string]any)["color"])

	list, err := c.List(ctx, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "apps", labels.SelectorFromSet(labels.Set{"team": "a"}))
	require.NoError(t, err)
	require.Len(t, list, 1)

	require.NoError(t, c.Delete(ctx, release.RefOf(cm), release.DeleteOptions{}))
	_, err = c.Get(ctx, release.RefOf(cm))
	assert.True(t, errors.Is(err, release.ErrNotFound))
	err = c.Delete(ctx, release.RefOf(cm), release.DeleteOptions{})
	assert.True(t, errors.Is(err, release.ErrNotFound))

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.Get(cctx, release.RefOf(cm))
	assert.ErrorIs(t, err, context.Canceled)
}

func TestUnknownKindNeedsItsCRD(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m")
	cr := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "apps"},
		"spec":     map[string]any{"size": 3},
	}}
	_, err := c.Apply(ctx, cr, release.ApplyOptions{FieldManager: "me"})
	require.Error(t, err, "a kind without CRD is not served")

	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Widget", "plural": "widgets"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}},
		},
	}}
	_, err = c.Apply(ctx, crd, release.ApplyOptions{FieldManager: "me"})
	require.NoError(t, err)
	_, err = c.Apply(ctx, cr, release.ApplyOptions{FieldManager: "me"})
	require.NoError(t, err)
}

func TestSimulatedControllersWriteStatusForKstatus(t *testing.T) {
	ctx := context.Background()
	healthy := true
	c := memory.New("m", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" && !healthy {
			return memory.Health{Message: "pulling image"}
		}
		return memory.Health{Ready: true}
	}))
	install := action.NewInstall(helmConfig(t, c))
	install.ReleaseName, install.Namespace = "web", "apps"
	_, err := install.RunWithContext(ctx, testchart.MustLoad(""), nil)
	require.NoError(t, err)

	ref := release.ObjectRef{GroupVersionKind: deployGVK, Namespace: "apps", Name: "web-podinfo"}
	for _, tc := range []struct {
		name    string
		healthy bool
		want    kstatus.Status
	}{
		{"ready", true, kstatus.CurrentStatus},
		{"rolling out", false, kstatus.InProgressStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			healthy = tc.healthy
			dep, err := c.Get(ctx, ref)
			require.NoError(t, err)
			res, err := kstatus.Compute(dep)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res.Status, res.Message)
		})
	}
}

// Creating by apply takes a fast path; it must record the same field
// ownership Kubernetes' field manager records (which dry-run apply uses).
func TestCreateByApplyMatchesFieldManager(t *testing.T) {
	ctx := context.Background()
	objs := []*unstructured.Unstructured{
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cfg", "namespace": "apps", "labels": map[string]any{"team": "a"}},
			"data":     map[string]any{"color": "blue", "size": "L"}}},
		{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "apps"},
			"spec": map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
				"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
					"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx", "ports": []any{map[string]any{"containerPort": int64(80)}}}}}}}}},
	}
	for _, obj := range objs {
		t.Run(obj.GetKind(), func(t *testing.T) {
			c := memory.New("m")
			dry, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "alice", DryRun: true})
			require.NoError(t, err)
			got, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "alice"})
			require.NoError(t, err)
			require.Len(t, got.GetManagedFields(), 1)
			require.Len(t, dry.GetManagedFields(), 1)
			assert.JSONEq(t, string(dry.GetManagedFields()[0].FieldsV1.Raw), string(got.GetManagedFields()[0].FieldsV1.Raw))
			assert.Equal(t, dry.GetManagedFields()[0].Operation, got.GetManagedFields()[0].Operation)

			// Ownership works on from there: another manager conflicts.
			other := obj.DeepCopy()
			other.SetLabels(map[string]string{"team": "b"})
			if obj.GetKind() == "Deployment" {
				other.Object["spec"].(map[string]any)["replicas"] = int64(5)
			} else {
				other.Object["data"] = map[string]any{"color": "red"}
			}
			_, err = c.Apply(ctx, other, release.ApplyOptions{FieldManager: "bob"})
			var conflict *release.ConflictError
			require.ErrorAs(t, err, &conflict)
			assert.Equal(t, "alice", conflict.Conflicts[0].Manager)
		})
	}
}

// Clusters sharing a Schemas reuse the managed fields of objects of the
// same shape; the memo must give exactly what the field manager records,
// whatever values differ, and never hide an error.
func TestSharedSchemasRecordExactFields(t *testing.T) {
	ctx := context.Background()
	deployment := func(mutate func(spec, container map[string]any)) *unstructured.Unstructured {
		container := map[string]any{"name": "web", "image": "nginx:1", "ports": []any{map[string]any{"containerPort": int64(80)}}}
		spec := map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{container}}}}
		if mutate != nil {
			mutate(spec, container)
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web", "namespace": "apps"}, "spec": spec}}
	}
	variants := map[string]*unstructured.Unstructured{
		"same shape, other values": deployment(func(spec, c map[string]any) { spec["replicas"] = int64(7); c["image"] = "nginx:2" }),
		"other container name":     deployment(func(_, c map[string]any) { c["name"] = "api" }),
		"other port":               deployment(func(_, c map[string]any) { c["ports"] = []any{map[string]any{"containerPort": int64(8080)}} }),
		"one more field":           deployment(func(spec, _ map[string]any) { spec["minReadySeconds"] = int64(5) }),
		"one more label": deployment(func(spec, _ map[string]any) {
			spec["template"].(map[string]any)["metadata"].(map[string]any)["labels"].(map[string]any)["tier"] = "front"
		}),
	}
	shared := memory.NewSchemas()
	first := memory.New("first", memory.WithSchemas(shared))
	_, err := first.Apply(ctx, deployment(nil), release.ApplyOptions{FieldManager: "alice"})
	require.NoError(t, err)
	for name, obj := range variants {
		t.Run(name, func(t *testing.T) {
			want, err := memory.New("alone").Apply(ctx, obj, release.ApplyOptions{FieldManager: "alice", DryRun: true})
			require.NoError(t, err)
			for _, c := range []*memory.Cluster{memory.New("m1", memory.WithSchemas(shared)), memory.New("m2", memory.WithSchemas(shared))} {
				got, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "alice"})
				require.NoError(t, err)
				assert.JSONEq(t, string(want.GetManagedFields()[0].FieldsV1.Raw), string(got.GetManagedFields()[0].FieldsV1.Raw))
			}
		})
	}
	t.Run("a value of the wrong type fails every time", func(t *testing.T) {
		bad := deployment(func(spec, _ map[string]any) { spec["replicas"] = "two" })
		for _, c := range []*memory.Cluster{memory.New("m3", memory.WithSchemas(shared)), memory.New("m4", memory.WithSchemas(shared))} {
			_, err := c.Apply(ctx, bad, release.ApplyOptions{FieldManager: "alice"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "replicas")
		}
	})
}

// Clusters sharing a Schemas may be written to at once (run with -race).
func TestSharedSchemasConcurrentClusters(t *testing.T) {
	shared := memory.NewSchemas()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := memory.New(fmt.Sprintf("m%d", i), memory.WithSchemas(shared))
			for j := range 20 {
				cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
					"metadata": map[string]any{"name": fmt.Sprintf("cm-%d", j%5), "namespace": "apps"},
					"data":     map[string]any{fmt.Sprintf("k%d", j%3): "v"}}}
				if _, err := c.Apply(context.Background(), cm, release.ApplyOptions{FieldManager: "m", Force: true}); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

// TestApplyDiscardResult: an apply whose caller discards the result
// (ApplyOptions.DiscardResult) returns no object but stores exactly what
// an ordinary apply stores, on create and on update, and still reports
// conflicts.
func TestApplyDiscardResult(t *testing.T) {
	ctx := context.Background()
	clock := memory.WithClock(func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) })
	plain, discard := memory.New("m", clock), memory.New("m", clock)
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "cfg", "namespace": "apps", "labels": map[string]any{"team": "a"}},
		"data":     map[string]any{"color": "blue"},
	}}
	changed := cm.DeepCopy()
	changed.Object["data"] = map[string]any{"color": "red"}
	for _, obj := range []*unstructured.Unstructured{cm, changed} {
		want, err := plain.Apply(ctx, obj, release.ApplyOptions{FieldManager: "alice"})
		require.NoError(t, err)
		require.NotNil(t, want)
		got, err := discard.Apply(ctx, obj, release.ApplyOptions{FieldManager: "alice", DiscardResult: true})
		require.NoError(t, err)
		assert.Nil(t, got)
		assert.Equal(t, withoutWriteTimes(plain.Objects()), withoutWriteTimes(discard.Objects()))
	}
	_, err := discard.Apply(ctx, cm, release.ApplyOptions{FieldManager: "bob", DiscardResult: true})
	var conflict *release.ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, "alice", conflict.Conflicts[0].Manager)
}

// withoutWriteTimes drops the time of objs' managedFields entries, which
// Kubernetes' field manager takes from the wall clock on update.
func withoutWriteTimes(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	for _, o := range objs {
		mf, _, _ := unstructured.NestedSlice(o.Object, "metadata", "managedFields")
		for _, e := range mf {
			delete(e.(map[string]any), "time")
		}
		_ = unstructured.SetNestedSlice(o.Object, mf, "metadata", "managedFields")
	}
	return objs
}
