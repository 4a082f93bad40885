package integration

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/releasetest"
)

var (
	namespaceGVK  = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK     = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

func ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func object(gvk schema.GroupVersionKind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: fields}
	if obj.Object == nil {
		obj.Object = map[string]any{}
	}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

func namespace(t *testing.T, c release.Cluster, name string) {
	t.Helper()
	_, err := c.Apply(ctx(t), object(namespaceGVK, "", name, nil), release.ApplyOptions{FieldManager: "integration"})
	require.NoError(t, err)
}

func deployment(namespace, name string, replicas int64, app string) *unstructured.Unstructured {
	labels := map[string]any{"app": app}
	return object(deploymentGVK, namespace, name, map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": app}},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "web", "image": "registry.k8s.io/pause:3.10"},
				}},
			},
		},
	})
}

// TestConformance runs the backend conformance suite with each engine
// (engines), each on its own cluster.
func TestConformance(t *testing.T) {
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			releasetest.TestCluster(t, admin(t, e.cluster), releasetest.Options{NamespacePrefix: "conf-" + e.short, Engine: e.engine})
		})
	}
}

// TestMemoryServesWhatKubeServes checks the in-memory cluster's default
// view of the API against a real API server: every API version and kind
// it reports (its built-in kinds, as served by a server of the k8s.io
// libraries' release) is one the real server serves too, and its default
// Kubernetes version is not newer than the real one (the harness runs a
// release at least as new as the libraries).
func TestMemoryServesWhatKubeServes(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(controlPlane(t, "member1").Admin)
	require.NoError(t, err)
	served, err := action.GetVersionSet(dc)
	require.NoError(t, err)
	v, err := dc.ServerVersion()
	require.NoError(t, err)

	caps, err := memory.New("memory").Capabilities(ctx(t))
	require.NoError(t, err)
	var missing []string
	for _, av := range caps.APIVersions {
		if !served.Has(av) {
			missing = append(missing, av)
		}
	}
	assert.Empty(t, missing, "the in-memory cluster serves what %s does not", v.GitVersion)
	memMinor, err := strconv.Atoi(caps.KubeVersion.Minor)
	require.NoError(t, err)
	realMinor, err := strconv.Atoi(strings.TrimSuffix(v.Minor, "+"))
	require.NoError(t, err)
	assert.Equal(t, v.Major, caps.KubeVersion.Major)
	assert.LessOrEqual(t, memMinor, realMinor, "memory runs %s, the real server %s", caps.KubeVersion.Version, v.GitVersion)
}

// TestHelmLifecycle installs, upgrades, rolls back and uninstalls a
// release on member2 through a caller's RESTClientGetter built from a
// kubeconfig file, and checks Helm's records are Secrets of the storage
// namespace.
func TestHelmLifecycle(t *testing.T) {
	cp := controlPlane(t, "member2")
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &cp.AdminKubeconfig
	c, err := kube.New(kube.Config{Name: "member2", Getter: flags})
	require.NoError(t, err)
	const storage, apps, name = "helm-store", "helm-apps", "web"
	namespace(t, c, storage)
	namespace(t, c, apps)
	scope := release.HelmScope{StorageNamespace: storage, Namespace: apps}
	cfg := func(t *testing.T) *action.Configuration {
		cfg, err := c.HelmConfig(ctx(t), scope)
		require.NoError(t, err)
		return cfg
	}
	message := func(t *testing.T) string {
		obj, err := c.Get(ctx(t), release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: apps, Name: name + "-config"})
		require.NoError(t, err)
		return obj.Object["data"].(map[string]any)["message"].(string)
	}
	records := func(t *testing.T) []string {
		got, err := c.List(ctx(t), secretGVK, storage, labels.SelectorFromSet(labels.Set{"owner": "helm", "name": name}))
		require.NoError(t, err)
		var names []string
		for _, s := range got {
			names = append(names, s.GetName()+"="+s.GetLabels()["status"])
		}
		return names
	}

	install := action.NewInstall(cfg(t))
	install.ReleaseName, install.Namespace, install.Timeout = name, apps, time.Minute
	rel, err := install.RunWithContext(ctx(t), releasetest.Chart(), map[string]any{"message": "v1"})
	require.NoError(t, err)
	assert.Equal(t, helmrelease.StatusDeployed, rel.Info.Status)
	assert.Equal(t, "v1", message(t))

	upgrade := action.NewUpgrade(cfg(t))
	upgrade.Namespace, upgrade.Timeout = apps, time.Minute
	rel, err = upgrade.RunWithContext(ctx(t), name, releasetest.Chart(), map[string]any{"message": "v2"})
	require.NoError(t, err)
	assert.Equal(t, 2, rel.Version)
	assert.Equal(t, "v2", message(t))

	rollback := action.NewRollback(cfg(t))
	rollback.Version, rollback.Timeout = 1, time.Minute
	require.NoError(t, rollback.Run(name))
	assert.Equal(t, "v1", message(t))
	assert.Equal(t, []string{
		"sh.helm.release.v1.web.v1=superseded",
		"sh.helm.release.v1.web.v2=superseded",
		"sh.helm.release.v1.web.v3=deployed",
	}, records(t))

	// The release is visible to Helm's list in its storage namespace only.
	listed, err := action.NewList(cfg(t)).Run()
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, apps, listed[0].Namespace)

	_, err = action.NewUninstall(cfg(t)).Run(name)
	require.NoError(t, err)
	assert.Empty(t, records(t))
	_, err = c.Get(ctx(t), release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: apps, Name: name + "-web"})
	assert.ErrorIs(t, err, release.ErrNotFound)
}

