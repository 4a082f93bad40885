package releasetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Options tune TestCluster.
type Options struct {
	// NamespacePrefix starts the name of every namespace the suite
	// creates; a random suffix follows, so runs do not collide. Empty means
	// "conformance".
	NamespacePrefix string
	// Timeout bounds each check; zero means one minute.
	Timeout time.Duration
	// Engine runs the Helm checks' actions (install, upgrade, rollback,
	// uninstall) on the backend's HelmConfig; nil is Helm v3
	// (reconcile.HelmV3). Every engine must pass on every backend.
	Engine reconcile.Engine
}

// Kinds the suite works with.
var (
	namespaceGVK  = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	configMapGVK  = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	crdGVK        = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
)

// Field managers the suite applies as.
const (
	managerSetup = "releasetest"
	managerA     = "releasetest-a"
	managerB     = "releasetest-b"
)

// TestCluster checks that c behaves as a release.Cluster must, the way a
// real API server with Helm's Secret storage does. Each check is a
// subtest of t. It creates its namespaces through c.Apply first (a real API
// server needs them) and deletes them at the end.
//
// The object checks include what an API server allocates to Services
// (cluster IPs, node ports, kept when an apply leaves them out). A cluster
// that implements release.CapabilitiesReader is checked to report its
// version, the APIs of a current server, and a CRD's API once the CRD is
// created; the check is skipped for one that does not.
//
// The Helm checks install Chart with Helm's action package through
// c.HelmConfig, with Wait off: the backend need not make Deployments ready.
// Every Helm step asks c.HelmConfig for a new configuration, so release
// records must outlive one configuration. A last chart brings a CRD in
// crds/: its templates must see the CRD's API in .Capabilities on the
// first install, as Helm discovers after creating CRDs, and its lookup
// must read the cluster's objects.
func TestCluster(t *testing.T, c release.Cluster, opts ...Options) {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.NamespacePrefix == "" {
		o.NamespacePrefix = "conformance"
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	if o.Engine == nil {
		o.Engine = reconcile.HelmV3{}
	}
	helmCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &suite{c: c, opts: o, id: randomID(t), helmCtx: helmCtx}
	s.objects = o.NamespacePrefix + "-" + s.id + "-a"
	s.objects2 = o.NamespacePrefix + "-" + s.id + "-b"
	s.storage = o.NamespacePrefix + "-" + s.id + "-helm"
	s.apps = o.NamespacePrefix + "-" + s.id + "-apps"

	require.NotEmpty(t, c.Name(), "Name()")
	t.Cleanup(func() { s.deleteNamespaces(t) })
	t.Run("namespaces", s.testNamespaces)
	t.Run("objects", func(t *testing.T) {
		t.Run("apply and get", s.testApplyGet)
		t.Run("list by selector", s.testList)
		t.Run("dry run", s.testDryRun)
		t.Run("delete", s.testDelete)
		t.Run("not found", s.testNotFound)
		t.Run("field ownership", s.testOwnership)
		t.Run("status subresource", s.testStatusSubresource)
		t.Run("services", s.testServices)
		t.Run("cancellation", s.testCancel)
	})
	t.Run("capabilities", s.testCapabilities)
	t.Run("helm", s.testHelm)
	t.Run("helm crds and lookup", s.testHelmCRDs)
}

type suite struct {
	c    release.Cluster
	opts Options
	id   string
	// Namespaces: objects and objects2 for object checks, storage for Helm
	// records, apps for the release's objects.
	objects, objects2, storage, apps string
	// helmCtx bounds Helm's RunWithContext calls and lives as long as the
	// whole suite: Helm v3's Upgrade.RunWithContext leaves a goroutine that
	// selects between the context and its own end, so cancelling the
	// context right after a successful upgrade (as a subtest's context is)
	// may still mark that release failed.
	helmCtx context.Context
}

func randomID(t *testing.T) string {
	b := make([]byte, 3)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), s.opts.Timeout)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) testNamespaces(t *testing.T) {
	ctx := s.ctx(t)
	for _, ns := range []string{s.objects, s.objects2, s.storage, s.apps} {
		obj := newObject(namespaceGVK, "", ns)
		obj.SetLabels(map[string]string{"releasetest/suite": s.id})
		got, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerSetup})
		require.NoError(t, err, "create namespace %s", ns)
		assert.Equal(t, ns, got.GetName())
	}
	got, err := s.c.List(ctx, namespaceGVK, "", labels.SelectorFromSet(labels.Set{"releasetest/suite": s.id}))
	require.NoError(t, err)
	want := []string{s.objects, s.objects2, s.apps, s.storage}
	slices.Sort(want)
	assert.Equal(t, want, names(got))
}

