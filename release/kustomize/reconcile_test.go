package kustomize_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

// tree is a source whose content a test changes between reconciles.
type changingTree struct {
	mu   sync.Mutex
	fsys fstest.MapFS
	rev  string
}

func (s *changingTree) set(rev string, fsys fstest.MapFS) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fsys, s.rev = fsys, rev
}

func (s *changingTree) FS(context.Context, *release.Kustomization) (fs.FS, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fsys, s.rev, nil
}

const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func configMap(name string, extra ...string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: apps\n" + strings.Join(extra, "") + "data:\n  k: v\n"
}

// appTree is a tree with a Namespace, a CRD, a custom resource of it and
// the named ConfigMaps, listed so that the CRD and Namespace come last.
func appTree(cms ...string) fstest.MapFS {
	m := fstest.MapFS{
		"app/widget.yaml": file("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: apps\nspec:\n  size: 1\n"),
		"app/ns.yaml":     file("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n"),
		"app/crd.yaml":    file(crd),
	}
	res := []string{"widget.yaml"}
	for _, c := range cms {
		m["app/"+c+".yaml"] = file(configMap(c))
		res = append(res, c+".yaml")
	}
	res = append(res, "ns.yaml", "crd.yaml")
	m["app/kustomization.yaml"] = file("resources: [" + strings.Join(res, ", ") + "]\n")
	return m
}

func newReconciler(t *testing.T, src kustomize.Sources, mutate ...func(*kustomize.ReconcilerConfig)) *kustomize.Reconciler {
	t.Helper()
	cfg := kustomize.ReconcilerConfig{Sources: src, PollInterval: 10 * time.Millisecond, Now: func() time.Time { return time.Unix(1_800_000_000, 0) }}
	for _, m := range mutate {
		m(&cfg)
	}
	r, err := kustomize.NewReconciler(cfg)
	require.NoError(t, err)
	return r
}

func ids(k *release.Kustomization) []string {
	if k.Status.Inventory == nil {
		return nil
	}
	var out []string
	for _, e := range k.Status.Inventory.Entries {
		out = append(out, e.ID+"@"+e.Version)
	}
	return out
}

func ready(t *testing.T, k *release.Kustomization) *metav1.Condition {
	t.Helper()
	c := k.Status.GetCondition(release.ConditionReady)
	require.NotNil(t, c, "no Ready condition")
	return c
}

// TestReconcileApplyPruneHealth: a first reconcile applies everything,
// CRDs and Namespaces first, records the inventory in Flux's format and
// is Ready; an object that leaves the tree is pruned; a reconcile with
// nothing new changes nothing.
func TestReconcileApplyPruneHealth(t *testing.T) {
	src := &changingTree{}
	src.set("main@sha1:1", appTree("a", "b"))
	c := memory.New("dev")
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) { k.Spec.Prune = true; k.Spec.Wait = true })

	res, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	var order []string
	for _, a := range res.Applied {
		order = append(order, a.Object.Kind+" "+a.Object.Name+" "+a.Action)
	}
	assert.Equal(t, []string{
		"Namespace apps created", "CustomResourceDefinition widgets.example.com created",
		"Widget w created", "ConfigMap a created", "ConfigMap b created",
	}, order, "cluster definitions first, then build order")
	assert.Equal(t, []string{
		"_apps__Namespace@v1",
		"_widgets.example.com_apiextensions.k8s.io_CustomResourceDefinition@v1",
		"apps_a__ConfigMap@v1", "apps_b__ConfigMap@v1", "apps_w_example.com_Widget@v1",
	}, ids(k))
	rc := ready(t, k)
	assert.Equal(t, metav1.ConditionTrue, rc.Status)
	assert.Equal(t, release.ReasonReconciliationSucceeded, rc.Reason)
	assert.Equal(t, "Applied revision: main@sha1:1", rc.Message)
	assert.True(t, k.Status.IsConditionTrue(release.ConditionHealthy))
	assert.Nil(t, k.Status.GetCondition(release.ConditionReconciling))
	assert.Equal(t, "main@sha1:1", k.Status.LastAppliedRevision)
	assert.True(t, k.IsReady())
	live, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, "app", live.GetLabels()[kustomize.NameLabel])
	assert.Equal(t, "apps", live.GetLabels()[kustomize.NamespaceLabel])
	assert.Equal(t, kustomize.DefaultFieldManager, live.GetManagedFields()[0].Manager)

	// Unchanged source: nothing changes.
	res, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	for _, a := range res.Applied {
		assert.Equal(t, kustomize.ActionUnchanged, a.Action, a.Object.String())
	}

	// b leaves the tree: pruned.
	src.set("main@sha1:2", appTree("a"))
	res, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	assert.Equal(t, []release.ObjectRef{{GroupVersionKind: cmGVK, Namespace: "apps", Name: "b"}}, res.Pruned)
	_, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "b"})
	assert.ErrorIs(t, err, release.ErrNotFound)
	assert.NotContains(t, ids(k), "apps_b__ConfigMap@v1")
	assert.Equal(t, "main@sha1:2", k.Status.LastAppliedRevision)
}