// countingConfig counts the GET requests a client makes whose path holds
// part.
func countingConfig(cfg *rest.Config, n *atomic.Int64, part string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet && strings.Contains(req.URL.Path, part) {
				n.Add(1)
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestDrift changes objects as another field manager and finds the
// change with one List per kind, then corrects it by a forced apply.
func TestDrift(t *testing.T) {
	cp := controlPlane(t, "member1")
	const ns = "drift"
	var lists atomic.Int64
	c, err := kube.New(kube.Config{Name: "member1", REST: countingConfig(cp.Admin, &lists, "/namespaces/"+ns+"/"), FieldManager: "helmfleet"})
	require.NoError(t, err)
	namespace(t, c, ns)
	sel := labels.SelectorFromSet(labels.Set{"app": "drift"})
	desired := []*unstructured.Unstructured{
		deployment(ns, "api", 2, "drift"),
		deployment(ns, "web", 3, "drift"),
		object(configMapGVK, ns, "settings", map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "drift"}},
			"data":     map[string]any{"mode": "fast"},
		}),
	}
	for _, obj := range desired {
		_, err := c.Apply(ctx(t), obj, release.ApplyOptions{})
		require.NoError(t, err)
	}

	// Someone scales web and edits the ConfigMap, taking the fields.
	other := admin(t, "member1")
	_, err = other.Apply(ctx(t), object(deploymentGVK, ns, "web", map[string]any{"spec": map[string]any{"replicas": int64(7)}}),
		release.ApplyOptions{FieldManager: "kubectl-scale", Force: true})
	require.NoError(t, err)
	_, err = other.Apply(ctx(t), object(configMapGVK, ns, "settings", map[string]any{"data": map[string]any{"mode": "slow"}}),
		release.ApplyOptions{FieldManager: "kubectl-edit", Force: true})
	require.NoError(t, err)

	lists.Store(0)
	var drifted []string
	for _, gvk := range []schema.GroupVersionKind{deploymentGVK, configMapGVK} {
		live, err := c.List(ctx(t), gvk, ns, sel)
		require.NoError(t, err)
		for _, obj := range live {
			for _, want := range desired {
				if release.RefOf(want) != release.RefOf(obj) {
					continue
				}
				if d := changedFields(want, obj); d != "" {
					drifted = append(drifted, obj.GetKind()+"/"+obj.GetName()+" "+d+" by "+managerOf(obj, d))
				}
			}
		}
	}
	assert.Equal(t, int64(2), lists.Load(), "one list request per kind")
	assert.Equal(t, []string{
		"Deployment/web .spec.replicas by kubectl-scale",
		"ConfigMap/settings .data.mode by kubectl-edit",
	}, drifted)

	// Correction: our manager takes its fields back.
	for _, obj := range desired {
		_, err := c.Apply(ctx(t), obj, release.ApplyOptions{Force: true})
		require.NoError(t, err)
	}
	live, err := c.Get(ctx(t), release.RefOf(desired[1]))
	require.NoError(t, err)
	assert.Equal(t, "", changedFields(desired[1], live))
	assert.Equal(t, "helmfleet", managerOf(live, ".spec.replicas"))
}

