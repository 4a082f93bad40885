package kube

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmkube "helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/helmfleet/helmfleet/release"
)

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	widgetGVK    = schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}
)

// resettingMapper learns the Widget kind only when reset, as a discovery
// mapper learns a CRD created after its first discovery.
type resettingMapper struct {
	*meta.DefaultRESTMapper
	resets int
}

func (m *resettingMapper) Reset() {
	m.resets++
	m.Add(widgetGVK, meta.RESTScopeNamespace)
}

func newMapper() *resettingMapper {
	m := meta.NewDefaultRESTMapper(nil)
	m.Add(configMapGVK, meta.RESTScopeNamespace)
	m.Add(namespaceGVK, meta.RESTScopeRoot)
	return &resettingMapper{DefaultRESTMapper: m}
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": data}}
	u.SetGroupVersionKind(configMapGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

func newFake(t *testing.T, objs ...runtime.Object) (*Cluster, *dynamicfake.FakeDynamicClient, *resettingMapper) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapGVR: "ConfigMapList",
		{Group: "example.io", Version: "v1", Resource: "widgets"}: "WidgetList",
	}, objs...)
	mapper := newMapper()
	c, err := New(Config{Name: "test", REST: &rest.Config{Host: "https://127.0.0.1:1"}, Dynamic: dyn, Mapper: mapper, Kubernetes: kubefake.NewClientset()})
	require.NoError(t, err)
	return c, dyn, mapper
}

func TestNewValidates(t *testing.T) {
	getter := NewRESTConfigGetter(&rest.Config{Host: "https://127.0.0.1:1"}, "")
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{name: "no name", cfg: Config{REST: &rest.Config{}}, field: "Name"},
		{name: "no getter", cfg: Config{Name: "a"}, field: "Getter"},
		{name: "both", cfg: Config{Name: "a", REST: &rest.Config{}, Getter: getter}, field: "REST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			var ce *ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
		})
	}
	c, err := New(Config{Name: "a", Getter: getter})
	require.NoError(t, err)
	assert.Equal(t, "a", c.Name())
	assert.Equal(t, DefaultFieldManager, c.fieldManager)
}

func TestGetList(t *testing.T) {
	objs := []runtime.Object{
		configMap("b", "one", map[string]any{"k": "v"}),
		configMap("a", "two", nil),
		configMap("a", "one", nil),
	}
	for _, o := range objs {
		o.(*unstructured.Unstructured).SetLabels(map[string]string{"app": "x"})
	}
	c, dyn, _ := newFake(t, objs...)
	ctx := t.Context()

	got, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "b", Name: "one"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "v"}, got.Object["data"])

	dyn.ClearActions()
	list, err := c.List(ctx, configMapGVK, "", labels.SelectorFromSet(labels.Set{"app": "x"}))
	require.NoError(t, err)
	var keys []string
	for _, o := range list {
		keys = append(keys, o.GetNamespace()+"/"+o.GetName())
	}
	assert.Equal(t, []string{"a/one", "a/two", "b/one"}, keys)
	require.Len(t, dyn.Actions(), 1, "one list request")
	assert.Equal(t, "app=x", dyn.Actions()[0].(k8stesting.ListAction).GetListRestrictions().Labels.String())

	_, err = c.Get(ctx, release.ObjectRef{GroupVersionKind: configMapGVK, Name: "one"})
	assert.ErrorContains(t, err, "metadata.namespace is empty")
}

func TestNotFound(t *testing.T) {
	c, _, _ := newFake(t)
	ref := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "a", Name: "absent"}
	_, err := c.Get(t.Context(), ref)
	require.ErrorIs(t, err, release.ErrNotFound)
	var nf *release.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, &release.NotFoundError{Cluster: "test", Object: ref}, nf)
	require.ErrorIs(t, c.Delete(t.Context(), ref, release.DeleteOptions{}), release.ErrNotFound)
}

func TestMissingNamespace(t *testing.T) {
	c, dyn, _ := newFake(t)
	dyn.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "a")
	})
	_, err := c.Apply(t.Context(), configMap("a", "x", nil), release.ApplyOptions{FieldManager: "m"})
	var nf *release.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, release.ObjectRef{GroupVersionKind: namespaceGVK, Name: "a"}, nf.Object)
}