var cmGVK = schemaGVK("", "v1", "ConfigMap")

// TestReconcilePruneOffAndOptOut: without spec.prune, an object that
// leaves the tree stays in the cluster and leaves the inventory; with
// prune, one annotated prune: disabled stays too.
func TestReconcilePruneOffAndOptOut(t *testing.T) {
	src := &changingTree{}
	keep := appTree("a", "b")
	keep["app/b.yaml"] = file(configMap("b", "  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"))
	src.set("1", keep)
	c := memory.New("dev")
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) { k.Spec.Prune = true })
	_, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	src.set("2", appTree())
	res, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	assert.Equal(t, []release.ObjectRef{{GroupVersionKind: cmGVK, Namespace: "apps", Name: "a"}}, res.Pruned, "b opted out")
	_, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "b"})
	assert.NoError(t, err)

	k.Spec.Prune = false
	src.set("3", appTree("c"))
	_, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	src.set("4", appTree())
	res, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	assert.Empty(t, res.Pruned)
	_, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "c"})
	assert.NoError(t, err, "prune off: orphaned")
	assert.NotContains(t, ids(k), "apps_c__ConfigMap@v1")
}

// TestReconcileHealthCheckFails: a health-checked object that never gets
// ready makes the Kustomization not Ready, reason HealthCheckFailed,
// naming it; Failed by kstatus fails at once.
func TestReconcileHealthCheckFails(t *testing.T) {
	src := &changingTree{}
	src.set("1", appTree("a", "stuck"))
	c := memory.New("dev", memory.WithHealth(func(o *unstructured.Unstructured) memory.Health {
		if o.GetKind() == "Widget" {
			return memory.Health{Failed: true, Message: "widget broke"}
		}
		return memory.Health{Ready: true}
	}))
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.HealthChecks = []release.NamespacedObjectKindReference{{Kind: "Widget", Name: "w", Namespace: "apps"}}
	})
	_, err := r.Reconcile(t.Context(), c, k)
	var he *kustomize.HealthError
	require.ErrorAs(t, err, &he)
	require.Len(t, he.Objects, 1)
	assert.Equal(t, "w", he.Objects[0].Object.Name)
	assert.Equal(t, "Failed", he.Objects[0].Status)
	rc := ready(t, k)
	assert.Equal(t, metav1.ConditionFalse, rc.Status)
	assert.Equal(t, release.ReasonHealthCheckFailed, rc.Reason)
	assert.Contains(t, rc.Message, "Widget apps/w: Failed")
	assert.False(t, k.Status.IsConditionTrue(release.ConditionHealthy))
	assert.False(t, k.IsReady())
	assert.NotEmpty(t, ids(k), "applied objects are in the inventory")

	// Never ready: the wait ends with ctx. The context is cancelled once
	// the Widget's health has been read a third time, which only the
	// wait's polls do (apply reads it at most twice), so the wait has
	// begun however slow the machine: a fixed deadline could expire
	// during the build or apply under load.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var reads atomic.Int32
	c.SetHealth(func(o *unstructured.Unstructured) memory.Health {
		if o.GetKind() != "Widget" {
			return memory.Health{Ready: true}
		}
		if reads.Add(1) == 3 {
			cancel()
		}
		return memory.Health{Message: "rolling out"}
	})
	_, err = r.Reconcile(ctx, c, k)
	require.ErrorAs(t, err, &he)
	assert.Equal(t, "InProgress", he.Objects[0].Status)
	assert.ErrorIs(t, err, context.Canceled)
}