// changedFields names the one field the drift test edits, when it differs.
func changedFields(want, live *unstructured.Unstructured) string {
	for _, path := range [][]string{{"spec", "replicas"}, {"data", "mode"}} {
		w, wok, _ := unstructured.NestedFieldNoCopy(want.Object, path...)
		l, _, _ := unstructured.NestedFieldNoCopy(live.Object, path...)
		if wok && w != l {
			return "." + strings.Join(path, ".")
		}
	}
	return ""
}

// managerOf returns the manager that owns path (".a.b") in obj's
// managedFields.
func managerOf(obj *unstructured.Unstructured, path string) string {
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		var cur any = unmarshal(mf.FieldsV1.Raw)
		for _, p := range strings.Split(strings.TrimPrefix(path, "."), ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = m["f:"+p]
		}
		if cur != nil {
			return mf.Manager
		}
	}
	return ""
}

func unmarshal(raw []byte) any {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(append([]byte(`{"kind":"X","apiVersion":"v1","f":`), append(raw, '}')...)); err != nil {
		return nil
	}
	return u.Object["f"]
}

// TestConflicts reports server-side apply conflicts with the owner of the
// field, whether it applied or updated it.
func TestConflicts(t *testing.T) {
	cp := controlPlane(t, "member1")
	c := admin(t, "member1")
	const ns = "conflicts"
	namespace(t, c, ns)
	_, err := c.Apply(ctx(t), deployment(ns, "api", 2, "api"), release.ApplyOptions{FieldManager: "team-a"})
	require.NoError(t, err)

	_, err = c.Apply(ctx(t), deployment(ns, "api", 5, "api"), release.ApplyOptions{FieldManager: "team-b"})
	var ce *release.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []release.FieldConflict{{Manager: "team-a", Path: ".spec.replicas"}}, ce.Conflicts)
	assert.Equal(t, "member1", ce.Cluster)
	assert.Contains(t, err.Error(), `.spec.replicas (owned by "team-a")`)

	// An update (not an apply) by another manager: the server names it
	// "editor" using apps/v1; the error carries the bare name.
	dyn, err := dynamic.NewForConfig(cp.Admin)
	require.NoError(t, err)
	deps := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	live, err := deps.Get(ctx(t), "api", metav1.GetOptions{})
	require.NoError(t, err)
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = "registry.k8s.io/pause:3.9"
	require.NoError(t, unstructured.SetNestedSlice(live.Object, containers, "spec", "template", "spec", "containers"))
	_, err = deps.Update(ctx(t), live, metav1.UpdateOptions{FieldManager: "editor"})
	require.NoError(t, err)

	_, err = c.Apply(ctx(t), deployment(ns, "api", 2, "api"), release.ApplyOptions{FieldManager: "team-a"})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []release.FieldConflict{{Manager: "editor", Path: `.spec.template.spec.containers[name="web"].image`}}, ce.Conflicts)
}

