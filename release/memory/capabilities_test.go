package memory_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

func object(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		obj.Object[k] = v
	}
	obj.SetAPIVersion(apiVersion)
	obj.SetKind(kind)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

// widgetCRD is a CRD of Widget in group with one version per entry of
// served (name: served).
func widgetCRD(group string, served map[string]bool) *unstructured.Unstructured {
	var versions []any
	for _, v := range []string{"v1", "v1beta1", "v2"} {
		s, ok := served[v]
		if !ok {
			continue
		}
		versions = append(versions, map[string]any{
			"name": v, "served": s, "storage": v == "v1",
			"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
		})
	}
	return object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "", "widgets."+group, map[string]any{"spec": map[string]any{
		"group": group, "scope": "Namespaced",
		"names":    map[string]any{"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": []any{"wd"}},
		"versions": versions,
	}})
}

var applyOpts = release.ApplyOptions{FieldManager: "test"}

// By default the cluster runs the Kubernetes release of its libraries and
// serves what an API server of that release serves by default: GA
// versions only, no removed or beta API, no subresource kinds.
func TestCapabilitiesDefault(t *testing.T) {
	caps, err := memory.New("c", memory.WithKubeVersion("")).Capabilities(t.Context())
	require.NoError(t, err)
	assert.Equal(t, memory.DefaultKubeVersion(), caps.KubeVersion.Version, "an empty WithKubeVersion keeps the default")
	assert.Equal(t, "1", caps.KubeVersion.Major)
	assert.True(t, slices.IsSorted(caps.APIVersions), "sorted")
	for _, want := range []string{"v1", "v1/Pod", "v1/Service", "apps/v1", "apps/v1/Deployment", "autoscaling/v2",
		"autoscaling/v2/HorizontalPodAutoscaler", "policy/v1/PodDisruptionBudget", "networking.k8s.io/v1/IngressClass",
		"apiextensions.k8s.io/v1/CustomResourceDefinition", "apiregistration.k8s.io/v1/APIService"} {
		assert.True(t, caps.APIVersions.Has(want), "serves %s", want)
	}
	for _, not := range []string{"extensions/v1beta1", "policy/v1beta1", "batch/v1beta1/CronJob", "autoscaling/v2beta2",
		"admissionregistration.k8s.io/v1beta1", "apiextensions.k8s.io/v1beta1", "autoscaling/v1/Scale", "v1/PodStatusResult"} {
		assert.False(t, caps.APIVersions.Has(not), "serves %s", not)
	}
}

// Objects of versions the cluster does not serve are refused, as by a
// current API server.
func TestUnservedVersionsRefused(t *testing.T) {
	c := memory.New("c")
	for _, obj := range []*unstructured.Unstructured{
		object("policy/v1beta1", "PodDisruptionBudget", "apps", "pdb", nil),
		object("extensions/v1beta1", "Ingress", "apps", "web", nil),
		object("autoscaling/v2beta2", "HorizontalPodAutoscaler", "apps", "web", nil),
	} {
		_, err := c.Apply(t.Context(), obj, applyOpts)
		assert.Error(t, err, obj.GetAPIVersion())
	}
	_, err := c.Apply(t.Context(), object("policy/v1", "PodDisruptionBudget", "apps", "pdb", nil), applyOpts)
	assert.NoError(t, err)
}

// A CRD's served versions are served as soon as it is stored, and no
// longer once it is deleted; a version with served false never is.
func TestCapabilitiesFollowCRDs(t *testing.T) {
	ctx := t.Context()
	c := memory.New("c")
	crd := widgetCRD("example.com", map[string]bool{"v1": true, "v1beta1": false})
	_, err := c.Apply(ctx, crd, applyOpts)
	require.NoError(t, err)
	caps, err := c.Capabilities(ctx)
	require.NoError(t, err)
	assert.True(t, caps.APIVersions.Has("example.com/v1"))
	assert.True(t, caps.APIVersions.Has("example.com/v1/Widget"))
	assert.False(t, caps.APIVersions.Has("example.com/v1beta1"), "a version that is not served")
	_, err = c.Apply(ctx, object("example.com/v1beta1", "Widget", "apps", "w", nil), applyOpts)
	assert.Error(t, err, "a Widget of a version that is not served")

	// The CRD serves v2 now, and v1 no more.
	_, err = c.Apply(ctx, widgetCRD("example.com", map[string]bool{"v1": false, "v2": true}), applyOpts)
	require.NoError(t, err)
	caps, err = c.Capabilities(ctx)
	require.NoError(t, err)
	assert.True(t, caps.APIVersions.Has("example.com/v2/Widget"))
	assert.False(t, caps.APIVersions.Has("example.com/v1"))

	require.NoError(t, c.Delete(ctx, release.RefOf(crd), release.DeleteOptions{}))
	caps, err = c.Capabilities(ctx)
	require.NoError(t, err)
	assert.False(t, caps.APIVersions.Has("example.com/v2"))
}