func snapshot(c *memory.Cluster) []string { return c.Summary() }

// TestReconcileBadInput: a missing resource file, a remote base and an
// unset variable each fail the build with an error naming the file and
// the entry or object, Ready False BuildFailed, and nothing is applied.
func TestReconcileBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files fstest.MapFS
		post  *release.PostBuild
		want  []string
	}{
		{
			name:  "missing resource file",
			files: fstest.MapFS{"app/kustomization.yaml": file("resources: [a.yaml, gone.yaml]\n"), "app/a.yaml": file(configMap("a"))},
			want:  []string{"app/kustomization.yaml", `resources[1]`, "gone.yaml", "file does not exist"},
		},
		{
			name:  "remote base",
			files: fstest.MapFS{"app/kustomization.yaml": file("resources:\n- a.yaml\n- https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.0.0\n"), "app/a.yaml": file(configMap("a"))},
			want:  []string{"app/kustomization.yaml", "resources[1]", "remote"},
		},
		{
			name: "unset variable",
			files: fstest.MapFS{
				"app/kustomization.yaml": file("resources: [a.yaml, b.yaml]\n"),
				"app/a.yaml":             file(configMap("a")),
				"app/b.yaml":             file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: apps\ndata:\n  tag: ${image_tag}\n"),
			},
			post: &release.PostBuild{Substitute: map[string]string{"cluster": "dev"}},
			want: []string{"Kustomization apps/app", "app/b.yaml", "ConfigMap apps/b", `variable "image_tag" is not set`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &changingTree{}
			src.set("1", tc.files)
			c := memory.New("dev")
			before := snapshot(c)
			r := newReconciler(t, src)
			k := ks("./app", func(k *release.Kustomization) { k.Spec.Prune = true; k.Spec.PostBuild = tc.post })
			res, err := r.Reconcile(t.Context(), c, k)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			assert.Empty(t, res.Applied)
			assert.Equal(t, before, snapshot(c), "the cluster is untouched")
			rc := ready(t, k)
			assert.Equal(t, metav1.ConditionFalse, rc.Status)
			assert.Equal(t, release.ReasonBuildFailed, rc.Reason)
			assert.Equal(t, "1", k.Status.LastAttemptedRevision)
			assert.Empty(t, k.Status.LastAppliedRevision)

			_, err = r.Plan(t.Context(), c, k)
			require.Error(t, err, "Plan fails alike")
		})
	}
}