// deleteNamespaces removes the suite's namespaces once every check ran.
func (s *suite) deleteNamespaces(t *testing.T) {
	// t's context is gone by the time cleanups run.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), s.opts.Timeout)
	defer cancel()
	for _, ns := range []string{s.objects, s.objects2, s.storage, s.apps} {
		err := s.c.Delete(ctx, release.ObjectRef{GroupVersionKind: namespaceGVK, Name: ns}, release.DeleteOptions{})
		if err != nil && !errors.Is(err, release.ErrNotFound) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	}
}

func (s *suite) testApplyGet(t *testing.T) {
	ctx := s.ctx(t)
	obj := configMap(s.objects, "applied", map[string]string{"key": "one"})
	obj.SetLabels(map[string]string{"releasetest/check": "apply"})
	applied, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err)
	assert.Equal(t, release.RefOf(obj), release.RefOf(applied), "applied object's reference")
	assert.Equal(t, map[string]string{"key": "one"}, data(t, applied))

	got, err := s.c.Get(ctx, release.RefOf(obj))
	require.NoError(t, err)
	assert.Equal(t, release.RefOf(obj), release.RefOf(got))
	assert.Equal(t, map[string]string{"key": "one"}, data(t, got))
	assert.Equal(t, map[string]string{"releasetest/check": "apply"}, got.GetLabels())

	// Applying the same intent again is a no-op, not a conflict.
	again, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"key": "one"}, data(t, again))

	// The same manager may change its own fields without Force.
	obj = configMap(s.objects, "applied", map[string]string{"key": "two"})
	changed, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"key": "two"}, data(t, changed))
	assert.Empty(t, changed.GetLabels(), "labels the manager no longer applies are removed")
}

func (s *suite) testList(t *testing.T) {
	ctx := s.ctx(t)
	// Applied out of order: List must sort by namespace, then name.
	for _, o := range []struct{ ns, name, group string }{
		{s.objects2, "list-0", "x"},
		{s.objects, "list-c", "x"},
		{s.objects, "list-a", "x"},
		{s.objects, "list-b", "y"},
	} {
		obj := configMap(o.ns, o.name, map[string]string{"group": o.group})
		obj.SetLabels(map[string]string{"releasetest/list": s.id, "group": o.group})
		_, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerA})
		require.NoError(t, err)
	}
	suiteSel := labels.SelectorFromSet(labels.Set{"releasetest/list": s.id})
	groupX, err := labels.Parse("releasetest/list=" + s.id + ",group=x")
	require.NoError(t, err)

	tests := []struct {
		name      string
		namespace string
		selector  labels.Selector
		want      []string
	}{
		{name: "namespace and selector", namespace: s.objects, selector: groupX,
			want: []string{s.objects + "/list-a", s.objects + "/list-c"}},
		{name: "namespace", namespace: s.objects, selector: suiteSel,
			want: []string{s.objects + "/list-a", s.objects + "/list-b", s.objects + "/list-c"}},
		{name: "all namespaces", namespace: "", selector: groupX,
			want: []string{s.objects + "/list-a", s.objects + "/list-c", s.objects2 + "/list-0"}},
		{name: "no match", namespace: s.objects, selector: labels.SelectorFromSet(labels.Set{"releasetest/list": "none"}),
			want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.c.List(ctx, configMapGVK, tt.namespace, tt.selector)
			require.NoError(t, err)
			assert.Equal(t, tt.want, keys(got))
			for _, obj := range got {
				assert.Equal(t, configMapGVK, obj.GroupVersionKind(), "kind of %s", obj.GetName())
			}
		})
	}
	t.Run("nil selector", func(t *testing.T) {
		got, err := s.c.List(ctx, configMapGVK, s.objects2, nil)
		require.NoError(t, err)
		assert.Contains(t, keys(got), s.objects2+"/list-0")
		assert.True(t, slices.IsSorted(keys(got)), "sorted: %v", keys(got))
	})
}

