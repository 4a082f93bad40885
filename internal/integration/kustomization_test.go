package integration

import (
	"context"
	"io/fs"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// ksSource is a source tree the test changes between reconciles.
type ksSource struct {
	mu   sync.Mutex
	fsys fstest.MapFS
	rev  string
}

func (s *ksSource) set(rev string, fsys fstest.MapFS) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fsys, s.rev = fsys, rev
}

func (s *ksSource) FS(context.Context, *release.Kustomization) (fs.FS, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fsys, s.rev, nil
}

// ksTree is a Namespace, a CRD, a custom resource of it and the named
// ConfigMaps, the custom resource listed first.
func ksTree(ns string, cms ...string) fstest.MapFS {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	m := fstest.MapFS{
		"deploy/ns.yaml": file("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n"),
		"deploy/crd.yaml": file(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.ks.helmfleet.example
spec:
  group: ks.helmfleet.example
  names: {kind: Gadget, listKind: GadgetList, plural: gadgets, singular: gadget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
`),
		"deploy/gadget.yaml": file("apiVersion: ks.helmfleet.example/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: " + ns + "\nspec:\n  size: ${size:=1}\n"),
	}
	res := []string{"gadget.yaml"}
	for _, c := range cms {
		m["deploy/"+c+".yaml"] = file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + c + "\n  namespace: " + ns + "\ndata:\n  cluster: ${cluster}\n")
		res = append(res, c+".yaml")
	}
	res = append(res, "ns.yaml", "crd.yaml")
	m["deploy/kustomization.yaml"] = file("resources: [" + strings.Join(res, ", ") + "]\n")
	return m
}

// TestKustomizationOnAPIServer reconciles a Flux Kustomization on a real
// kube-apiserver: the CRD and Namespace are applied first and waited for
// (Established, Active), the custom resource of the CRD after them, all
// are healthy by kstatus (no Deployment: nothing needs controllers);
// substitution fills the variables; an object that leaves the tree is
// pruned; a plan then shows nothing to do; a build error leaves the
// cluster untouched; Delete removes what the Kustomization applied.
func TestKustomizationOnAPIServer(t *testing.T) {
	c := admin(t, "member1")
	const ns = "ks-int"
	src := &ksSource{}
	src.set("main@sha1:1", ksTree(ns, "a", "b"))
	r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{Sources: src, PollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	k := &release.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "ks-int", Namespace: "flux-system", Generation: 1},
		Spec: release.KustomizationSpec{
			Interval:  metav1.Duration{Duration: 5 * time.Minute},
			Path:      "./deploy",
			Prune:     true,
			Wait:      true,
			SourceRef: release.KustomizationSourceReference{Kind: "GitRepository", Name: "fleet"},
			PostBuild: &release.PostBuild{Substitute: map[string]string{"cluster": "member1"}},
		},
	}
	k.Default()
	cmRef := func(name string) release.ObjectRef {
		return release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: ns, Name: name}
	}
	gadget := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "ks.helmfleet.example", Version: "v1", Kind: "Gadget"}, Namespace: ns, Name: "g"}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		k.Spec.Suspend = false
		_ = r.Delete(cctx, c, k)
	})

	// An unset variable: nothing is applied.
	src.set("main@sha1:0", ksTree(ns, "a"))
	bad := k.DeepCopy()
	bad.Spec.PostBuild = &release.PostBuild{Substitute: map[string]string{"other": "x"}}
	_, err = r.Reconcile(ctx(t), c, bad)
	require.ErrorContains(t, err, `deploy/a.yaml: ConfigMap ks-int/a: variable "cluster" is not set`)
	_, err = c.Get(ctx(t), release.ObjectRef{GroupVersionKind: namespaceGVK, Name: ns})
	assert.ErrorIs(t, err, release.ErrNotFound, "the cluster is untouched")

	src.set("main@sha1:1", ksTree(ns, "a", "b"))
	res, err := r.Reconcile(ctx(t), c, k)
	require.NoError(t, err)
	var order []string
	for _, a := range res.Applied {
		order = append(order, a.Object.Kind+"/"+a.Object.Name)
	}
	assert.Equal(t, []string{"Namespace/ks-int", "CustomResourceDefinition/gadgets.ks.helmfleet.example", "Gadget/g", "ConfigMap/a", "ConfigMap/b"}, order)
	assert.True(t, k.IsReady(), "%+v", k.Status.Conditions)
	assert.True(t, k.Status.IsConditionTrue(release.ConditionHealthy))
	require.NotNil(t, k.Status.Inventory)
	assert.Len(t, k.Status.Inventory.Entries, 5)
	live, err := c.Get(ctx(t), cmRef("a"))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"cluster": "member1"}, live.Object["data"])
	assert.Equal(t, "ks-int", live.GetLabels()[kustomize.NameLabel])
	assert.Equal(t, "flux-system", live.GetLabels()[kustomize.NamespaceLabel])
	g, err := c.Get(ctx(t), gadget)
	require.NoError(t, err)
	assert.EqualValues(t, 1, g.Object["spec"].(map[string]any)["size"])

	// b leaves the tree: pruned; the plan is then empty.
	src.set("main@sha1:2", ksTree(ns, "a"))
	res, err = r.Reconcile(ctx(t), c, k)
	require.NoError(t, err)
	assert.Equal(t, []release.ObjectRef{cmRef("b")}, res.Pruned)
	_, err = c.Get(ctx(t), cmRef("b"))
	assert.ErrorIs(t, err, release.ErrNotFound)
	assert.Len(t, k.Status.Inventory.Entries, 4)
	p, err := r.Plan(ctx(t), c, k)
	require.NoError(t, err)
	assert.False(t, p.Changed(), "%+v", p.Objects)

	// A changed value is planned as an update, then applied.
	k.Spec.PostBuild.Substitute["size"] = "3"
	p, err = r.Plan(ctx(t), c, k)
	require.NoError(t, err)
	assert.True(t, p.Changed())
	for _, o := range p.Objects {
		if o.Object.Kind == "Gadget" {
			assert.Equal(t, kustomize.PlanUpdate, o.Action)
			assert.Contains(t, o.Diff, "-  size: 1\n+  size: 3")
		}
	}
	_, err = r.Reconcile(ctx(t), c, k)
	require.NoError(t, err)
	g, err = c.Get(ctx(t), gadget)
	require.NoError(t, err)
	assert.EqualValues(t, 3, g.Object["spec"].(map[string]any)["size"])

	// Delete removes the objects (the Namespace is left Terminating or
	// gone: no namespace controller runs here).
	require.NoError(t, r.Delete(ctx(t), c, k))
	_, err = c.Get(ctx(t), cmRef("a"))
	assert.ErrorIs(t, err, release.ErrNotFound)
	if nsObj, err := c.Get(ctx(t), release.ObjectRef{GroupVersionKind: namespaceGVK, Name: ns}); err == nil {
		assert.NotNil(t, nsObj.GetDeletionTimestamp(), "the Namespace is being deleted")
	}
	assert.Nil(t, k.Status.Inventory)
}

// TestKustomizationForceOnAPIServer: the API server refuses to change an
// immutable ConfigMap; without spec.force the reconcile fails naming the
// object, with it the ConfigMap is deleted and created anew.
func TestKustomizationForceOnAPIServer(t *testing.T) {
	c := admin(t, "member1")
	const ns = "ks-force"
	namespace(t, c, ns)
	tree := func(value string) fstest.MapFS {
		return fstest.MapFS{
			"kustomization.yaml": {Data: []byte("resources: [cm.yaml]\n")},
			"cm.yaml":            {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\n  namespace: " + ns + "\nimmutable: true\ndata:\n  k: " + value + "\n")},
		}
	}
	src := &ksSource{}
	src.set("1", tree("one"))
	r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{Sources: src, PollInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	k := &release.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "ks-force", Namespace: "flux-system"},
		Spec: release.KustomizationSpec{
			Interval: metav1.Duration{Duration: 5 * time.Minute}, Prune: true,
			SourceRef: release.KustomizationSourceReference{Kind: "GitRepository", Name: "fleet"},
		},
	}
	k.Default()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.Delete(cctx, c, k)
	})
	_, err = r.Reconcile(ctx(t), c, k)
	require.NoError(t, err)
	ref := release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: ns, Name: "frozen"}
	first, err := c.Get(ctx(t), ref)
	require.NoError(t, err)

	src.set("2", tree("two"))
	_, err = r.Reconcile(ctx(t), c, k)
	var ae *kustomize.ApplyError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "frozen", ae.Object.Name)
	assert.Contains(t, err.Error(), "immutable")
	assert.Equal(t, release.ReasonReconciliationFailed, k.Status.GetCondition(release.ConditionReady).Reason)

	k.Spec.Force = true
	res, err := r.Reconcile(ctx(t), c, k)
	require.NoError(t, err)
	require.Len(t, res.Applied, 1)
	assert.Equal(t, kustomize.ActionCreated, res.Applied[0].Action, "recreated")
	second, err := c.Get(ctx(t), ref)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "two"}, second.Object["data"])
	assert.NotEqual(t, first.GetUID(), second.GetUID())
}