// TestForbidden checks RBAC denials name the cluster, verb and resource.
func TestForbidden(t *testing.T) {
	cp := controlPlane(t, "member1")
	c, err := kube.New(kube.Config{Name: "member1", REST: cp.Unprivileged})
	require.NoError(t, err)
	cmRef := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "default", Name: "x"}
	tests := []struct {
		name     string
		call     func(context.Context) error
		verb     string
		resource string
	}{
		{"get", func(ctx context.Context) error { _, err := c.Get(ctx, cmRef); return err }, "get", "configmaps in namespace default"},
		{"list", func(ctx context.Context) error {
			_, err := c.List(ctx, deploymentGVK, "default", nil)
			return err
		}, "list", "deployments.apps in namespace default"},
		{"list cluster-scoped", func(ctx context.Context) error {
			_, err := c.List(ctx, namespaceGVK, "", nil)
			return err
		}, "list", "namespaces"},
		{"apply", func(ctx context.Context) error {
			_, err := c.Apply(ctx, object(configMapGVK, "default", "x", nil), release.ApplyOptions{})
			return err
		}, "patch", "configmaps in namespace default"},
		{"delete", func(ctx context.Context) error { return c.Delete(ctx, cmRef, release.DeleteOptions{}) }, "delete", "configmaps in namespace default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(ctx(t))
			var fe *release.ForbiddenError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "member1", fe.Cluster)
			assert.Equal(t, tt.verb, fe.Verb)
			assert.Equal(t, tt.resource, fe.Resource)
			assert.Contains(t, err.Error(), kubeUser())
			assert.False(t, errors.Is(err, release.ErrNotFound))
		})
	}
	t.Run("helm", func(t *testing.T) {
		cfg, err := c.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: "default"})
		require.NoError(t, err)
		_, err = action.NewList(cfg).Run()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "forbidden")
	})
}

func kubeUser() string { return `User "helmfleet-nobody"` }

// TestCRD finds a kind whose CRD was created after the mapper's first
// discovery.
func TestCRD(t *testing.T) {
	c := admin(t, "member1")
	widget := schema.GroupVersionKind{Group: "example.helmfleet.io", Version: "v1", Kind: "Widget"}
	// Warm the mapper before the CRD exists.
	_, err := c.List(ctx(t), configMapGVK, "default", nil)
	require.NoError(t, err)
	_, err = c.List(ctx(t), widget, "default", nil)
	require.Error(t, err, "no such kind yet")

	crd := object(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "widgets.example.helmfleet.io", map[string]any{
		"spec": map[string]any{
			"group": "example.helmfleet.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type":                                 "object",
					"x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	})
	_, err = c.Apply(ctx(t), crd, release.ApplyOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := c.Apply(ctx(t), object(widget, "default", "w1", map[string]any{"spec": map[string]any{"size": int64(3)}}), release.ApplyOptions{})
		return err == nil
	}, 30*time.Second, 200*time.Millisecond, "apply a Widget once its CRD is served")
	got, err := c.List(ctx(t), widget, "default", nil)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, "w1", got[0].GetName())
}

// TestIsolation checks each control plane keeps its own objects.
func TestIsolation(t *testing.T) {
	member1, hub := admin(t, "member1"), admin(t, "hub")
	namespace(t, member1, "isolation")
	_, err := hub.Get(ctx(t), release.ObjectRef{GroupVersionKind: namespaceGVK, Name: "isolation"})
	assert.ErrorIs(t, err, release.ErrNotFound)
}

// TestMemberGoesAway stops member2's API server: calls to it fail with an
// error naming it, member1 still answers. It must stay the last test.
func TestMemberGoesAway(t *testing.T) {
	cp := controlPlane(t, "member2")
	require.NoError(t, harness.LogMemory(t.Logf))
	member1, member2 := admin(t, "member1"), admin(t, "member2")
	_, err := member2.List(ctx(t), configMapGVK, "default", nil) // warm its mapper
	require.NoError(t, err)

	start := time.Now()
	require.NoError(t, cp.StopAPIServer())
	t.Logf("member2's API server stopped in %v", time.Since(start).Round(time.Millisecond))

	for _, c := range []*kube.Cluster{member2, admin(t, "member2")} {
		start := time.Now()
		_, err = c.List(ctx(t), configMapGVK, "default", nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cluster member2")
		assert.Contains(t, err.Error(), "connection refused")
		assert.Less(t, time.Since(start), 10*time.Second)
		t.Logf("member2: %v", err)
	}
	_, err = member1.List(ctx(t), configMapGVK, "default", nil)
	assert.NoError(t, err, "member1 still works")

	// A rollout over both members fails only member2's part.
	rolloutWithMemberGone(t, member1, member2)
}