func (s *suite) testDryRun(t *testing.T) {
	ctx := s.ctx(t)
	obj := configMap(s.objects, "dry-run", map[string]string{"key": "stored"})
	_, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err)

	dry := configMap(s.objects, "dry-run", map[string]string{"key": "dry"})
	out, err := s.c.Apply(ctx, dry, release.ApplyOptions{FieldManager: managerA, DryRun: true})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"key": "dry"}, data(t, out), "dry run returns the result")
	got, err := s.c.Get(ctx, release.RefOf(obj))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"key": "stored"}, data(t, got), "dry run stores nothing")

	absent := configMap(s.objects, "dry-run-absent", map[string]string{"key": "dry"})
	_, err = s.c.Apply(ctx, absent, release.ApplyOptions{FieldManager: managerA, DryRun: true})
	require.NoError(t, err)
	_, err = s.c.Get(ctx, release.RefOf(absent))
	assert.ErrorIs(t, err, release.ErrNotFound, "dry run creates nothing")
}

func (s *suite) testDelete(t *testing.T) {
	tests := []struct {
		name string
		opts release.DeleteOptions
	}{
		{name: "default propagation", opts: release.DeleteOptions{}},
		{name: "background", opts: release.DeleteOptions{Propagation: "Background"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := s.ctx(t)
			obj := configMap(s.objects, "delete-"+string(rune('a'+i)), map[string]string{"key": "v"})
			_, err := s.c.Apply(ctx, obj, release.ApplyOptions{FieldManager: managerA})
			require.NoError(t, err)
			ref := release.RefOf(obj)
			require.NoError(t, s.c.Delete(ctx, ref, tt.opts))
			_, err = s.c.Get(ctx, ref)
			assert.ErrorIs(t, err, release.ErrNotFound, "get after delete")
			err = s.c.Delete(ctx, ref, tt.opts)
			assert.ErrorIs(t, err, release.ErrNotFound, "second delete")
		})
	}
}

func (s *suite) testNotFound(t *testing.T) {
	ctx := s.ctx(t)
	refs := []release.ObjectRef{
		{GroupVersionKind: configMapGVK, Namespace: s.objects, Name: "absent"},
		{GroupVersionKind: deploymentGVK, Namespace: s.objects, Name: "absent"},
		{GroupVersionKind: namespaceGVK, Name: s.objects + "-absent"},
	}
	for _, ref := range refs {
		t.Run(ref.Kind, func(t *testing.T) {
			_, err := s.c.Get(ctx, ref)
			require.ErrorIs(t, err, release.ErrNotFound)
			var nf *release.NotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, s.c.Name(), nf.Cluster)
			assert.Equal(t, ref, nf.Object)

			err = s.c.Delete(ctx, ref, release.DeleteOptions{})
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, ref, nf.Object)
		})
	}
}

func (s *suite) testOwnership(t *testing.T) {
	ctx := s.ctx(t)
	ref := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: s.objects, Name: "owned"}
	_, err := s.c.Apply(ctx, configMap(s.objects, "owned", map[string]string{"owned": "a"}), release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err)

	conflicting := configMap(s.objects, "owned", map[string]string{"owned": "b"})
	_, err = s.c.Apply(ctx, conflicting, release.ApplyOptions{FieldManager: managerB})
	requireConflict(t, err, s.c.Name(), ref, managerA, ".data.owned")
	got, err := s.c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"owned": "a"}, data(t, got), "a conflicting apply changes nothing")

	_, err = s.c.Apply(ctx, conflicting, release.ApplyOptions{FieldManager: managerB, Force: true})
	require.NoError(t, err, "forced apply")
	got, err = s.c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"owned": "b"}, data(t, got))

	// B owns the field now: A's apply conflicts with B.
	_, err = s.c.Apply(ctx, configMap(s.objects, "owned", map[string]string{"owned": "a"}), release.ApplyOptions{FieldManager: managerA})
	requireConflict(t, err, s.c.Name(), ref, managerB, ".data.owned")
}

func requireConflict(t *testing.T, err error, cluster string, ref release.ObjectRef, manager, path string) {
	t.Helper()
	var ce *release.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, cluster, ce.Cluster)
	assert.Equal(t, ref, ce.Object)
	assert.Contains(t, ce.Conflicts, release.FieldConflict{Manager: manager, Path: path})
	assert.False(t, errors.Is(err, release.ErrNotFound))
}

