package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// TestUninstallChecksOwnership: as Flux's Uninstall, a Release removes a
// Helm release only when its status history shows it installed it. A
// Release without a snapshot, or whose latest snapshot is not Helm's
// latest record (someone else upgraded the release since), is refused
// with an *OwnershipError, and the Helm release stays.
func TestUninstallChecksOwnership(t *testing.T) {
	ctx := context.Background()
	rec := fixture.Reconciler(t, nil)

	t.Run("no snapshot", func(t *testing.T) {
		c := newHealthyCluster(&health{})
		_, err := rec.Reconcile(ctx, c, fixture.Release())
		require.NoError(t, err)

		other := fixture.Release() // same name, never reconciled
		res, err := rec.Uninstall(ctx, c, other)
		var oe *reconcile.OwnershipError
		require.ErrorAs(t, err, &oe)
		assert.ErrorIs(t, err, reconcile.ErrNoLatest)
		assert.Equal(t, "release apps/podinfo on cluster member1: will not uninstall Helm release podinfo (storage namespace apps): the status history records no release, and storage holds apps/podinfo.v1: no latest snapshot in the status history", err.Error())
		assert.Empty(t, res.Actions)
		assert.Equal(t, []string{"6.5.0 deployed"}, history(t, c), "someone else's release stays")
	})

	t.Run("stale snapshot", func(t *testing.T) {
		c := newHealthyCluster(&health{})
		mine := fixture.Release()
		_, err := rec.Reconcile(ctx, c, mine)
		require.NoError(t, err)
		// Another Release of the same name takes the Helm release over.
		theirs := fixture.Release()
		theirs.Spec.Values = map[string]any{"replicaCount": 3}
		_, err = rec.Reconcile(ctx, c, theirs)
		require.NoError(t, err)

		res, err := rec.Uninstall(ctx, c, mine)
		var oe *reconcile.OwnershipError
		require.ErrorAs(t, err, &oe)
		assert.ErrorIs(t, err, reconcile.ErrReleaseMismatch)
		assert.Equal(t, "apps/podinfo.v2", oe.Latest)
		assert.Equal(t, "apps/podinfo.v1", oe.Recorded)
		assert.Contains(t, err.Error(), "will not uninstall Helm release podinfo (storage namespace apps): release apps/podinfo.v2 in storage was not made by this Release (last observed apps/podinfo.v1)")
		assert.Empty(t, res.Actions)
		assert.Equal(t, "False/UninstallFailed", cond(mine, release.ConditionReleased))
		assert.Equal(t, []string{"6.5.0 superseded", "6.5.0 deployed"}, history(t, c), "the release stays")

		// Its owner uninstalls it.
		_, err = rec.Uninstall(ctx, c, theirs)
		require.NoError(t, err)
		assert.Empty(t, c.Summary())
	})
}
