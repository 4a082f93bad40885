package distribute_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// everyNamespacePolicies are fixture.DistributorPolicies with the
// podinfo policy made a ClusterPropagationPolicy: it places podinfo's
// Deployment (one replica on m1, two on m2) and what it uses whatever
// their namespace.
var everyNamespacePolicies = strings.Replace(fixture.DistributorPolicies,
	"kind: PropagationPolicy\nmetadata: {name: podinfo, namespace: apps}",
	"kind: ClusterPropagationPolicy\nmetadata: {name: podinfo}", 1)

// Two Releases of one chart with one release name and values render the
// same manifest; only their namespaces (storage and target) differ.
// Reconciled at once, each keeps its own objects, its own drift and its
// own uninstall: the Distributor knows which release an action is for
// from the scope, not from which record Helm touched last.
func TestDistributorIdenticalManifestsConcurrently(t *testing.T) {
	f := fixture.NewDistFleet(t, everyNamespacePolicies)
	require.Contains(t, everyNamespacePolicies, "kind: ClusterPropagationPolicy")
	rec := fixture.Reconciler(t, nil)
	rels := map[string]*release.Release{}
	for _, ns := range []string{"team-a", "team-b"} {
		rel := fixture.DistRelease()
		rel.Namespace = ns
		rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled}
		rels[ns] = rel
	}
	depRef := func(ns string) release.ObjectRef {
		return release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: ns, Name: "podinfo"}
	}
	replicas := func(m, ns string) int64 {
		dep, err := f.Members[m].Get(t.Context(), depRef(ns))
		require.NoError(t, err, "%s on %s", ns, m)
		n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		return n
	}
	// Both share one context: the release each works on travels in the
	// scope of its Helm configuration and of its drift check, not in the
	// context or in the order of Helm's storage calls.
	both := func() map[string]*reconcile.Result {
		out := map[string]*reconcile.Result{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		ctx := t.Context()
		for ns, rel := range rels {
			wg.Go(func() {
				res, err := rec.Reconcile(ctx, f.Dist, rel)
				assert.NoError(t, err, ns)
				mu.Lock()
				out[ns] = res
				mu.Unlock()
			})
		}
		wg.Wait()
		return out
	}
	both()
	for _, m := range []string{"m1", "m2"} {
		for _, o := range f.Members[m].Objects() {
			if o.GetKind() == "Namespace" {
				continue
			}
			l := o.GetLabels()
			assert.Equal(t, o.GetNamespace(), l[distribute.InventoryNamespaceLabel], "%s %s/%s on %s", o.GetKind(), o.GetNamespace(), o.GetName(), m)
			assert.Equal(t, "podinfo", l[distribute.InventoryNameLabel])
		}
		assert.Len(t, view(t, f.Members[m]), 10, "five objects of each release on %s", m)
	}

	for round := range 300 {
		// team-a's copy on m1 drifts; team-b's does not.
		dep, err := f.Members["m1"].Get(t.Context(), depRef("team-a"))
		require.NoError(t, err)
		delete(dep.Object, "status")
		require.NoError(t, unstructured.SetNestedField(dep.Object, int64(9), "spec", "replicas"))
		_, err = f.Members["m1"].Update(t.Context(), dep, "kubectl-edit")
		require.NoError(t, err)

		res := both()
		a, b := res["team-a"], res["team-b"]
		require.NotNil(t, a, "round %d", round)
		require.NotNil(t, b, "round %d", round)
		if assert.NotNil(t, a.Drift, "round %d", round) {
			assert.Equal(t, 1, a.Drift.Count("Modified"), "round %d: team-a's drift is team-a's: %s", round, a.Drift)
			assert.Contains(t, a.Drift.String(), "Deployment.apps/team-a/podinfo: modified (member m1)", "round %d", round)
			assert.NotContains(t, a.Drift.String(), "team-b", "round %d", round)
		}
		assert.True(t, a.Did(reconcile.ActionCorrectDrift), "round %d: team-a corrects its drift", round)
		assert.False(t, b.Drift != nil && b.Drift.Drifted(), "round %d: team-b reports no drift: %v", round, b.Drift)
		assert.False(t, b.Did(reconcile.ActionCorrectDrift), "round %d: team-b corrects nothing", round)
		assert.Equal(t, int64(1), replicas("m1", "team-a"), "round %d", round)
		assert.Equal(t, int64(1), replicas("m1", "team-b"), "round %d", round)
		if t.Failed() {
			return
		}
	}

	ctx := t.Context()
	_, err := rec.Uninstall(ctx, f.Dist, rels["team-a"])
	require.NoError(t, err)
	for m, n := range map[string]int64{"m1": 1, "m2": 2} {
		_, err := f.Members[m].Get(ctx, depRef("team-a"))
		assert.ErrorIs(t, err, release.ErrNotFound, m)
		assert.Equal(t, n, replicas(m, "team-b"), m)
		assert.Len(t, view(t, f.Members[m]), 5, "team-b's five objects stay on %s", m)
	}
	res, err := rec.Reconcile(ctx, f.Dist, rels["team-b"])
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionNone, res.Last())
	assert.False(t, res.Drift != nil && res.Drift.Drifted(), "team-b has not drifted: %v", res.Drift)
}

// A configuration whose scope names a release deletes only that release's
// copies from the first call, before Helm has read any record; one whose
// scope names none deletes what it is told to.
func TestDistributorScopeReleaseBindsDeletes(t *testing.T) {
	const manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: podinfo, namespace: apps}\n"
	tests := []struct {
		name  string
		scope release.HelmScope
		kept  bool
	}{
		{name: "bound", scope: release.HelmScope{StorageNamespace: "apps", Namespace: "apps", ReleaseNamespace: "apps", ReleaseObjectName: "podinfo", HelmReleaseName: "podinfo"}, kept: true},
		{name: "unbound", scope: release.HelmScope{StorageNamespace: "apps", Namespace: "apps"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
			otherReleasesConfigMap(t, f, "m1")
			cfg, err := f.Dist.HelmConfig(ctx, tt.scope)
			require.NoError(t, err)
			rl, err := cfg.KubeClient.Build(strings.NewReader(manifest), false)
			require.NoError(t, err)
			_, errs := cfg.KubeClient.Delete(rl)
			require.Empty(t, errs)
			_, err = f.Members["m1"].Get(ctx, configMapRef)
			if tt.kept {
				assert.NoError(t, err, "team-b/other's ConfigMap is not apps/podinfo's to delete")
			} else {
				assert.ErrorIs(t, err, release.ErrNotFound)
			}
		})
	}
}
