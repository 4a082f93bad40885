package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

const fleetYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: 2
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      name: podinfo
  placement:
    clusterAffinity:
      labelSelector:
        matchLabels: {tier: apps}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-env, namespace: apps}
spec:
  resourceSelectors:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      name: podinfo
  overrideRules:
    - targetCluster:
        labelSelector:
          matchLabels: {env: dev}
      overriders:
        plaintext:
          - path: /spec/chart/spec/version
            operator: replace
            value: "6.6.0-rc.1"
    - targetCluster:
        labelSelector:
          matchLabels: {env: prod}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 4}
`

// appWithDatabase is podinfo on every member depending on the database
// on prod-eu-1.
func appWithDatabase(t *testing.T) fleet.Inputs {
	t.Helper()
	in := decodeInputs(t, fleetYAML+databaseYAML)
	for _, r := range in.Releases {
		if r.Name == "podinfo" {
			r.Spec.DependsOn = []release.DependencyReference{{Name: "database"}}
		}
	}
	return in
}

// databaseYAML adds a database release placed on prod-eu-1 only.
const databaseYAML = `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: database, namespace: apps}
spec:
  interval: 10m
  releaseName: database
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: database, namespace: apps}
spec:
  resourceSelectors:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      name: database
  placement:
    clusterAffinity:
      clusterNames: [prod-eu-1]
`

type testFleet struct {
	fleet   *fleet.Fleet
	members map[string]*memory.Cluster
	events  []fleet.Event
	mu      sync.Mutex
}

func newTestFleet(t *testing.T, health map[string]memory.HealthFunc) *testFleet {
	t.Helper()
	tf := &testFleet{members: map[string]*memory.Cluster{}}
	var members []release.Member
	for _, m := range []struct {
		name, env, region string
	}{{"dev-1", "dev", "eu"}, {"prod-eu-1", "prod", "eu"}, {"prod-us-1", "prod", "us"}} {
		opts := []memory.Option{}
		if h := health[m.name]; h != nil {
			opts = append(opts, memory.WithHealth(h))
		}
		c := memory.New(m.name, opts...)
		tf.members[m.name] = c
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{
			Labels: map[string]string{"env": m.env, "tier": "apps"}, Region: m.region,
		}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec, Events: func(e fleet.Event) {
		tf.mu.Lock()
		tf.events = append(tf.events, e)
		tf.mu.Unlock()
	}})
	require.NoError(t, err)
	tf.fleet = f
	return tf
}

func decodeInputs(t *testing.T, y string) fleet.Inputs {
	t.Helper()
	objs, err := release.Decode(strings.NewReader(y))
	require.NoError(t, err)
	return fleet.InputsOf(objs)
}

func helmList(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	l := action.NewList(cfg)
	l.All = true
	rels, err := l.Run()
	require.NoError(t, err)
	var out []string
	for _, r := range rels {
		out = append(out, r.Name+" "+r.Chart.Metadata.Version+" "+r.Info.Status.String())
	}
	return out
}

func memberReplicas(t *testing.T, c *memory.Cluster) int64 {
	t.Helper()
	return fixture.Replicas(t, c)
}

func TestFleetPlanApplyPerClusterReleases(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	in := decodeInputs(t, fleetYAML)

	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Len(t, plan.Items, 3)
	for _, it := range plan.Items {
		assert.Equal(t, reconcile.ActionInstall, it.Action, it.Cluster)
		assert.Equal(t, reconcile.StateAbsent, it.State)
		assert.Contains(t, it.Diff, "+++ Deployment/apps/podinfo")
	}
	dev, _ := plan.Item(fleet.Key{Cluster: "dev-1", Namespace: "apps", Name: "podinfo"})
	assert.Equal(t, "6.6.0-rc.1", dev.Version, "dev gets the pre-release chart through a plaintext override")
	prod, _ := plan.Item(fleet.Key{Cluster: "prod-us-1", Namespace: "apps", Name: "podinfo"})
	assert.Equal(t, "6.5.0", prod.Version)
	assert.EqualValues(t, 4, prod.Values.Values["replicaCount"], "prod gets its own values through the values overrider")
	assert.Contains(t, plan.Table(), "prod-eu-1  apps/podinfo  Absent  install  podinfo@6.5.0")
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"action":"install"`)
	for _, c := range tf.members {
		assert.Empty(t, c.Summary(), "planning writes nothing")
	}

	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Items, 3)
	for _, it := range rep.Items {
		assert.Equal(t, depgraph.Succeeded, it.State, it.Key.String())
		assert.Equal(t, 1, it.Revision)
	}
	assert.Equal(t, []string{"podinfo 6.6.0-rc.1 deployed"}, helmList(t, tf.members["dev-1"]), "a real Helm release on the member")
	assert.Equal(t, []string{"podinfo 6.5.0 deployed"}, helmList(t, tf.members["prod-us-1"]))
	assert.Equal(t, int64(2), memberReplicas(t, tf.members["dev-1"]))
	assert.Equal(t, int64(4), memberReplicas(t, tf.members["prod-eu-1"]))
	st, ok := tf.fleet.Status(fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "podinfo"})
	require.True(t, ok)
	assert.Equal(t, "True", string(st.GetCondition(release.ConditionReady).Status))

	// Nothing changed: the next plan is all no-ops.
	plan, err = tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	for _, it := range plan.Items {
		assert.Equal(t, reconcile.ActionNone, it.Action, it.Cluster)
		assert.Empty(t, it.Diff)
	}

	// The inventory survives a restart.
	inv := tf.fleet.Inventory()
	require.Len(t, inv, 3)
	tf2 := newTestFleet(t, nil)
	require.NoError(t, tf2.fleet.Restore(inv))
	assert.Len(t, tf2.fleet.Inventory(), 3)
}