// Helm's own actions discover exactly what Capabilities says, at each
// moment: the configuration leaves Capabilities to discovery, whose
// answers are never stale.
func TestHelmDiscoversCapabilities(t *testing.T) {
	ctx := t.Context()
	c := memory.New("c", memory.WithKubeVersion("v1.31.2"), memory.WithAPIVersions("monitoring.coreos.com/v1/ServiceMonitor"))
	cfg := helmConfig(t, c)
	assert.Nil(t, cfg.Capabilities, "left to discovery")
	require.NotNil(t, cfg.RESTClientGetter)
	dc, err := cfg.RESTClientGetter.ToDiscoveryClient()
	require.NoError(t, err)

	check := func(t *testing.T) {
		t.Helper()
		caps, err := c.Capabilities(ctx)
		require.NoError(t, err)
		set, err := action.GetVersionSet(dc)
		require.NoError(t, err)
		slices.Sort(set)
		assert.Equal(t, caps.APIVersions, set)
	}
	check(t)
	_, err = c.Apply(ctx, widgetCRD("example.com", map[string]bool{"v1": true}), applyOpts)
	require.NoError(t, err)
	check(t)
	assert.True(t, dc.Fresh())

	v, err := dc.ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.31.2", v.GitVersion)
	assert.Equal(t, "31", v.Minor)

	mapper, err := cfg.RESTClientGetter.ToRESTMapper()
	require.NoError(t, err)
	m, err := mapper.RESTMapping(schema.GroupKind{Group: "example.com", Kind: "Widget"})
	require.NoError(t, err)
	assert.Equal(t, schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, m.Resource)
	assert.Equal(t, "namespace", string(m.Scope.Name()))
	_, err = dc.OpenAPISchema()
	assert.ErrorContains(t, err, "no OpenAPI")
}