func TestApplySendsOptions(t *testing.T) {
	c, dyn, _ := newFake(t)
	var got k8stesting.PatchAction
	dyn.PrependReactor("patch", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		got = a.(k8stesting.PatchAction)
		return true, configMap("a", "x", nil), nil
	})
	obj := configMap("a", "x", map[string]any{"k": "v"})
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "old"}})
	_, err := c.Apply(t.Context(), obj, release.ApplyOptions{Force: true, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, "application/apply-patch+yaml", string(got.GetPatchType()))
	assert.JSONEq(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"a"},"data":{"k":"v"}}`, string(got.GetPatch()))
	opts := got.(k8stesting.PatchActionImpl).PatchOptions
	assert.Equal(t, DefaultFieldManager, opts.FieldManager)
	assert.Equal(t, []string{metav1.DryRunAll}, opts.DryRun)
	require.NotNil(t, opts.Force)
	assert.True(t, *opts.Force)
	assert.Len(t, obj.GetManagedFields(), 1, "the caller's object is left alone")
}

func TestDeletePropagation(t *testing.T) {
	tests := []struct {
		name string
		in   metav1.DeletionPropagation
		want metav1.DeletionPropagation
	}{
		{name: "default", want: metav1.DeletePropagationBackground},
		{name: "foreground", in: metav1.DeletePropagationForeground, want: metav1.DeletePropagationForeground},
		{name: "orphan", in: metav1.DeletePropagationOrphan, want: metav1.DeletePropagationOrphan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, dyn, _ := newFake(t, configMap("a", "x", nil))
			var got metav1.DeleteOptions
			dyn.PrependReactor("delete", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				got = a.(k8stesting.DeleteActionImpl).DeleteOptions
				return false, nil, nil
			})
			require.NoError(t, c.Delete(t.Context(), release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "a", Name: "x"}, release.DeleteOptions{Propagation: tt.in}))
			require.NotNil(t, got.PropagationPolicy)
			assert.Equal(t, tt.want, *got.PropagationPolicy)
		})
	}
}

func TestForbidden(t *testing.T) {
	c, dyn, _ := newFake(t)
	dyn.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: a.GetResource().Resource}, "x", errors.New("RBAC says no"))
	})
	tests := []struct {
		name, verb, resource string
		call                 func(context.Context) error
	}{
		{"get", "get", "configmaps in namespace a", func(ctx context.Context) error {
			_, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "a", Name: "x"})
			return err
		}},
		{"list all namespaces", "list", "configmaps", func(ctx context.Context) error {
			_, err := c.List(ctx, configMapGVK, "", nil)
			return err
		}},
		{"apply cluster-scoped", "patch", "namespaces", func(ctx context.Context) error {
			ns := &unstructured.Unstructured{}
			ns.SetGroupVersionKind(namespaceGVK)
			ns.SetName("a")
			ns.SetNamespace("ignored")
			_, err := c.Apply(ctx, ns, release.ApplyOptions{})
			return err
		}},
		{"delete", "delete", "configmaps in namespace a", func(ctx context.Context) error {
			return c.Delete(ctx, release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "a", Name: "x"}, release.DeleteOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context())
			var fe *release.ForbiddenError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "test", fe.Cluster)
			assert.Equal(t, tt.verb, fe.Verb)
			assert.Equal(t, tt.resource, fe.Resource)
			assert.True(t, apierrors.IsForbidden(err), "the API error stays reachable")
		})
	}
}

func conflictStatus(causes ...metav1.StatusCause) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 409, Reason: metav1.StatusReasonConflict,
		Message: "Apply failed with conflicts",
		Details: &metav1.StatusDetails{Name: "x", Kind: "configmaps", Causes: causes},
	}}
}

func TestConflict(t *testing.T) {
	c, dyn, _ := newFake(t)
	dyn.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, conflictStatus(
			metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "kubectl" using v1`, Field: ".data.b"},
			metav1.StatusCause{Type: metav1.CauseTypeFieldManagerConflict, Message: `conflict with "team-a"`, Field: ".data.a"},
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Message: "unrelated", Field: ".data.c"},
		)
	})
	obj := configMap("a", "x", map[string]any{"a": "1", "b": "2"})
	_, err := c.Apply(t.Context(), obj, release.ApplyOptions{FieldManager: "me"})
	var ce *release.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "test", ce.Cluster)
	assert.Equal(t, release.RefOf(obj), ce.Object)
	assert.Equal(t, []release.FieldConflict{{Manager: "team-a", Path: ".data.a"}, {Manager: "kubectl", Path: ".data.b"}}, ce.Conflicts)
	assert.True(t, apierrors.IsConflict(err))
}

func TestConflictWithoutCausesIsPlain(t *testing.T) {
	c, dyn, _ := newFake(t)
	dyn.PrependReactor("patch", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, conflictStatus()
	})
	_, err := c.Apply(t.Context(), configMap("a", "x", nil), release.ApplyOptions{})
	var ce *release.ConflictError
	assert.False(t, errors.As(err, &ce))
	assert.ErrorContains(t, err, "cluster test: patch v1 ConfigMap a/x")
}

