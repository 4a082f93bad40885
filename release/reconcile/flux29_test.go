package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// An explicit server-side apply cannot be honoured by the Helm v3
// engine: the user is told in the plan, the result and the status, and
// the warning goes once the field is unset.
func TestServerSideApplyIsWarnedInStatusAndPlan(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	on := true
	rel.Spec.Install = &release.Install{ServerSideApply: &on}
	want := []string{"spec.install.serverSideApply: true: applied client-side: Helm v3 engine"}

	plan := rec.Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Equal(t, want, plan.Warnings)

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, want, res.Warnings)
	cond := rel.Status.GetCondition(release.ConditionFieldWarnings)
	require.NotNil(t, cond, "the warning is in status")
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, release.ReasonNotActedOn, cond.Reason)
	assert.Equal(t, want[0], cond.Message)

	rel.Spec.Install = nil
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Warnings)
	assert.Nil(t, rel.Status.GetCondition(release.ConditionFieldWarnings))
}

// status.lastAttemptedReleaseActionDuration is how long the install or
// upgrade took, by the reconciler's clock.
func TestLastAttemptedReleaseActionDuration(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tick := func() time.Time { now = now.Add(time.Second); return now }
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), Now: tick, PollInterval: 2 * time.Millisecond})
	require.NoError(t, err)
	rel := fixture.Release()
	res, err := rec.Reconcile(context.Background(), memory.New("member1"), rel)
	require.NoError(t, err)
	require.Equal(t, reconcile.ActionInstall, res.Last())
	d := rel.Status.LastAttemptedReleaseActionDuration
	require.NotNil(t, d)
	assert.Positive(t, d.Duration)
	assert.Equal(t, d, res.Status.LastAttemptedReleaseActionDuration)
}

// actions lists the history as "version action", newest first.
func actions(rel *release.Release) []string {
	var out []string
	for _, s := range rel.Status.History {
		out = append(out, fmt.Sprintf("%d %s", s.Version, s.Action))
	}
	return out
}