// TestReconcileExcludeAndCommonMetadata: Exclude (FleetUnit) leaves the
// HelmRelease of a tree out of apply and inventory; commonMetadata is on
// every applied object; substituteFrom is read from the cluster itself
// when no reader is configured.
func TestReconcileExcludeAndCommonMetadata(t *testing.T) {
	src := &changingTree{}
	src.set("1", fstest.MapFS{
		"app/kustomization.yaml": file("resources: [a.yaml, hr.yaml]\n"),
		"app/a.yaml":             file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: apps\ndata:\n  env: ${env}\n"),
		"app/hr.yaml":            file("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  interval: 5m\n  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}\n"),
	})
	c := memory.New("dev")
	vars := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "vars", "namespace": "apps"}, "data": map[string]any{"env": "dev"}}}
	_, err := c.Apply(t.Context(), vars, release.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
	r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) { cfg.Exclude = kustomize.FleetUnit })
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.CommonMetadata = &release.CommonMetadata{Labels: map[string]string{"team": "web"}, Annotations: map[string]string{"owner": "web"}}
		k.Spec.PostBuild = &release.PostBuild{SubstituteFrom: []release.SubstituteReference{{Kind: "ConfigMap", Name: "vars"}}}
	})
	res, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	assert.Equal(t, []string{"apps_a__ConfigMap@v1"}, ids(k))
	require.Len(t, res.Excluded, 1)
	assert.Equal(t, "HelmRelease", res.Excluded[0].Kind)
	a, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, "web", a.GetLabels()["team"])
	assert.Equal(t, "web", a.GetAnnotations()["owner"])
	assert.Equal(t, map[string]any{"env": "dev"}, a.Object["data"])
}

// TestDelete: deleting the Kustomization deletes its objects (prune
// true, MirrorPrune), Namespaces last; Orphan keeps them.
func TestDelete(t *testing.T) {
	for _, tc := range []struct {
		policy string
		gone   bool
	}{{"", true}, {release.DeletionPolicyOrphan, false}, {release.DeletionPolicyWaitForTermination, true}} {
		t.Run("policy "+tc.policy, func(t *testing.T) {
			src := &changingTree{}
			src.set("1", appTree("a"))
			c := memory.New("dev")
			r := newReconciler(t, src)
			k := ks("./app", func(k *release.Kustomization) { k.Spec.Prune = true; k.Spec.DeletionPolicy = tc.policy })
			_, err := r.Reconcile(t.Context(), c, k)
			require.NoError(t, err)
			require.NoError(t, r.Delete(t.Context(), c, k))
			assert.Nil(t, k.Status.Inventory)
			_, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "a"})
			assert.Equal(t, tc.gone, err != nil, "%v", err)
			_, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: schemaGVK("", "v1", "Namespace"), Name: "apps"})
			assert.Equal(t, tc.gone, err != nil, "%v", err)
		})
	}
}

// TestPlan: a plan writes nothing, shows creations with their content,
// then nothing after a reconcile, then an update and a prune; Secret data
// and values substituted from Secrets are masked.
func TestPlan(t *testing.T) {
	src := &changingTree{}
	files := appTree("a")
	files["app/s.yaml"] = file("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  namespace: apps\nstringData:\n  password: ${db_password}\n")
	files["app/kustomization.yaml"] = file("resources: [widget.yaml, a.yaml, s.yaml, ns.yaml, crd.yaml]\n")
	src.set("1", files)
	c := memory.New("dev")
	r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) {
		cfg.Variables = fakeVars{"Secret/db": {"db_password": "hunter2-very-secret"}}
	})
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.Prune = true
		k.Spec.PostBuild = &release.PostBuild{SubstituteFrom: []release.SubstituteReference{{Kind: "Secret", Name: "db"}}}
	})
	before := snapshot(c)
	p, err := r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	assert.Equal(t, before, snapshot(c), "Plan writes nothing")
	assert.Nil(t, k.Status.Inventory)
	assert.True(t, p.Changed())
	var kinds []string
	for _, o := range p.Objects {
		kinds = append(kinds, o.Object.Kind+" "+o.Action)
		assert.NotContains(t, o.Diff, "hunter2-very-secret")
	}
	assert.Equal(t, []string{"Namespace create", "CustomResourceDefinition create", "Widget create", "ConfigMap create", "Secret create"}, kinds)
	assert.Contains(t, p.Objects[3].Diff, "+  k: v")
	assert.Contains(t, p.Objects[4].Diff, "password: (secret value)")

	_, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	p, err = r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	assert.False(t, p.Changed(), "%+v", p.Objects)

	files = appTree()
	files["app/widget.yaml"] = file("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: apps\nspec:\n  size: 2\n")
	src.set("2", files)
	p, err = r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	assert.Equal(t, []release.ObjectRef{
		{GroupVersionKind: cmGVK, Namespace: "apps", Name: "a"},
		{GroupVersionKind: schemaGVK("", "v1", "Secret"), Namespace: "apps", Name: "s"},
	}, p.Prune)
	var w kustomize.ObjectPlan
	for _, o := range p.Objects {
		if o.Object.Kind == "Widget" {
			w = o
		}
	}
	assert.Equal(t, kustomize.PlanUpdate, w.Action)
	assert.Contains(t, w.Diff, "-  size: 1\n+  size: 2")
}