func TestFleetGarbageCollection(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	plan, err := tf.fleet.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	// prod-us-1 leaves the app tier: its release is uninstalled there.
	noUS := strings.Replace(fleetYAML, "matchLabels: {tier: apps}", "matchExpressions: [{key: env, operator: In, values: [dev]}, {key: tier, operator: In, values: [apps]}]", 1)
	plan, err = tf.fleet.Plan(ctx, decodeInputs(t, noUS))
	require.NoError(t, err)
	gc, ok := plan.Item(fleet.Key{Cluster: "prod-us-1", Namespace: "apps", Name: "podinfo"})
	require.True(t, ok)
	assert.Equal(t, reconcile.ActionUninstall, gc.Action)
	assert.Equal(t, "no longer placed on this member", gc.Reason)
	assert.Equal(t, fleet.StateRemoved, gc.State)
	assert.Regexp(t, `(?m)^prod-us-1\s+apps/podinfo\s+Removed\s+uninstall\s`, plan.Table())
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Regexp(t, `prod-us-1\s+apps/podinfo\s+succeeded\s+uninstall`, rep.Table())
	assertWaveCounts(t, rep)
	assert.Empty(t, tf.members["prod-us-1"].Summary())
	assert.Empty(t, helmList(t, tf.members["prod-eu-1"]), "prod-eu-1 is not in env=dev either")
	assert.NotEmpty(t, helmList(t, tf.members["dev-1"]))
	assert.Len(t, tf.fleet.Inventory(), 1)
}

// assertWaveCounts asserts that the waves' counts are the report's items
// that succeeded and failed, uninstalls and deletes included.
func assertWaveCounts(t *testing.T, rep *fleet.ApplyReport) {
	t.Helper()
	items, waves := map[depgraph.State]int{}, map[depgraph.State]int{}
	for _, it := range rep.Items {
		items[it.State]++
	}
	for _, w := range rep.Waves {
		waves[depgraph.Succeeded] += w.Succeeded
		waves[depgraph.Failed] += w.Failed
	}
	assert.Equal(t, items[depgraph.Succeeded], waves[depgraph.Succeeded], "succeeded\n%s", rep.Table())
	assert.Equal(t, items[depgraph.Failed], waves[depgraph.Failed], "failed\n%s", rep.Table())
}

// Garbage collection uninstalls a dependent before what it depends on
// (the graph of removals once lost every dependency but the first a
// removal had: depgraph keeps the first node of a key).
func TestFleetGarbageCollectionDependentsFirst(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	in := appWithDatabase(t)
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	plan, err = tf.fleet.Plan(ctx, fleet.Inputs{Policies: in.Policies})
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	var order []string
	for _, e := range tf.events {
		if e.Kind == fleet.EventUninstalled && e.Key.Cluster == "prod-eu-1" {
			order = append(order, e.Key.Name)
		}
	}
	assert.Equal(t, []string{"podinfo", "database"}, order)
}

// brokenUpgrade returns a test fleet with podinfo 6.5.0 applied on every
// member and the plan of its upgrade to 6.5.1, a chart that crashes on
// the members named in broken (dev-1 is pinned to 6.5.0 by an override).
func brokenUpgrade(t *testing.T, broken ...string) (*testFleet, *fleet.Plan) {
	t.Helper()
	return brokenUpgradeWith(t, nil, broken...)
}