func (s *suite) testCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ref := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: s.objects, Name: "applied"}
	calls := []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, err := s.c.Get(ctx, ref); return err }},
		{"list", func() error { _, err := s.c.List(ctx, configMapGVK, s.objects, nil); return err }},
		{"apply", func() error {
			_, err := s.c.Apply(ctx, configMap(s.objects, "cancelled", nil), release.ApplyOptions{FieldManager: managerA})
			return err
		}},
		{"delete", func() error { return s.c.Delete(ctx, ref, release.DeleteOptions{}) }},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			err := tt.call()
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(start), 5*time.Second, "returns promptly")
		})
	}
	_, err := s.c.Get(s.ctx(t), release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: s.objects, Name: "cancelled"})
	assert.ErrorIs(t, err, release.ErrNotFound, "a cancelled apply stores nothing")
}

// gadgetCRD is a CustomResourceDefinition of Gadget in group, with the
// status subresource, as controllers' CRDs (Flux's HelmRelease) have it.
func gadgetCRD(group string) *unstructured.Unstructured {
	crd := newObject(crdGVK, "", "gadgets."+group)
	object := func(props map[string]any) map[string]any {
		return map[string]any{"type": "object", "properties": props}
	}
	crd.Object["spec"] = map[string]any{
		"group": group, "scope": "Namespaced",
		"names": map[string]any{"kind": "Gadget", "listKind": "GadgetList", "plural": "gadgets", "singular": "gadget"},
		"versions": []any{map[string]any{
			"name": "v1", "served": true, "storage": true,
			"subresources": map[string]any{"status": map[string]any{}},
			"schema": map[string]any{"openAPIV3Schema": object(map[string]any{
				"spec":   object(map[string]any{"size": map[string]any{"type": "integer"}}),
				"status": object(map[string]any{"phase": map[string]any{"type": "string"}, "observedGeneration": map[string]any{"type": "integer"}}),
			})},
		}},
	}
	return crd
}

// gadget is a Gadget of size size, with status when it is not nil.
func gadget(gvk schema.GroupVersionKind, namespace, name string, size int64, status map[string]any) *unstructured.Unstructured {
	obj := newObject(gvk, namespace, name)
	obj.Object["spec"] = map[string]any{"size": size}
	if status != nil {
		obj.Object["status"] = status
	}
	return obj
}

