package helmv4_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// A migration plan says, for a release Helm v3 installed, which objects
// the Helm v4 engine renders differently (podinfo's Deployment: Helm v4
// leaves out the null resources.limits of the chart's values, which Helm
// v3 renders) and how it would apply them: auto
// keeps the release client-side, enabled moves it to server-side, and a
// member where it is not installed yet is installed server-side.
func TestPlanMigration(t *testing.T) {
	cfg := reconcile.Config{
		Charts: reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
			ch, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
			return &reconcile.Chart{Chart: ch}, err
		}),
		PollInterval: 2 * time.Millisecond,
	}
	c := memory.New("member")
	rel := podinfo()
	reconcileOK(t, reconciler(t, nil), c, rel)

	rel.Spec.Values["replicaCount"] = 2
	rel.Generation++
	m, err := helmv4.PlanMigration(t.Context(), cfg, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionUpgrade, m.V3.Action)
	assert.Equal(t, reconcile.ActionUpgrade, m.V4.Action)
	assert.Equal(t, []string{"differs: Deployment/apps/podinfo"}, m.Objects)
	assert.Equal(t, "csa", m.ApplyMethodNow)
	assert.Equal(t, "csa", m.ApplyMethodNext, "auto keeps the revision's method")

	rel.Spec.Upgrade = &release.Upgrade{ServerSideApply: release.ServerSideApplyEnabled}
	m, err = helmv4.PlanMigration(t.Context(), cfg, c, rel)
	require.NoError(t, err)
	assert.Equal(t, "ssa", m.ApplyMethodNext)

	m, err = helmv4.PlanMigration(t.Context(), cfg, memory.New("new"), rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionInstall, m.V4.Action)
	assert.Equal(t, "", m.ApplyMethodNow)
	assert.Equal(t, "ssa", m.ApplyMethodNext)
}