// brokenUpgradeWith is brokenUpgrade with upgrade, when not nil, applied
// to each release of the plan of the upgrade.
func brokenUpgradeWith(t *testing.T, upgrade func(*release.Release), broken ...string) (*testFleet, *fleet.Plan) {
	t.Helper()
	ctx := context.Background()
	health := map[string]memory.HealthFunc{}
	for _, m := range broken {
		health[m] = fixture.BrokenVersion("6.5.1")
	}
	tf := newTestFleet(t, health)
	in := decodeInputs(t, strings.Replace(fleetYAML, "value: \"6.6.0-rc.1\"", "value: \"6.5.0\"", 1))
	for _, r := range in.Releases {
		r.Spec.Timeout = nil
		r.Spec.Install = nil
	}
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	in.Releases[0].Spec.Chart.Spec.Version = "6.5.1"
	for _, r := range in.Releases {
		r.Spec.Timeout = &metav1Duration20ms
		if upgrade != nil {
			upgrade(r)
		}
	}
	plan, err = tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	return tf, plan
}

func TestFleetRolloutHaltsAndRollsBack(t *testing.T) {
	ctx := context.Background()
	// Chart 6.5.1 crashes on prod-eu-1 only.
	tf, plan := brokenUpgrade(t, "prod-eu-1")
	var gated []string
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves:          []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod-eu", Clusters: []string{"prod-eu-1"}}, {Name: "prod-us", Clusters: []string{"prod-us-1"}}},
		BakeTime:       time.Millisecond,
		RollbackFailed: true,
		Gate: func(_ context.Context, w fleet.WaveReport) error {
			gated = append(gated, w.Name)
			return nil
		},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rollout halted after wave prod-eu")
	assert.True(t, rep.Halted)
	assert.Equal(t, []string{"dev"}, gated, "the gate is asked only after healthy waves")
	require.Len(t, rep.Waves, 2)
	assert.True(t, rep.Waves[1].Halted)
	byKey := map[string]fleet.ItemReport{}
	for _, it := range rep.Items {
		byKey[it.Key.Cluster] = it
	}
	assert.Equal(t, depgraph.Succeeded, byKey["dev-1"].State)
	assert.Equal(t, depgraph.Failed, byKey["prod-eu-1"].State)
	assert.Equal(t, depgraph.NotStarted, byKey["prod-us-1"].State, "the last wave never started")
	assert.Equal(t, []string{"podinfo 6.5.0 deployed"}, helmList(t, tf.members["prod-us-1"]))
	assert.Contains(t, rep.Table(), "HALTED")
	assert.Contains(t, rep.Mermaid(), "prod-eu-1")
}

// TestFleetRolloutFailureBudget: the failure budget counts failed
// members over all waves so far; while it holds, the gate is asked and
// the rollout goes on, and the wave that exceeds it halts the rollout
// without asking the gate.
func TestFleetRolloutFailureBudget(t *testing.T) {
	ctx := context.Background()
	// Chart 6.5.1 crashes on the prod members (dev-1 stays on 6.5.0).
	tf, plan := brokenUpgrade(t, "prod-eu-1", "prod-us-1")
	var gated []string
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves:       []fleet.Wave{{Name: "prod-eu", Clusters: []string{"prod-eu-1"}}, {Name: "prod-us", Clusters: []string{"prod-us-1"}}, {Name: "dev", Clusters: []string{"dev-1"}}},
		MaxFailures: 1,
		Gate: func(_ context.Context, w fleet.WaveReport) error {
			gated = append(gated, w.Name)
			return nil
		},
	}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rollout halted after wave prod-us")
	assert.True(t, rep.Halted)
	assert.Equal(t, []string{"prod-eu"}, gated, "the gate is asked while the budget holds, not after the wave that exceeds it")
	require.Len(t, rep.Waves, 2)
	assert.Equal(t, 1, rep.Waves[0].Failed)
	assert.False(t, rep.Waves[0].Halted, "one failure is within a budget of one")
	assert.Equal(t, 1, rep.Waves[1].Failed)
	assert.True(t, rep.Waves[1].Halted, "the second failure, in another wave, exceeds the budget")
	byKey := map[string]fleet.ItemReport{}
	for _, it := range rep.Items {
		byKey[it.Key.Cluster] = it
	}
	assert.Equal(t, depgraph.Failed, byKey["prod-eu-1"].State)
	assert.Equal(t, depgraph.Failed, byKey["prod-us-1"].State)
	assert.Equal(t, depgraph.NotStarted, byKey["dev-1"].State, "the last wave never started")
}

func TestFleetCrossClusterDependency(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	in := appWithDatabase(t)
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	assert.Contains(t, plan.Mermaid(), "database")
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	started := map[string]time.Time{}
	ready := map[string]time.Time{}
	for _, e := range tf.events {
		switch e.Kind {
		case fleet.EventStarted:
			started[e.Key.String()] = e.Time
		case fleet.EventReady:
			ready[e.Key.String()] = e.Time
		}
	}
	db := ready["prod-eu-1:apps/database"]
	require.False(t, db.IsZero())
	for _, c := range []string{"dev-1", "prod-eu-1", "prod-us-1"} {
		s := started[c+":apps/podinfo"]
		assert.False(t, s.Before(db), "podinfo on %s starts after the database on prod-eu-1 is ready", c)
	}
}