// testStatusSubresource checks ApplyOptions.Subresource on a custom kind
// whose CRD enables the status subresource, as an API server serves it:
// an apply to the object leaves status alone, an apply to "status"
// changes only status.
func (s *suite) testStatusSubresource(t *testing.T) {
	ctx := s.ctx(t)
	group := "s" + s.id + ".releasetest.helmfleet.io"
	crd := gadgetCRD(group)
	_, err := s.c.Apply(ctx, crd, release.ApplyOptions{FieldManager: managerSetup})
	require.NoError(t, err, "create CRD")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), s.opts.Timeout)
		defer cancel()
		if err := s.c.Delete(ctx, release.RefOf(crd), release.DeleteOptions{}); err != nil && !errors.Is(err, release.ErrNotFound) {
			t.Errorf("delete CRD %s: %v", crd.GetName(), err)
		}
	})
	gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}
	ref := release.ObjectRef{GroupVersionKind: gvk, Namespace: s.objects, Name: "gadget"}
	status := func(phase string, gen int64) map[string]any {
		return map[string]any{"phase": phase, "observedGeneration": gen}
	}
	toStatus := release.ApplyOptions{FieldManager: managerB, Subresource: release.SubresourceStatus}

	// Created with a status: an API server serves a new kind after a
	// moment, and drops the status.
	var created *unstructured.Unstructured
	for {
		created, err = s.c.Apply(ctx, gadget(gvk, s.objects, "gadget", 1, status("Forged", 7)), release.ApplyOptions{FieldManager: managerA})
		if err == nil || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	require.NoError(t, err, "create a Gadget once its CRD is served")
	assert.NotContains(t, created.Object, "status", "status applied to the object on create")
	assert.Equal(t, int64(1), created.GetGeneration())

	// Status through the subresource: status set, spec and generation kept.
	updated, err := s.c.Apply(ctx, gadget(gvk, s.objects, "gadget", 9, status("Ready", 1)), toStatus)
	require.NoError(t, err, "apply status")
	assert.Equal(t, status("Ready", 1), updated.Object["status"])
	got, err := s.c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, status("Ready", 1), got.Object["status"])
	size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(1), size, "spec sent to the status subresource is ignored")
	assert.Equal(t, int64(1), got.GetGeneration(), "a status write keeps the generation")
	var statusEntry bool
	for _, e := range got.GetManagedFields() {
		if e.Manager == managerB && e.Subresource == release.SubresourceStatus {
			statusEntry = true
			assert.Contains(t, string(e.FieldsV1.Raw), `"f:status"`)
			assert.NotContains(t, string(e.FieldsV1.Raw), `"f:spec"`)
		}
	}
	assert.True(t, statusEntry, "managedFields entry of %s with subresource status: %v", managerB, got.GetManagedFields())

	// The object again, with another status: spec changes, status stays.
	_, err = s.c.Apply(ctx, gadget(gvk, s.objects, "gadget", 2, status("Forged", 7)), release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err, "apply the object")
	got, err = s.c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, status("Ready", 1), got.Object["status"], "status applied to the object")
	size, _, _ = unstructured.NestedInt64(got.Object, "spec", "size")
	assert.Equal(t, int64(2), size)
	assert.Equal(t, int64(2), got.GetGeneration())

	// Status of an absent object: not found, and nothing created.
	absent := release.ObjectRef{GroupVersionKind: gvk, Namespace: s.objects, Name: "gadget-absent"}
	_, err = s.c.Apply(ctx, gadget(gvk, s.objects, absent.Name, 1, status("Ready", 1)), toStatus)
	var nf *release.NotFoundError
	require.ErrorAs(t, err, &nf, "apply status of an absent object")
	assert.Equal(t, s.c.Name(), nf.Cluster)
	assert.Equal(t, absent, nf.Object)
	_, err = s.c.Get(ctx, absent)
	assert.ErrorIs(t, err, release.ErrNotFound, "a status apply creates nothing")

	// A kind without the status subresource has none to write to.
	cm := configMap(s.objects, "no-status", map[string]string{"k": "v"})
	_, err = s.c.Apply(ctx, cm, release.ApplyOptions{FieldManager: managerA})
	require.NoError(t, err)
	_, err = s.c.Apply(ctx, cm, release.ApplyOptions{FieldManager: managerA, Subresource: release.SubresourceStatus})
	require.Error(t, err, "apply status of a ConfigMap")
	assert.NotErrorIs(t, err, release.ErrNotFound)

	// Any other subresource is an error that names it.
	_, err = s.c.Apply(ctx, gadget(gvk, s.objects, "gadget", 1, nil), release.ApplyOptions{FieldManager: managerA, Subresource: "scale"})
	assert.ErrorContains(t, err, `"scale"`)
}

func newObject(gvk schema.GroupVersionKind, namespace, name string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(namespace)
	obj.SetName(name)
	return obj
}

func configMap(namespace, name string, d map[string]string) *unstructured.Unstructured {
	obj := newObject(configMapGVK, namespace, name)
	if d != nil {
		m := make(map[string]any, len(d))
		for k, v := range d {
			m[k] = v
		}
		obj.Object["data"] = m
	}
	return obj
}

func data(t *testing.T, obj *unstructured.Unstructured) map[string]string {
	t.Helper()
	d, _, err := unstructured.NestedStringMap(obj.Object, "data")
	require.NoError(t, err)
	return d
}

func names(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	return out
}