func schemaGVK(group, version, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: version, Kind: kind}
}

// TestInventoryID: Flux's id format, <namespace>_<name>_<group>_<kind>,
// read back with the version of the entry.
func TestInventoryID(t *testing.T) {
	for _, ref := range []release.ObjectRef{
		{GroupVersionKind: schemaGVK("apps", "v1", "Deployment"), Namespace: "web", Name: "api"},
		{GroupVersionKind: schemaGVK("", "v1", "Namespace"), Name: "web"},
		{GroupVersionKind: schemaGVK("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), Name: "widgets.example.com"},
	} {
		e := release.ResourceRef{ID: kustomize.InventoryID(ref), Version: ref.Version}
		got, err := kustomize.ParseInventoryEntry(e)
		require.NoError(t, err)
		assert.Equal(t, ref, got)
	}
	assert.Equal(t, "web_api_apps_Deployment", kustomize.InventoryID(release.ObjectRef{GroupVersionKind: schemaGVK("apps", "v1", "Deployment"), Namespace: "web", Name: "api"}))
	for _, bad := range []release.ResourceRef{{ID: "a_b_c", Version: "v1"}, {ID: "ns__apps_Deployment", Version: "v1"}, {ID: "ns_n_apps_Deployment"}} {
		_, err := kustomize.ParseInventoryEntry(bad)
		assert.Error(t, err, bad.ID)
	}
}

// TestReconcileSSAAnnotations: reconcile: disabled and ssa: Ignore leave
// an object unapplied, ssa: IfNotPresent applies it only once; all stay
// in the inventory, as in Flux.
func TestReconcileSSAAnnotations(t *testing.T) {
	src := &changingTree{}
	tree := fstest.MapFS{
		"app/kustomization.yaml": file("resources: [off.yaml, ignored.yaml, once.yaml]\n"),
		"app/off.yaml":           file(configMap("off", "  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\n")),
		"app/ignored.yaml":       file(configMap("ignored", "  labels:\n    kustomize.toolkit.fluxcd.io/ssa: Ignore\n")),
		"app/once.yaml":          file(configMap("once", "  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n")),
	}
	src.set("1", tree)
	c := memory.New("dev")
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) { k.Spec.Prune = true })
	res, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	actions := map[string]string{}
	for _, a := range res.Applied {
		actions[a.Object.Name] = a.Action
	}
	assert.Equal(t, map[string]string{"off": kustomize.ActionSkipped, "ignored": kustomize.ActionSkipped, "once": kustomize.ActionCreated}, actions)
	assert.Len(t, ids(k), 3)
	for _, name := range []string{"off", "ignored"} {
		_, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: name})
		assert.ErrorIs(t, err, release.ErrNotFound, name)
	}
	tree["app/once.yaml"] = file(strings.Replace(configMap("once", "  annotations:\n    kustomize.toolkit.fluxcd.io/ssa: IfNotPresent\n"), "k: v", "k: changed", 1))
	res, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	once, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "apps", Name: "once"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"k": "v"}, once.Object["data"], "IfNotPresent: not updated")
}