func TestFleetMemberFailureIsIsolated(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	plan, err := tf.fleet.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	tf.members["prod-us-1"].SetUnreachable(errors.New("connection refused"))
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "prod-us-1:apps/podinfo")
	assert.Contains(t, err.Error(), "connection refused")
	states := map[string]depgraph.State{}
	for _, it := range rep.Items {
		states[it.Key.Cluster] = it.State
	}
	assert.Equal(t, depgraph.Succeeded, states["dev-1"])
	assert.Equal(t, depgraph.Succeeded, states["prod-eu-1"])
	assert.Equal(t, depgraph.Failed, states["prod-us-1"])

	// The member comes back: a new apply converges to the fault-free end state.
	tf.members["prod-us-1"].SetUnreachable(nil)
	plan, err = tf.fleet.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"podinfo 6.5.0 deployed"}, helmList(t, tf.members["prod-us-1"]))
	assert.Equal(t, int64(4), memberReplicas(t, tf.members["prod-us-1"]))
}

var metav1Duration20ms = metav1.Duration{Duration: 20 * time.Millisecond}

func TestFleetDrift(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	plan, err := tf.fleet.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	// Someone scales the Deployment on prod-eu-1 by hand.
	c := tf.members["prod-eu-1"]
	dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	delete(dep.Object, "status")
	dep.Object["spec"].(map[string]any)["replicas"] = int64(1)
	_, err = c.Update(ctx, dep, "kubectl-edit")
	require.NoError(t, err)

	d, err := tf.fleet.Drift(ctx, false)
	require.NoError(t, err)
	require.Len(t, d.Items, 3)
	drifted := d.Drifted()
	require.Len(t, drifted, 1)
	assert.Equal(t, "prod-eu-1", drifted[0].Key.Cluster)
	assert.Contains(t, d.String(), "prod-eu-1:apps/podinfo: drifted: 1 modified, 0 missing")
	assert.Equal(t, int64(1), fixture.Replicas(t, c), "reporting changes nothing")

	d, err = tf.fleet.Drift(ctx, true)
	require.NoError(t, err)
	assert.Contains(t, d.String(), "prod-eu-1:apps/podinfo: corrected")
	assert.Equal(t, int64(4), fixture.Replicas(t, c), "corrected back to prod's value")
}

// A dependency in a later wave that is already ready from an earlier
// Apply does not block its dependent.
func TestFleetDependencyReadyFromEarlierApply(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	in := appWithDatabase(t)
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	in.Releases[0].Spec.Values["replicaCount"] = 3
	in.Releases[0].Generation = 2
	plan, err = tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves: []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod", Selector: "env=prod"}},
	}})
	require.NoError(t, err, rep.Table())
	for _, it := range rep.Items {
		if it.Key.Cluster == "dev-1" {
			assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, it.Actions)
			assert.Equal(t, reconcile.NextDone, it.Next)
		}
	}
}

// A release whose override fails on a member where it runs stays there:
// the member is a failed member of the plan (a *MemberError), not one the
// release left, so garbage collection does not uninstall it (found by the
// simulation, seed 1 of its second track).
func TestFleetOverrideFailureKeepsRunningRelease(t *testing.T) {
	ctx := context.Background()
	tf := newTestFleet(t, nil)
	plan, err := tf.fleet.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, helmList(t, tf.members["prod-us-1"]))

	failsOnUS := fleetYAML + `---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-us, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {clusterNames: [prod-us-1]}
      overriders:
        plaintext: [{path: /spec/nothing/here, operator: replace, value: x}]
`
	plan, err = tf.fleet.Plan(ctx, decodeInputs(t, failsOnUS))
	require.NoError(t, err)
	var failed []fleet.Key
	for _, e := range plan.PlacementErrors() {
		if me, ok := errors.AsType[*fleet.MemberError](e); ok {
			failed = append(failed, me.Key)
		}
	}
	us := fleet.Key{Cluster: "prod-us-1", Namespace: "apps", Name: "podinfo"}
	assert.Equal(t, []fleet.Key{us}, failed)
	if it, ok := plan.Item(us); ok {
		assert.NotEqual(t, reconcile.ActionUninstall, it.Action, "%s: %s", it.Action, it.Reason)
	}
	_, _ = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	assert.Equal(t, []string{"podinfo 6.5.0 deployed"}, helmList(t, tf.members["prod-us-1"]), "the release still runs where its override failed")
	assert.Len(t, tf.fleet.Inventory(), 3, "its copy stays in the inventory")
}
