package helmv4_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// placeApps places podinfo on every member of the app tier.
const placeApps = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector:
        matchLabels: {tier: apps}
`

// wave1OnV4 moves the copies of podinfo on the members of wave 1 to Helm
// v4 (helmv4.EngineAnnotation).
const wave1OnV4 = `
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-helm-v4, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {wave: "1"}}}
      overriders:
        annotationsOverrider:
          - {operator: add, value: {fleet.helmfleet.io/helm-engine: v4}}
`

// The switch to Helm v4 rolls out as any change does: an OverridePolicy
// sets helmv4.EngineAnnotation on the copies of wave 1, the fleet's plan
// shows which members' next action runs on Helm v4 (helmv4.EngineFor of
// each item's release), and Apply upgrades wave 1 with Helm v4 while the
// gate holds wave 2 on Helm v3; both keep their history.
func TestEngineSwitchInWaves(t *testing.T) {
	ctx := context.Background()
	members := map[string]*memory.Cluster{"m1": memory.New("m1"), "m2": memory.New("m2")}
	list := []release.Member{
		{Cluster: members["m1"], Facts: policy.Cluster{Labels: map[string]string{"tier": "apps", "wave": "1"}}},
		{Cluster: members["m2"], Facts: policy.Cluster{Labels: map[string]string{"tier": "apps", "wave": "2"}}},
	}
	engineFor := helmv4.EngineFor(helmv4.Engine{})
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), EngineFor: engineFor, PollInterval: 2 * time.Millisecond})
	require.NoError(t, err)
	fl, err := fleet.New(fleet.Config{Reconciler: rec, Members: list})
	require.NoError(t, err)

	// Installed everywhere with Helm v3.
	in := fleet.Inputs{Releases: []*release.Release{fixture.Release()}, Policies: fixture.PolicySet(t, placeApps)}
	plan, err := fl.Plan(ctx, in)
	require.NoError(t, err)
	_, err = fl.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	// The upgrade to 6.5.1 with wave 1 moved to Helm v4.
	up := fixture.Release()
	up.Spec.Chart.Spec.Version = "6.5.1"
	up.Generation = 2
	in = fleet.Inputs{Releases: []*release.Release{up}, Policies: fixture.PolicySet(t, placeApps+wave1OnV4)}
	plan, err = fl.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	majors := map[string]int{}
	for _, it := range plan.Items {
		assert.Equal(t, reconcile.ActionUpgrade, it.Action, it.Cluster)
		majors[it.Cluster] = 3
		if e := engineFor(it.Release); e != nil {
			majors[it.Cluster] = e.HelmMajor()
		}
	}
	assert.Equal(t, map[string]int{"m1": 4, "m2": 3}, majors, "the plan's members that move to Helm v4")

	var gated []string
	_, err = fl.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves: []fleet.Wave{{Name: "one", Selector: "wave=1"}, {Name: "two", Selector: "wave=2"}},
		Gate: func(_ context.Context, w fleet.WaveReport) error {
			gated = append(gated, w.Name)
			return errors.New("hold: Helm v4 on wave one under watch")
		},
	}})
	require.Error(t, err)
	assert.Equal(t, []string{"one"}, gated)

	// m1: revision 1 by Helm v3 (no apply method), revision 2 by Helm v4,
	// which records its apply method: client-side, as serverSideApply
	// auto takes it from a revision Helm v3 wrote; m2: revision 1 by Helm
	// v3 only, still deployed.
	h1, h2 := history(t, members["m1"], up), history(t, members["m2"], up)
	assert.Equal(t, []string{"", "csa"}, applyMethods(h1))
	assert.Equal(t, []string{""}, applyMethods(h2))
	require.Len(t, h1, 2)
	require.Len(t, h2, 1)
	assert.Equal(t, "6.5.0", h1[0].Chart.Metadata.Version)
	assert.Equal(t, "6.5.1", h1[1].Chart.Metadata.Version)
	assert.Equal(t, "6.5.0", h2[0].Chart.Metadata.Version)
	assert.Equal(t, "deployed", h2[0].Info.Status.String())
}
