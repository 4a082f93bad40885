package fleet_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// memberState is what a user sees on one member: its objects, reduced to
// what they declare, and its Helm releases as helm ls shows them.
type memberState struct {
	Objects  map[string]map[string]any
	Releases []string
}

// endState returns the state of every member, without what the API
// server makes up (uid, resourceVersion, managedFields, creation time,
// generation) and without Helm's revision numbers, which a failed and
// repeated action moves on: two runs that converged compare equal.
func endState(t *testing.T, members map[string]*memory.Cluster) map[string]memberState {
	t.Helper()
	out := map[string]memberState{}
	for name, c := range members {
		st := memberState{Objects: map[string]map[string]any{}, Releases: helmLs(t, c)}
		for _, o := range c.Objects() {
			norm := map[string]any{"labels": o.GetLabels()}
			for _, field := range []string{"spec", "data", "stringData"} {
				if v, ok := o.Object[field]; ok {
					norm[field] = v
				}
			}
			st.Objects[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = norm
		}
		out[name] = st
	}
	return out
}

// helmLs is helm ls -a: the newest revision of every release in
// namespace apps, whatever its status (helmList leaves out pending ones),
// as "name chart-version status".
func helmLs(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	l := action.NewList(cfg)
	l.All = true
	l.SetStateMask()
	rels, err := l.Run()
	require.NoError(t, err)
	var out []string
	for _, r := range rels {
		out = append(out, r.Name+" "+r.Chart.Metadata.Version+" "+r.Info.Status.String())
	}
	return out
}

// pendingReleases lists the releases of members left in a pending-*
// status, as "member: name version status".
func pendingReleases(t *testing.T, members map[string]*memory.Cluster) []string {
	t.Helper()
	var out []string
	for name, c := range members {
		for _, r := range helmLs(t, c) {
			if strings.Contains(r, "pending-") {
				out = append(out, name+": "+r)
			}
		}
	}
	sort.Strings(out)
	return out
}

func isKind(kind string) func(release.ObjectRef) bool {
	return func(ref release.ObjectRef) bool { return ref.Kind == kind }
}

// errInjected is the injected failure. Its text matters: client-go
// retries a GET that fails with "connection reset by peer" by itself.
var errInjected = errors.New("apiserver overloaded")

// retriedYAML is fleetYAML with remediation retries: with Flux's default
// of none, a failed install or upgrade stalls the release until its spec
// changes or a reset is requested, and no Apply continues it.
var retriedYAML = strings.Replace(fleetYAML, "  values:\n    replicaCount: 2",
	"  install: {remediation: {retries: 3}}\n  upgrade: {remediation: {retries: 3}}\n  values:\n    replicaCount: 2", 1)

// fleetSteps are the inputs of successive Applies of the per-cluster
// fleet: install; an upgrade that changes every member's values and drops
// the Ingress (Helm deletes it); a placement that excludes member (its
// release is uninstalled there).
func fleetSteps(t *testing.T, member string) []fleet.Inputs {
	t.Helper()
	upgraded := strings.Replace(retriedYAML, "replicaCount: 2", "replicaCount: 3\n    ingress: {enabled: false}", 1)
	upgraded = strings.Replace(upgraded, "merge: {replicaCount: 4}", "merge: {replicaCount: 5}", 1)
	gone := strings.Replace(upgraded, "    clusterAffinity:\n", "    clusterAffinity:\n      exclude: ["+member+"]\n", 1)
	return []fleet.Inputs{decodeInputs(t, retriedYAML), decodeInputs(t, upgraded), decodeInputs(t, gone)}
}

// applyInputs plans and applies in on tf.
func applyInputs(ctx context.Context, t *testing.T, tf *testFleet, in fleet.Inputs) (*fleet.ApplyReport, error) {
	t.Helper()
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	return tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
}

// fault is one injected failure: at which step, of which operation.
type fault struct {
	name string
	// step is the index of the Apply (or reconcile) that gets the fault.
	step  int
	op    memory.Operation
	match func(release.ObjectRef) bool
	// tolerated faults are retried inside the call: the run succeeds.
	tolerated bool
	// every fails every matching call, not only the first.
	every bool
	// hidden: Helm logs the cause and returns an error without it, which
	// still names the member and the release.
	hidden bool
}

func (f fault) fault() memory.Fault {
	if !f.every {
		return memory.FailNth(f.op, f.match, 1, errInjected)
	}
	return func(op memory.Operation, ref release.ObjectRef) error {
		if op == f.op && (f.match == nil || f.match(ref)) {
			return errInjected
		}
		return nil
	}
}

var fleetMembers = []string{"dev-1", "prod-eu-1", "prod-us-1"}

// A member that fails one call fails only its own part, with an error
// that names it; once the fault is gone, one more Plan and Apply of the
// same inputs leaves the fleet as a run that never failed.
func TestFleetFaultsConverge(t *testing.T) {
	faults := []fault{
		{name: "helm create of the Deployment", step: 0, op: memory.OpHelmCreate, match: isKind("Deployment")},
		{name: "helm read of the Service before install", step: 0, op: memory.OpHelmGet, match: isKind("Service")},
		{name: "get while waiting for the Deployment", step: 0, op: memory.OpGet, match: isKind("Deployment"), tolerated: true},
		{name: "helm update of the Deployment", step: 1, op: memory.OpHelmUpdate, match: isKind("Deployment")},
		{name: "helm delete of the dropped Ingress", step: 1, op: memory.OpHelmDelete, match: isKind("Ingress")},
		{name: "helm delete in the uninstall of a release no longer placed", step: 2, op: memory.OpHelmDelete, match: isKind("Deployment"), hidden: true},
		{name: "write of the deployed record", step: 0, op: memory.OpStorageUpdate, tolerated: true},
		{name: "every write of a release record's status", step: 0, op: memory.OpStorageUpdate, every: true},
	}
	ctx := context.Background()
	forEachFault(t, faults, fleetMembers, func(t *testing.T, f fault, member string) {
		steps := fleetSteps(t, member)[:f.step+1]
		ref := newTestFleet(t, nil)
		for _, in := range steps {
			_, err := applyInputs(ctx, t, ref, in)
			require.NoError(t, err)
		}
		want := endState(t, ref.members)

		tf := newTestFleet(t, nil)
		for _, in := range steps[:f.step] {
			_, err := applyInputs(ctx, t, tf, in)
			require.NoError(t, err)
		}
		tf.members[member].SetFaults(f.fault())
		rep, err := applyInputs(ctx, t, tf, steps[f.step])
		failed := member
		if f.tolerated {
			require.NoError(t, err)
			failed = ""
		} else {
			require.Error(t, err)
			assertNamesOnly(t, err, member, f.op, f.hidden)
		}
		for _, it := range rep.Items {
			wantState := depgraph.Succeeded
			if it.Key.Cluster == failed {
				wantState = depgraph.Failed
			}
			assert.Equal(t, wantState, it.State, it.Key.String())
			if it.State == depgraph.Succeeded && !slices.Contains(it.Actions, reconcile.ActionUninstall) {
				assertDeployed(t, tf.members[it.Key.Cluster])
			}
		}

		tf.members[member].SetFaults(nil)
		_, err = applyInputs(ctx, t, tf, steps[f.step])
		require.NoError(t, err, "the next apply continues from where the failed one stopped")
		assert.Equal(t, want, endState(t, tf.members))
		assert.Empty(t, pendingReleases(t, tf.members))
	})
}

// forEachFault runs body as a subtest per fault and member.
func forEachFault(t *testing.T, faults []fault, members []string, body func(t *testing.T, f fault, member string)) {
	for _, f := range faults {
		for _, member := range members {
			t.Run(f.name+"/"+member, func(t *testing.T) { body(t, f, member) })
		}
	}
}

// assertDeployed checks that every release on c is deployed, as a
// succeeded item says.
func assertDeployed(t *testing.T, c *memory.Cluster) {
	t.Helper()
	ls := helmLs(t, c)
	assert.NotEmpty(t, ls, c.Name())
	for _, r := range ls {
		assert.True(t, strings.HasSuffix(r, " deployed"), "%s: %s", c.Name(), r)
	}
}

// assertNamesOnly checks that err is the injected fault of op on member,
// named as such, and names no other member.
func assertNamesOnly(t *testing.T, err error, member string, op memory.Operation, hidden bool) {
	t.Helper()
	assert.Contains(t, err.Error(), member+":apps/podinfo")
	assert.Contains(t, err.Error(), "cluster "+member)
	if !hidden {
		assert.ErrorIs(t, err, errInjected)
		var fe *memory.FaultError
		if assert.ErrorAs(t, err, &fe) {
			assert.Equal(t, member, fe.Cluster)
			assert.Equal(t, op, fe.Op)
		}
		assert.Contains(t, err.Error(), "cluster "+member+": "+string(op))
	}
	for _, other := range fleetMembers {
		if other != member {
			assert.NotContains(t, err.Error(), other, "only %s's part fails", member)
		}
	}
}

// distSteps are the releases of successive reconciles of the rendered-
// manifest fleet, placed on all three members: install; an upgrade that
// changes the ConfigMap and drops the Ingress (pruned from every member).
// They retry a failed action rather than remediate it: the Distributor's
// release is one Helm release, and remediating it (uninstall after a
// failed install, rollback after a failed upgrade) would undo the members
// that did not fail.
func distSteps() []*release.Release {
	install := fixture.DistRelease()
	retry := &release.ActionStrategy{Name: release.ActionStrategyRetryOnFailure}
	install.Spec.Install = &release.Install{Strategy: retry, Remediation: &release.InstallRemediation{Retries: 3}}
	install.Spec.Upgrade = &release.Upgrade{Strategy: retry, Remediation: &release.UpgradeRemediation{Retries: 3}}
	upgrade := install.DeepCopy()
	upgrade.Generation++
	upgrade.Spec.Values["ui"] = map[string]any{"message": "v2"}
	upgrade.Spec.Values["ingress"] = map[string]any{"enabled": false}
	return []*release.Release{install, upgrade}
}

// everyMemberPolicies is fixture.DistributorPolicies placing on m3 too, with weight 1.
var everyMemberPolicies = strings.Replace(strings.Replace(fixture.DistributorPolicies,
	"labelSelector: {matchLabels: {env: prod}}", "clusterNames: [m1, m2, m3]", 1),
	"          - {targetCluster: {clusterNames: [m2]}, weight: 2}\n",
	"          - {targetCluster: {clusterNames: [m2]}, weight: 2}\n          - {targetCluster: {clusterNames: [m3]}, weight: 1}\n", 1)

var distMembers = []string{"m1", "m2", "m3"}

// distClusters is the hub and the members of f, for endState.
func distClusters(f *fixture.DistFleet) map[string]*memory.Cluster {
	out := map[string]*memory.Cluster{"hub": f.Hub}
	for name, c := range f.Members {
		out[name] = c
	}
	return out
}

// reconcileSteps reconciles each of rels in turn, each from a copy.
func reconcileSteps(ctx context.Context, t *testing.T, rec *reconcile.Reconciler, f *fixture.DistFleet, rels []*release.Release) {
	t.Helper()
	for _, rel := range rels {
		_, err := rec.Reconcile(ctx, f.Dist, rel.DeepCopy())
		require.NoError(t, err)
	}
}

// The same for the rendered-manifest Distributor: a member that fails one
// call fails only its part of the reconcile, named in the error; the
// next reconcile of the same release leaves hub and members as a run
// that never failed.
func TestDistributorFaultsConverge(t *testing.T) {
	faults := []fault{
		{name: "apply of the Deployment", step: 0, op: memory.OpApply, match: isKind("Deployment")},
		{name: "get of the namespace", step: 0, op: memory.OpGet, match: isKind("Namespace")},
		{name: "apply of the ConfigMap in an upgrade", step: 1, op: memory.OpApply, match: isKind("ConfigMap")},
		{name: "list of the inventory", step: 1, op: memory.OpList, match: isKind("Ingress")},
		{name: "delete of the dropped Ingress in the prune", step: 1, op: memory.OpDelete, match: isKind("Ingress")},
	}
	ctx := context.Background()
	forEachFault(t, faults, distMembers, func(t *testing.T, f fault, member string) {
		steps := distSteps()[:f.step+1]
		ref := fixture.NewDistFleet(t, everyMemberPolicies)
		reconcileSteps(ctx, t, fixture.Reconciler(t, nil), ref, steps)
		want := endState(t, distClusters(ref))

		df := fixture.NewDistFleet(t, everyMemberPolicies)
		rec := fixture.Reconciler(t, nil)
		reconcileSteps(ctx, t, rec, df, steps[:f.step])
		df.Members[member].SetFaults(f.fault())
		rel := steps[f.step].DeepCopy()
		_, err := rec.Reconcile(ctx, df.Dist, rel)
		require.Error(t, err)
		assert.ErrorIs(t, err, errInjected)
		assert.Contains(t, err.Error(), "member "+member+": ")
		assert.Contains(t, err.Error(), "cluster "+member+": "+string(f.op))
		for _, other := range distMembers {
			if other != member {
				assert.NotContains(t, err.Error(), "member "+other, "only %s's part fails", member)
				assert.Equal(t, want[other].Objects, endState(t, map[string]*memory.Cluster{other: df.Members[other]})[other].Objects,
					"%s got its part", other)
			}
		}

		df.Members[member].SetFaults(nil)
		_, err = rec.Reconcile(ctx, df.Dist, rel)
		require.NoError(t, err, "the next reconcile continues from where the failed one stopped")
		assert.Equal(t, want, endState(t, distClusters(df)))
	})
}

// A cancelled Apply returns promptly with context.Canceled, and leaves
// every release in a state the next Plan and Apply continue from: no
// release stays pending, and the fleet ends as a run never cancelled.
func TestFleetCancelledApplyConverges(t *testing.T) {
	tests := []struct {
		name string
		yaml string
	}{
		{
			name: "default remediation",
			yaml: fleetYAML,
		},
		{
			name: "remediation retries",
			yaml: retriedYAML,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := dependentApp(t, tt.yaml)
			ref := newTestFleet(t, nil)
			_, err := applyInputs(context.Background(), t, ref, in)
			require.NoError(t, err)
			want := endState(t, ref.members)

			// No podinfo Deployment becomes ready, and the first look at
			// one cancels the Apply: without the cancel, Helm would wait
			// for the release's timeout (5m).
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			stuck := func(o *unstructured.Unstructured) memory.Health {
				if o.GetKind() == "Deployment" && o.GetName() == "podinfo" {
					once.Do(cancel)
					return memory.Health{Message: "0 replicas available"}
				}
				return memory.Health{Ready: true}
			}
			health := map[string]memory.HealthFunc{}
			for _, m := range fleetMembers {
				health[m] = stuck
			}
			tf := newTestFleet(t, health)
			plan, err := tf.fleet.Plan(ctx, in)
			require.NoError(t, err)
			start := time.Now()
			rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Less(t, time.Since(start), 10*time.Second, "Apply returns promptly once cancelled")
			require.NotNil(t, rep)
			for _, m := range fleetMembers {
				tf.members[m].SetHealth(nil)
			}

			_, err = applyInputs(context.Background(), t, tf, in)
			assert.Empty(t, pendingReleases(t, tf.members), "the next apply unlocks what the cancel left pending")
			require.NoError(t, err, "the next apply continues from where the cancelled one stopped")
			assert.Equal(t, want, endState(t, tf.members), "cancelled apply: %s", rep.Table())
		})
	}
}

// dependentApp is appWithDatabase over the release YAML y.
func dependentApp(t *testing.T, y string) fleet.Inputs {
	t.Helper()
	in := decodeInputs(t, y+databaseYAML)
	for _, r := range in.Releases {
		if r.Name == "podinfo" {
			r.Spec.DependsOn = []release.DependencyReference{{Name: "database"}}
		}
	}
	return in
}
