package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
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