func TestConflictManager(t *testing.T) {
	tests := []struct{ msg, want string }{
		{`conflict with "team-a"`, "team-a"},
		{`conflict with "kubectl" using apps/v1`, "kubectl"},
		{`conflict with "kubectl" using apps/v1 at 2026-01-01T00:00:00Z`, "kubectl"},
		{`conflict with "ctrl" with subresource "status"`, "ctrl"},
		{`conflict with "with \"quote\""`, `with "quote"`},
		{`conflict with unquoted`, "unquoted"},
		{`something else`, "something else"},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			assert.Equal(t, tt.want, conflictManager(tt.msg))
		})
	}
}

func FuzzConflictManager(f *testing.F) {
	f.Add("team-a", " using v1")
	f.Add(`we"ird`, "")
	f.Fuzz(func(t *testing.T, manager, suffix string) {
		msg := fmt.Sprintf("conflict with %q%s", manager, suffix)
		if got := conflictManager(msg); got != manager {
			t.Errorf("conflictManager(%q) = %q, want %q", msg, got, manager)
		}
		_ = conflictManager(manager + suffix) // any input: no panic
	})
}

func TestMapperResetOnNoMatch(t *testing.T) {
	c, _, mapper := newFake(t)
	_, err := c.List(t.Context(), widgetGVK, "a", nil)
	require.NoError(t, err)
	assert.Equal(t, 1, mapper.resets)
	_, err = c.List(t.Context(), schema.GroupVersionKind{Group: "nope.io", Version: "v1", Kind: "Nope"}, "a", nil)
	assert.True(t, meta.IsNoMatchError(err), "%v", err)
	assert.ErrorContains(t, err, "cluster test: list nope.io/v1 Nope in namespace a")
	assert.Equal(t, 2, mapper.resets)
}

func TestCancelled(t *testing.T) {
	c, dyn, _ := newFake(t, configMap("a", "x", nil))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ref := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "a", Name: "x"}
	_, err := c.Get(ctx, ref)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.List(ctx, configMapGVK, "a", nil)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = c.Apply(ctx, configMap("a", "x", nil), release.ApplyOptions{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, c.Delete(ctx, ref, release.DeleteOptions{}), context.Canceled)
	_, err = c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "a"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Empty(t, dyn.Actions(), "nothing reaches the server")
}

func TestHelmConfig(t *testing.T) {
	clientset := kubefake.NewClientset()
	var logged []string
	c, err := New(Config{
		Name:       "test",
		REST:       &rest.Config{Host: "https://127.0.0.1:1"},
		Kubernetes: clientset,
		Log:        func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) },
	})
	require.NoError(t, err)
	_, err = c.HelmConfig(t.Context(), release.HelmScope{Namespace: "apps"})
	assert.ErrorContains(t, err, "StorageNamespace is empty")

	cfg, err := c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "store", Namespace: "apps"})
	require.NoError(t, err)
	assert.Equal(t, "apps", cfg.KubeClient.(*helmkube.Client).Namespace)
	rel := &helmrelease.Release{Name: "web", Namespace: "apps", Version: 1, Info: &helmrelease.Info{Status: helmrelease.StatusDeployed}}
	require.NoError(t, cfg.Releases.Create(rel))
	secret, err := clientset.CoreV1().Secrets("store").Get(t.Context(), "sh.helm.release.v1.web.v1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "helm", secret.Labels["owner"])
	assert.NotEmpty(t, logged, "Helm's debug output reaches Config.Log")

	cfg, err = c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "store"})
	require.NoError(t, err)
	assert.Equal(t, "store", cfg.KubeClient.(*helmkube.Client).Namespace, "namespace defaults to the storage namespace")
}

func TestRESTConfigGetter(t *testing.T) {
	g := NewRESTConfigGetter(&rest.Config{Host: "https://127.0.0.1:1", BearerToken: "t"}, "apps")
	ns, explicit, err := g.ToRawKubeConfigLoader().Namespace()
	require.NoError(t, err)
	assert.Equal(t, "apps", ns)
	assert.True(t, explicit)
	raw, err := g.ToRawKubeConfigLoader().RawConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:1", raw.Clusters[raw.CurrentContext].Server)
	cfg, err := g.ToRESTConfig()
	require.NoError(t, err)
	cfg.Host = "changed"
	again, err := g.ToRESTConfig()
	require.NoError(t, err)
	assert.Equal(t, "https://127.0.0.1:1", again.Host, "callers get copies")
	d1, err := g.ToDiscoveryClient()
	require.NoError(t, err)
	d2, err := g.ToDiscoveryClient()
	require.NoError(t, err)
	assert.Same(t, d1, d2, "one discovery cache shared by all callers")
	_, err = g.ToRESTMapper()
	require.NoError(t, err)

	ns, _, err = NewRESTConfigGetter(&rest.Config{}, "").ToRawKubeConfigLoader().Namespace()
	require.NoError(t, err)
	assert.Equal(t, "default", ns)
}
