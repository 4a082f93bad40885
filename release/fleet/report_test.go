package fleet_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release/fleet"
)

// TestApplyReportKustomizationWithoutRevision: a Kustomization that
// applied nothing shows "-" as its revision, not a Helm revision 0.
func TestApplyReportKustomizationWithoutRevision(t *testing.T) {
	ctx := context.Background()
	f, _ := oneMemberFleet(t, fixture.Charts(), "GitRepository/flux-system/fleet", repo)
	plan, err := f.Plan(ctx, decodeInputs(t, kustomizationYAML("broken", "./missing", "")+
		placeOn("broken", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere)))
	require.NoError(t, err)
	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	assert.Regexp(t, `dev-1\s+Kustomization/flux-system/broken\s+failed\s+-\s+-\s+member dev-1`, rep.Table())
	assert.NotRegexp(t, `Kustomization/flux-system/broken\s+failed\s+\S+\s+0\s`, rep.Table())
}