// TestReconcileInvalidAndSuspended: an invalid spec is Stalled and
// nothing is built; a suspended Kustomization is left alone.
func TestReconcileInvalidAndSuspended(t *testing.T) {
	src := &changingTree{}
	src.set("1", appTree("a"))
	c := memory.New("dev")
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) { k.Spec.Decryption = &release.Decryption{Provider: "sops"} })
	_, err := r.Reconcile(t.Context(), c, k)
	require.ErrorContains(t, err, "spec.decryption")
	assert.True(t, k.Status.IsConditionTrue(release.ConditionStalled))
	assert.Equal(t, release.ReasonInvalidSpec, ready(t, k).Reason)
	assert.Empty(t, snapshot(c))

	k = ks("./app", func(k *release.Kustomization) { k.Spec.Suspend = true })
	res, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	assert.True(t, res.Suspended)
	assert.Empty(t, snapshot(c))
	assert.Empty(t, k.Status.Conditions)
}

// TestReconcileHealthChecksSkipExcluded: a health check naming an object
// Exclude left out (a HelmRelease the fleet runs as a unit of its own, and
// checks itself) is not waited for on the cluster, where it never is;
// the other health checks are.
func TestReconcileHealthChecksSkipExcluded(t *testing.T) {
	src := &changingTree{}
	src.set("1", fstest.MapFS{
		"app/kustomization.yaml": file("resources: [a.yaml, hr.yaml]\n"),
		"app/a.yaml":             file(configMap("a")),
		"app/hr.yaml":            file("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: web\n  namespace: apps\nspec:\n  interval: 5m\n  chart: {spec: {chart: web, sourceRef: {kind: HelmRepository, name: charts}}}\n"),
	})
	c := memory.New("dev")
	r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) { cfg.Exclude = kustomize.FleetUnit })
	for _, apiVersion := range []string{"helm.toolkit.fluxcd.io/v2", ""} {
		k := ks("./app", func(k *release.Kustomization) {
			k.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Second} // the shortest
			k.Spec.HealthChecks = []release.NamespacedObjectKindReference{
				{APIVersion: apiVersion, Kind: "HelmRelease", Name: "web", Namespace: "apps"},
				{Kind: "ConfigMap", Name: "a", Namespace: "apps"},
			}
		})
		_, err := r.Reconcile(t.Context(), c, k)
		require.NoError(t, err, "apiVersion %q", apiVersion)
		assert.True(t, k.Status.IsConditionTrue(release.ConditionHealthy), "the ConfigMap is checked")
		assert.True(t, k.IsReady())
	}
}

// TestApplyErrorNamesObjectOnce: an apply the cluster refuses names the
// Kustomization, the object and the cluster's reason, the object once
// although the cluster's error names it too.
func TestApplyErrorNamesObjectOnce(t *testing.T) {
	src := &changingTree{}
	src.set("1", fstest.MapFS{"app/kustomization.yaml": file("resources: [a.yaml]\n"), "app/a.yaml": file(configMap("a"))})
	c := memory.New("dev")
	c.SetFaults(func(op memory.Operation, _ release.ObjectRef) error {
		if op == memory.OpApply {
			return errors.New("etcd is full")
		}
		return nil
	})
	_, err := newReconciler(t, src).Reconcile(t.Context(), c, ks("./app"))
	var ae *kustomize.ApplyError
	require.ErrorAs(t, err, &ae)
	assert.True(t, strings.HasPrefix(err.Error(), "Kustomization apps/app: "), err.Error())
	assert.Equal(t, 1, strings.Count(err.Error(), "ConfigMap apps/a"), err.Error())
	assert.Contains(t, err.Error(), "etcd is full")

	// A cluster whose error does not name the object: the Kustomization
	// names it.
	ae.Err = errors.New("etcd is full")
	assert.Equal(t, "Kustomization apps/app: apply v1 ConfigMap apps/a: etcd is full", ae.Error())
}
