package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// TestFleetRolloutNoDoubleRollback: with upgrade remediation retries,
// the reconciler of a member rolls its failed upgrade back itself; a
// halting rollout with RollbackFailed must not roll it back a second
// time, and the report's revision is the one Helm has.
func TestFleetRolloutNoDoubleRollback(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		// rolledBack: the rollout rolls the member back (the reconciler
		// did not).
		rolledBack bool
	}{
		{name: "remediated by the reconciler", retries: 1, rolledBack: false},
		{name: "rolled back by the rollout", retries: 0, rolledBack: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			// Chart 6.5.1 crashes on prod-eu-1 only.
			tf, plan := brokenUpgradeWith(t, func(r *release.Release) {
				r.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: tc.retries}}
			}, "prod-eu-1")
			rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
				Waves:          []fleet.Wave{{Name: "prod-eu", Clusters: []string{"prod-eu-1"}}},
				BakeTime:       time.Millisecond,
				RollbackFailed: true,
			}})
			require.Error(t, err)
			require.NotNil(t, rep)
			assert.True(t, rep.Halted)

			cfg, err := tf.members["prod-eu-1"].HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
			require.NoError(t, err)
			hist, err := cfg.Releases.History("podinfo")
			require.NoError(t, err)
			var rollbacks, latest int
			var got []string
			for _, h := range hist {
				got = append(got, fmt.Sprintf("v%d %s %s %q", h.Version, h.Chart.Metadata.Version, h.Info.Status, h.Info.Description))
				if h.Info.Description == "Rollback to 1" {
					rollbacks++
				}
				latest = max(latest, h.Version)
			}
			var item *fleet.ItemReport
			for i := range rep.Items {
				if rep.Items[i].Key.Cluster == "prod-eu-1" {
					item = &rep.Items[i]
				}
			}
			require.NotNil(t, item)
			remediations := 0
			for _, a := range item.Actions {
				if a == reconcile.ActionRollback {
					remediations++
				}
			}
			assert.Equal(t, tc.rolledBack, remediations == 0, "the reconciler remediated (actions %v)", item.Actions)
			assert.Equal(t, tc.rolledBack, item.RolledBack, "RolledBack")
			assert.Equal(t, 1, rollbacks, "one rollback (actions %v, rolled back by the rollout: %v): %v", item.Actions, item.RolledBack, got)
			assert.Equal(t, latest, item.Revision, "the report's revision is Helm's latest: %v", got)
			last, err := cfg.Releases.Last("podinfo")
			require.NoError(t, err)
			assert.Equal(t, "6.5.0 deployed", last.Chart.Metadata.Version+" "+last.Info.Status.String())
		})
	}
}

// A member whose reconciler rolled its failed upgrade back in an earlier
// apply, and whose next upgrade fails before Helm writes a revision, still
// runs that rollback: a halting rollout with RollbackFailed leaves it
// alone instead of adding a second "Rollback to 1" (found by the
// simulation, seeds 31 and 20). So does a member the rollout rolled back
// itself: the status records that its latest revision was a rollback.
func TestFleetRolloutNoSecondRollbackOfARollback(t *testing.T) {
	for _, n := range []int{1, 0} {
		t.Run(fmt.Sprintf("retries=%d", n), func(t *testing.T) { noSecondRollback(t, n) })
	}
}

func noSecondRollback(t *testing.T, n int) {
	ctx := context.Background()
	retries := func(r *release.Release) {
		r.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: n}}
	}
	tf, plan := brokenUpgradeWith(t, retries, "prod-eu-1")
	opts := fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves:    []fleet.Wave{{Name: "prod-eu", Clusters: []string{"prod-eu-1"}}},
		BakeTime: time.Millisecond, RollbackFailed: true,
	}}
	_, err := tf.fleet.Apply(ctx, plan, opts)
	require.Error(t, err)
	c := tf.members["prod-eu-1"]
	require.Equal(t, []string{"v1 superseded", "v2 failed", "v3 deployed Rollback to 1"}, history(t, c))

	// The next upgrade fails at Helm's storage, before any revision.
	c.SetFaults(memory.FailNth(memory.OpStorageCreate, nil, 1, errors.New("injected")))
	in := decodeInputs(t, strings.Replace(fleetYAML, "value: \"6.6.0-rc.1\"", "value: \"6.5.0\"", 1))
	for _, r := range in.Releases {
		// A new generation: the Remediated condition of the last one
		// is gone, the rollback still runs.
		r.Generation = 2
		r.Spec.Values = map[string]any{"replicaCount": 3}
		r.Spec.Install = nil
		r.Spec.Chart.Spec.Version = "6.5.1"
		r.Spec.Timeout = &metav1Duration20ms
		retries(r)
	}
	plan, err = tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	rep, err := tf.fleet.Apply(ctx, plan, opts)
	require.Error(t, err)
	assert.True(t, rep.Halted)
	for _, it := range rep.Items {
		if it.Key.Cluster == "prod-eu-1" {
			assert.False(t, it.RolledBack, "%v", it.Err)
		}
	}
	assert.Equal(t, []string{"v1 superseded", "v2 failed", "v3 deployed Rollback to 1"}, history(t, c))
}

// history lists podinfo's Helm revisions on c: version, status and, for a
// rollback, its description.
func history(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	hist, err := c.Storage("apps").History("podinfo")
	require.NoError(t, err)
	sort.Slice(hist, func(i, j int) bool { return hist[i].Version < hist[j].Version })
	var out []string
	for _, h := range hist {
		s := fmt.Sprintf("v%d %s", h.Version, h.Info.Status)
		if strings.HasPrefix(h.Info.Description, "Rollback") {
			s += " " + h.Info.Description
		}
		out = append(out, s)
	}
	return out
}