func keys(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

// errReleaseGone says a release has no records left.
var errReleaseGone = driver.ErrReleaseNotFound

func (s *suite) helm(t *testing.T) *action.Configuration {
	t.Helper()
	cfg, err := s.c.HelmConfig(s.ctx(t), release.HelmScope{StorageNamespace: s.storage, Namespace: s.apps})
	require.NoError(t, err)
	return cfg
}

// install installs ch as release name in the apps namespace with the
// suite's engine.
func (s *suite) install(t *testing.T, name string, ch *chart.Chart) error {
	t.Helper()
	return s.opts.Engine.Install(s.helmCtx, s.helm(t), ch, nil, reconcile.InstallOptions{
		WaitOptions: reconcile.WaitOptions{Timeout: s.opts.Timeout}, ReleaseName: name, Namespace: s.apps,
	})
}

// uninstall uninstalls release name with the suite's engine.
func (s *suite) uninstall(t *testing.T, name string) error {
	t.Helper()
	return s.opts.Engine.Uninstall(s.helmCtx, s.helm(t), name, reconcile.UninstallOptions{WaitOptions: reconcile.WaitOptions{Timeout: s.opts.Timeout}})
}

// last is the latest record of release name, as the backend stores it.
func (s *suite) last(t *testing.T, name string) *helmrelease.Release {
	t.Helper()
	rel, err := action.NewGet(s.helm(t)).Run(name)
	require.NoError(t, err)
	return rel
}

func (s *suite) testHelm(t *testing.T) {
	const name = "conformance"
	ch := Chart()
	cmRef := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: s.apps, Name: name + "-config"}
	depRef := release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: s.apps, Name: name + "-web"}
	// message reads the release's ConfigMap through the object client.
	message := func(t *testing.T) string {
		t.Helper()
		obj, err := s.c.Get(s.ctx(t), cmRef)
		require.NoError(t, err)
		return data(t, obj)["message"]
	}
	replicas := func(t *testing.T) int64 {
		t.Helper()
		obj, err := s.c.Get(s.ctx(t), depRef)
		require.NoError(t, err)
		n, _, err := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		require.NoError(t, err)
		return n
	}

	t.Run("install", func(t *testing.T) {
		require.NoError(t, s.install(t, name, ch))
		rel := s.last(t, name)
		assert.Equal(t, 1, rel.Version)
		assert.Equal(t, helmrelease.StatusDeployed, rel.Info.Status)
		assert.Equal(t, "hello", message(t))
		assert.Equal(t, int64(1), replicas(t))
		got, err := s.c.List(s.ctx(t), configMapGVK, s.apps, labels.SelectorFromSet(labels.Set{"app.kubernetes.io/instance": name}))
		require.NoError(t, err)
		assert.Equal(t, []string{s.apps + "/" + name + "-config"}, keys(got))
	})
	t.Run("upgrade", func(t *testing.T) {
		err := s.opts.Engine.Upgrade(s.helmCtx, s.helm(t), name, ch, map[string]any{"message": "upgraded", "replicas": 2},
			reconcile.UpgradeOptions{WaitOptions: reconcile.WaitOptions{Timeout: s.opts.Timeout}, Namespace: s.apps})
		require.NoError(t, err)
		rel := s.last(t, name)
		assert.Equal(t, 2, rel.Version)
		assert.Equal(t, helmrelease.StatusDeployed, rel.Info.Status)
		assert.Equal(t, "upgraded", message(t))
		assert.Equal(t, int64(2), replicas(t))
	})
	t.Run("rollback", func(t *testing.T) {
		require.NoError(t, s.opts.Engine.Rollback(s.helmCtx, s.helm(t), name,
			reconcile.RollbackOptions{WaitOptions: reconcile.WaitOptions{Timeout: s.opts.Timeout}, Version: 1}))
		assert.Equal(t, "hello", message(t))
		assert.Equal(t, int64(1), replicas(t))
	})
	t.Run("history", func(t *testing.T) {
		history, err := action.NewHistory(s.helm(t)).Run(name)
		require.NoError(t, err)
		slices.SortFunc(history, func(a, b *helmrelease.Release) int { return a.Version - b.Version })
		type rev struct {
			Version   int
			Status    helmrelease.Status
			Namespace string
			Message   any
		}
		got := make([]rev, 0, len(history))
		for _, r := range history {
			got = append(got, rev{r.Version, r.Info.Status, r.Namespace, r.Config["message"]})
		}
		assert.Equal(t, []rev{
			{1, helmrelease.StatusSuperseded, s.apps, nil},
			{2, helmrelease.StatusSuperseded, s.apps, "upgraded"},
			{3, helmrelease.StatusDeployed, s.apps, nil},
		}, got)
		assert.Equal(t, 3, s.last(t, name).Version)
	})
	t.Run("uninstall", func(t *testing.T) {
		require.NoError(t, s.uninstall(t, name))
		for _, ref := range []release.ObjectRef{cmRef, depRef} {
			_, err := s.c.Get(s.ctx(t), ref)
			assert.ErrorIs(t, err, release.ErrNotFound, "%s after uninstall", ref)
		}
		_, err := action.NewHistory(s.helm(t)).Run(name)
		assert.ErrorIs(t, err, errReleaseGone, "history after uninstall")
	})
}