// WithAPIVersions adds API versions to what charts see, in plans and in
// Helm's actions, without making their kinds storable.
func TestWithAPIVersions(t *testing.T) {
	c := memory.New("c", memory.WithAPIVersions("monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "v1/Widget", "v2"))
	caps, err := c.Capabilities(t.Context())
	require.NoError(t, err)
	for _, want := range []string{"monitoring.coreos.com/v1", "monitoring.coreos.com/v1/ServiceMonitor", "v1/Widget", "v2"} {
		assert.True(t, caps.APIVersions.Has(want), want)
	}
	_, err = c.Apply(t.Context(), object("monitoring.coreos.com/v1", "ServiceMonitor", "apps", "web", nil), applyOpts)
	assert.Error(t, err, "no CRD, no object")
}

// A version or API version that does not parse fails every call that
// would show it, naming the cluster and the value.
func TestBadVersionsAreErrors(t *testing.T) {
	tests := []struct {
		name string
		opt  memory.Option
		want string
	}{
		{name: "kube version", opt: memory.WithKubeVersion("one point two"), want: `"one point two"`},
		{name: "empty part", opt: memory.WithAPIVersions("apps//Deployment"), want: `"apps//Deployment"`},
		{name: "too many parts", opt: memory.WithAPIVersions("a/b/c/d"), want: `"a/b/c/d"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := memory.New("bad", tt.opt)
			_, err := c.Capabilities(t.Context())
			assert.ErrorContains(t, err, "cluster bad")
			assert.ErrorContains(t, err, tt.want)
			_, err = c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "apps"})
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// The REST config Helm's actions get (lookup reads through it) serves the
// stored objects, with their simulated status, and refuses what it does
// not serve with the status an API server would give.
func TestRESTConfigServesReads(t *testing.T) {
	ctx := t.Context()
	c := memory.New("c")
	for _, name := range []string{"a", "b"} {
		cm := object("v1", "ConfigMap", "apps", name, map[string]any{"data": map[string]any{"key": name}})
		cm.SetLabels(map[string]string{"pick": name})
		_, err := c.Apply(ctx, cm, applyOpts)
		require.NoError(t, err)
	}
	_, err := c.Apply(ctx, object("apps/v1", "Deployment", "apps", "web", map[string]any{"spec": map[string]any{"replicas": int64(2)}}), applyOpts)
	require.NoError(t, err)
	rc, err := helmConfig(t, c).RESTClientGetter.ToRESTConfig()
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(rc)
	require.NoError(t, err)
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("apps")

	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"key": "a"}, got.Object["data"])
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "pick=b"})
	require.NoError(t, err)
	require.Len(t, list.Items, 1)
	assert.Equal(t, "b", list.Items[0].GetName())
	dep, err := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace("apps").Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	ready, _, _ := unstructured.NestedInt64(dep.Object, "status", "readyReplicas")
	assert.Equal(t, int64(2), ready, "the status the simulated controller writes")

	_, err = cms.Get(ctx, "absent", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	_, err = dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Get(ctx, "w", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "a resource not served: %v", err)
	_, err = cms.Create(ctx, object("v1", "ConfigMap", "apps", "c", nil), metav1.CreateOptions{})
	assert.True(t, apierrors.IsMethodNotSupported(err), "writes: %v", err)
	_, err = cms.Watch(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsMethodNotSupported(err), "watches: %v", err)
	_, err = cms.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=a"})
	assert.True(t, apierrors.IsBadRequest(err), "field selectors: %v", err)
	_, err = cms.Get(ctx, "a", metav1.GetOptions{}, "status")
	assert.True(t, apierrors.IsNotFound(err), "subresources: %v", err)

	// client-go's own discovery over the HTTP API sees what Capabilities
	// says.
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	require.NoError(t, err)
	set, err := action.GetVersionSet(dc)
	require.NoError(t, err)
	slices.Sort(set)
	caps, err := c.Capabilities(ctx)
	require.NoError(t, err)
	assert.Equal(t, caps.APIVersions, set)
	group, err := dc.RESTClient().Get().AbsPath("/apis/apps").Do(ctx).Raw()
	require.NoError(t, err)
	assert.JSONEq(t, `{"kind":"APIGroup","apiVersion":"v1","name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}`, string(group))

	boom := errors.New("boom")
	c.SetFaults(func(op memory.Operation, ref release.ObjectRef) error {
		if op == memory.OpHelmGet && ref.Kind == "ConfigMap" && ref.Name == "a" {
			return boom
		}
		return nil
	})
	_, err = cms.Get(ctx, "a", metav1.GetOptions{})
	assert.ErrorIs(t, err, boom, "a fault fails the read")
	c.SetFaults(nil)
	c.SetUnreachable(errors.New("network down"))
	_, err = cms.Get(ctx, "a", metav1.GetOptions{})
	assert.ErrorContains(t, err, "network down")
}

// A ready APIService is Available, as the aggregator reports it.
func TestAPIServiceStatus(t *testing.T) {
	c := memory.New("c")
	_, err := c.Apply(t.Context(), object("apiregistration.k8s.io/v1", "APIService", "", "v1beta1.metrics.k8s.io", map[string]any{"spec": map[string]any{"group": "metrics.k8s.io", "version": "v1beta1"}}), applyOpts)
	require.NoError(t, err)
	ref := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, Name: "v1beta1.metrics.k8s.io"}
	got, err := c.Get(context.Background(), ref)
	require.NoError(t, err)
	conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	require.Len(t, conds, 1)
	assert.Equal(t, "True", conds[0].(map[string]any)["status"])

	c.SetHealth(func(*unstructured.Unstructured) memory.Health { return memory.Health{Message: "service unavailable"} })
	got, err = c.Get(context.Background(), ref)
	require.NoError(t, err)
	conds, _, _ = unstructured.NestedSlice(got.Object, "status", "conditions")
	assert.Equal(t, "False", conds[0].(map[string]any)["status"])
}

// Clusters that share a Schemas each show their own kinds and
// WithAPIVersions, whatever the others store or a caller does with
// what it was given.
func TestCapabilitiesSharedSchemas(t *testing.T) {
	ctx := t.Context()
	shared := memory.NewSchemas()
	a, b := memory.New("a", memory.WithSchemas(shared)), memory.New("b", memory.WithSchemas(shared))
	extra := memory.New("x", memory.WithSchemas(shared), memory.WithAPIVersions("extra.example.com/v1"))
	before, err := a.Capabilities(ctx)
	require.NoError(t, err)
	before.APIVersions[0] = "tampered/v1" // a caller's copy
	_, err = b.Apply(ctx, widgetCRD("example.com", map[string]bool{"v1": true}), applyOpts)
	require.NoError(t, err)

	capsA, err := a.Capabilities(ctx)
	require.NoError(t, err)
	capsB, err := b.Capabilities(ctx)
	require.NoError(t, err)
	capsX, err := extra.Capabilities(ctx)
	require.NoError(t, err)
	assert.False(t, capsA.APIVersions.Has("tampered/v1"), "a caller's change to its copy")
	assert.False(t, capsA.APIVersions.Has("example.com/v1/Widget"), "the CRD of another cluster")
	assert.True(t, capsB.APIVersions.Has("example.com/v1/Widget"))
	assert.True(t, capsX.APIVersions.Has("extra.example.com/v1"))
	assert.False(t, capsA.APIVersions.Has("extra.example.com/v1"), "the API versions of another cluster")
	assert.Len(t, capsX.APIVersions, len(capsA.APIVersions)+1)
}
