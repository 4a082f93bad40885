package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
)

var cmGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func unstructuredCM(ns, name string, lbls map[string]string, data map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"data": data}}
	u.SetGroupVersionKind(cmGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(lbls)
	return u
}

// ObjectClient over a controller-runtime client keeps release.ObjectClient's
// contract: typed NotFound, server-side apply as the named field manager
// with conflicts as *release.ConflictError, sorted lists by selector.
func TestObjectClientContract(t *testing.T) {
	ctx := t.Context()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "x", Labels: map[string]string{"app": "web"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "z", Labels: map[string]string{"app": "web"}}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "other"}},
	).Build()
	oc := ObjectClient("hub", c)
	absent := release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "a", Name: "absent"}

	_, err := oc.Get(ctx, absent)
	var nf *release.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, release.NotFoundError{Cluster: "hub", Object: absent}, *nf)
	assert.ErrorIs(t, oc.Delete(ctx, absent, release.DeleteOptions{}), release.ErrNotFound)

	got, err := oc.Apply(ctx, unstructuredCM("a", "applied", nil, map[string]any{"k": "1"}), release.ApplyOptions{FieldManager: "team-a"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "1"}, got.Object["data"], "the object as stored")
	_, err = oc.Apply(ctx, unstructuredCM("a", "applied", nil, map[string]any{"k": "2"}), release.ApplyOptions{FieldManager: "team-b"})
	var conflict *release.ConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, []release.FieldConflict{{Manager: "team-a", Path: ".data.k"}}, conflict.Conflicts)
	_, err = oc.Apply(ctx, unstructuredCM("a", "applied", nil, map[string]any{"k": "2"}), release.ApplyOptions{FieldManager: "team-b", Force: true})
	require.NoError(t, err)
	live, err := oc.Get(ctx, release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "a", Name: "applied"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "2"}, live.Object["data"])

	list, err := oc.List(ctx, cmGVK, "", labels.SelectorFromSet(labels.Set{"app": "web"}))
	require.NoError(t, err)
	var names []string
	for _, u := range list {
		names = append(names, u.GetNamespace()+"/"+u.GetName()+" "+u.GetKind())
	}
	assert.Equal(t, []string{"a/z ConfigMap", "b/x ConfigMap"}, names, "by selector, sorted by namespace and name")

	require.NoError(t, oc.Delete(ctx, release.RefOf(live), release.DeleteOptions{}))
	_, err = oc.Get(ctx, release.RefOf(live))
	assert.ErrorIs(t, err, release.ErrNotFound, "deleted")
}

// A call on a cancelled context fails with its error and changes nothing.
func TestObjectClientHonoursContext(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	oc := ObjectClient("hub", c)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := oc.Apply(ctx, unstructuredCM("a", "cancelled", nil, map[string]any{"k": "1"}), release.ApplyOptions{FieldManager: "team-a"})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = oc.List(ctx, cmGVK, "a", nil)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = oc.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "a", Name: "cancelled"})
	assert.ErrorIs(t, err, release.ErrNotFound, "a cancelled apply stores nothing")
}

// fleet.NewObjectStore works over the manager's client through
// ObjectClient: an inventory is saved as Secrets on the hub, loaded back,
// and deleting an absent entry is not an error (NotFound is mapped).
func TestObjectStoreOverManagerClient(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).Build()
	store, err := fleet.NewObjectStore(ObjectClient("hub", c), fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "fleet"})
	require.NoError(t, err)
	rel := hr(t, podinfoYAML)
	key := fleet.Key{Cluster: "dev-1", Namespace: rel.Namespace, Name: rel.Name}
	require.NoError(t, store.Save(t.Context(), fleet.Entry{Key: key, Release: rel}))
	entries, err := store.Load(t.Context())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, key, entries[0].Key)
	require.NoError(t, store.Delete(t.Context(), key))
	require.NoError(t, store.Delete(t.Context(), key), "an absent entry")
	entries, err = store.Load(t.Context())
	require.NoError(t, err)
	assert.Empty(t, entries)
}
