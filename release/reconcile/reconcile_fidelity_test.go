package reconcile_test

// Divergences from Flux helm-controller v1.6.3 found while porting its
// suite (issue 16), each fixed and pinned here end to end. The pure cases
// are in the peer suite (peer_flux_test.go).

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Flux atomic_release.go: with RetryOnFailure a failed release is
// upgraded again after the retry interval, without a retry limit (it is
// "flux reconcile hr --force" with retries 0).
func TestRetryOnFailureHasNoRetryLimit(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "slow"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Upgrade = &release.Upgrade{Strategy: &release.UpgradeStrategy{Name: release.ActionStrategyRetryOnFailure, RetryInterval: &metav1.Duration{Duration: time.Minute}}}
	h.notReady = nil
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	h.notReady = map[string]string{"Deployment": "slow"}
	rel.Spec.Values = map[string]any{"replicaCount": 3}
	rel.Generation = 2
	for i := 1; i <= 4; i++ {
		res, err := rec.Reconcile(ctx, c, rel)
		var stalled *reconcile.StalledError
		require.False(t, errors.As(err, &stalled), "attempt %d stalled: %v", i, err)
		var ae *reconcile.ActionError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions, "attempt %d", i)
		assert.Equal(t, reconcile.NextRequeue, res.Next)
		assert.Equal(t, time.Minute, res.RequeueAfter)
		assert.Equal(t, int64(i), rel.Status.UpgradeFailures)
		assert.Equal(t, "True/ProgressingWithRetry", cond(rel, release.ConditionReconciling))
	}
	assert.LessOrEqual(t, len(rel.Status.History), 5, "RetryOnFailure keeps the newest 5 snapshots")

	h.notReady = nil
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Equal(t, "True/UpgradeSucceeded", cond(rel, release.ConditionReleased))
}

// Flux snapshot_types.go HasBeenTested: a run whose hooks did not all
// finish is not a test result; the release is tested again.
func TestIncompleteTestRunIsUntested(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Test = &release.Test{Enable: true}
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	require.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionTest}, res.Actions)

	for _, phase := range []string{"", release.HookPhaseRunning, "Unknown"} {
		rel.Status.History.Latest().SetTestHooks(map[string]*release.TestHookStatus{"podinfo-test-connection": {Phase: phase}})
		res, err = rec.Reconcile(ctx, c, rel)
		require.NoError(t, err)
		assert.Equal(t, reconcile.StateInSync, res.State)
		assert.Equal(t, []reconcile.Action{reconcile.ActionTest}, res.Actions, "phase %q", phase)
	}
}

// Flux unlock.go: the history records the unlock of a revision it
// observed; a pending revision someone else wrote stays out of it, so the
// release is adopted (Unmanaged → upgrade) with a fresh history.
func TestUnlockKeepsForeignPendingOutOfHistory(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	store := c.Storage("apps")
	last, err := store.Last("podinfo")
	require.NoError(t, err)
	stuck := *last
	stuck.Version = 2
	stuck.Info = &helmrelease.Info{Status: helmrelease.StatusPendingUpgrade}
	require.NoError(t, store.Create(&stuck))

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUnlock, reconcile.ActionUpgrade}, res.Actions)
	var got []string
	for _, s := range rel.Status.History {
		got = append(got, s.FullReleaseName()+" "+s.Status)
	}
	assert.Equal(t, []string{"apps/podinfo.v3 deployed"}, got)
}

// Flux atomic_release.go actionForState (InSync): Released turns True when
// the release is found in sync after a failure that is no more, so Ready
// and Released agree.
func TestInSyncSetsReleasedWithReady(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "slow"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Install = &release.Install{Strategy: &release.InstallStrategy{Name: release.ActionStrategyRetryOnFailure}}
	_, err := rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	require.Equal(t, "False/InstallFailed", cond(rel, release.ConditionReleased))

	// The Deployment becomes ready on its own; the retry upgrades...
	h.notReady = nil
	_, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	// ...and a release found in sync whose Released is stale says so.
	rel.Status.SetCondition(metav1.Condition{Type: release.ConditionReleased, Status: metav1.ConditionFalse, Reason: release.ReasonUpgradeFailed, Message: "stale"})
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions)
	assert.Equal(t, "True/UpgradeSucceeded", cond(rel, release.ConditionReady), "Ready takes Released's reason, as in Flux")
	assert.Equal(t, "True/UpgradeSucceeded", cond(rel, release.ConditionReleased))
}

// fluxcd/pkg apis/meta HandleAnnotationRequest: forceAt and resetAt count
// only when they repeat reconcile.fluxcd.io/requestedAt.
func TestRequestsMustMatchRequestedAt(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	rel.Annotations = map[string]string{release.ForceRequestAnnotation: "1"}
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions, "a force request without requestedAt is not honoured")
	assert.Equal(t, "1", rel.Status.LastHandledForceAt, "but it is recorded")

	rel.Annotations = map[string]string{release.ReconcileRequestAnnotation: "2", release.ForceRequestAnnotation: "2"}
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Equal(t, "2", rel.Status.LastHandledReconcileAt)

	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions, "handled once")
}

// Flux uninstall_remediation.go / rollback_remediation.go: a remediation
// that fails counts as a failure (status.failures) and says so in
// Remediated.
func TestFailedUninstallRemediationCounts(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "crash loop"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Install = &release.Install{Remediation: &release.InstallRemediation{Retries: 1}}
	c.SetFaults(memory.FailNth(memory.OpHelmDelete, nil, 1, errors.New("admission webhook denied the delete")))

	res, err := rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionUninstall}, res.Actions)
	assert.Equal(t, "False/UninstallFailed", cond(rel, release.ConditionRemediated))
	assert.Equal(t, int64(1), rel.Status.InstallFailures)
	assert.Equal(t, int64(2), rel.Status.Failures, "the install and the uninstall that remediated it")
	assert.Equal(t, reconcile.NextRequeue, res.Next)
}
