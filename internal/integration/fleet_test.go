package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// charts serves the embedded test chart at the version a release asks for.
var charts = reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
	ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
	return &reconcile.Chart{Chart: ch}, err
})

func newReconciler(t *testing.T) *reconcile.Reconciler {
	t.Helper()
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	return rec
}

// podinfoYAML is the test release; the control planes run no controllers,
// so nothing becomes available: waits are disabled.
func podinfoYAML(namespace string) string {
	return `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: ` + namespace + `}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  install: {disableWait: true}
  upgrade: {disableWait: true}
  driftDetection:
    mode: enabled
  values:
    replicaCount: 2
`
}

func deploymentReplicas(t *testing.T, c release.ObjectReader, namespace string) int64 {
	t.Helper()
	dep, err := c.Get(ctx(t), release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: namespace, Name: "podinfo"})
	require.NoError(t, err)
	n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	return n
}

// TestReconcilerCorrectsDriftOnRealCluster installs through the
// reconciler, lets another field manager scale the Deployment, and checks
// that the next reconcile patches it back.
func TestReconcilerCorrectsDriftOnRealCluster(t *testing.T) {
	c := admin(t, "member1")
	namespace(t, c, "rec")
	objs, err := release.Decode(strings.NewReader(podinfoYAML("rec")))
	require.NoError(t, err)
	rel := objs.Releases[0]
	rec := newReconciler(t)

	res, err := rec.Reconcile(ctx(t), c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, res.Actions)
	assert.Equal(t, int64(2), deploymentReplicas(t, c, "rec"))

	scaled := deployment("rec", "podinfo", 7, "podinfo")
	scaled.Object = map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "podinfo", "namespace": "rec"}, "spec": map[string]any{"replicas": int64(7)}}
	_, err = c.Apply(ctx(t), scaled, release.ApplyOptions{FieldManager: "kubectl-scale", Force: true})
	require.NoError(t, err)
	require.Equal(t, int64(7), deploymentReplicas(t, c, "rec"))

	res, err = rec.Reconcile(ctx(t), c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionCorrectDrift}, res.Actions)
	require.NotNil(t, res.Drift)
	assert.Equal(t, 1, res.Drift.Count("Modified"))
	assert.Equal(t, int64(2), deploymentReplicas(t, c, "rec"), "the JSON patch put the manifest's replicas back")

	rel.Spec.Values["replicaCount"] = 3
	rel.Generation = 2
	res, err = rec.Reconcile(ctx(t), c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Equal(t, int64(3), deploymentReplicas(t, c, "rec"))

	_, err = rec.Uninstall(ctx(t), c, rel)
	require.NoError(t, err)
	_, err = c.Get(ctx(t), release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: "rec", Name: "podinfo"})
	assert.ErrorIs(t, err, release.ErrNotFound)
}

// TestFleetAcrossMembers reads the fleet's YAML from the hub, places the
// release on both members with a per-member values override, and checks
// that each member holds a real Helm release with its own values.
func TestFleetAcrossMembers(t *testing.T) {
	hub := admin(t, "hub")
	namespace(t, hub, "platform")
	policies := `
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: fleet}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo, namespace: fleet}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {clusterNames: [member2]}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 5}
`
	// The platform team keeps the fleet's YAML on the hub.
	cm := object(configMapGVK, "platform", "fleet-spec", map[string]any{"data": map[string]any{"fleet.yaml": podinfoYAML("fleet") + policies}})
	_, err := hub.Apply(ctx(t), cm, release.ApplyOptions{FieldManager: "platform-team"})
	require.NoError(t, err)
	stored, err := hub.Get(ctx(t), release.RefOf(cm))
	require.NoError(t, err)
	text, _, _ := unstructured.NestedString(stored.Object, "data", "fleet.yaml")
	objs, err := release.Decode(strings.NewReader(text))
	require.NoError(t, err)

	m1, m2 := admin(t, "member1"), admin(t, "member2")
	namespace(t, m1, "fleet")
	namespace(t, m2, "fleet")
	fl, err := fleet.New(fleet.Config{
		Reconciler: newReconciler(t),
		Members: []release.Member{
			{Cluster: m1, Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
			{Cluster: m2, Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
		},
	})
	require.NoError(t, err)
	plan, err := fl.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Len(t, plan.Items, 2)
	rep, err := fl.Apply(ctx(t), plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())

	for _, m := range []struct {
		c        release.Cluster
		replicas int64
	}{{m1, 2}, {m2, 5}} {
		cfg, err := m.c.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: "fleet", Namespace: "fleet"})
		require.NoError(t, err)
		list, err := action.NewList(cfg).Run()
		require.NoError(t, err)
		require.Len(t, list, 1, "helm ls on %s", m.c.Name())
		assert.Equal(t, "podinfo", list[0].Name)
		assert.Equal(t, int64(m.replicas), deploymentReplicas(t, m.c, "fleet"), m.c.Name())
	}
}

// rolloutWithMemberGone applies a release to both members while member2's
// API server is down: member1 gets it, member2's failure names member2.
func rolloutWithMemberGone(t *testing.T, member1, member2 release.Cluster) {
	t.Helper()
	namespace(t, member1, "away")
	objs, err := release.Decode(strings.NewReader(podinfoYAML("away") + `
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: away}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
`))
	require.NoError(t, err)
	fl, err := fleet.New(fleet.Config{Reconciler: newReconciler(t),
		Members: []release.Member{{Cluster: member1}, {Cluster: member2}}})
	require.NoError(t, err)
	plan, err := fl.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	rep, err := fl.Apply(ctx(t), plan, fleet.ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "member2:away/podinfo")
	assert.Contains(t, err.Error(), "cluster member2")
	assert.NotContains(t, err.Error(), "member1:away/podinfo")
	for _, it := range rep.Items {
		if it.Key.Cluster == "member1" {
			assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, it.Actions)
			assert.NoError(t, it.Err)
		}
	}
	assert.Equal(t, int64(2), deploymentReplicas(t, member1, "away"))
}
