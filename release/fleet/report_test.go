package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
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

// TestKustomizationErrorsNameItOnce: an error of the Kustomization
// reconciler, which names the Kustomization itself, names it once in the
// plan and in the apply report, after the member.
func TestKustomizationErrorsNameItOnce(t *testing.T) {
	ctx := context.Background()
	f, c := oneMemberFleet(t, fixture.Charts(), "GitRepository/flux-system/fleet", repo)
	in := decodeInputs(t, kustomizationYAML("apps", "./apps", "")+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	in.Kustomizations[0].Spec.SourceRef.Name = "gone"
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Len(t, plan.Errors, 1)
	want := "member dev-1: Kustomization flux-system/apps: source GitRepository/flux-system/gone: "
	assert.True(t, strings.HasPrefix(plan.Errors[0].Error(), want), plan.Errors[0].Error())
	assert.Equal(t, 1, strings.Count(plan.Errors[0].Error(), "flux-system/apps"), plan.Errors[0].Error())
	assert.Equal(t, 1, strings.Count(plan.Errors[0].Error(), "GitRepository/flux-system/gone"), plan.Errors[0].Error())
	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	require.Len(t, rep.Items, 1)
	assert.Equal(t, plan.Errors[0].Error(), rep.Items[0].Err.Error())

	// An apply that fails on the member.
	in.Kustomizations[0].Spec.SourceRef.Name = "fleet"
	plan, err = f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	c.SetFaults(func(op memory.Operation, _ release.ObjectRef) error {
		if op == memory.OpApply {
			return errors.New("etcd is full")
		}
		return nil
	})
	rep, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	require.Len(t, rep.Items, 1)
	msg := rep.Items[0].Err.Error()
	assert.True(t, strings.HasPrefix(msg, "member dev-1: Kustomization flux-system/apps: cluster dev-1: apply v1 ConfigMap apps/app-config: "), msg)
	assert.Equal(t, 1, strings.Count(msg, "flux-system/apps"), msg)
	assert.Equal(t, 1, strings.Count(msg, "ConfigMap apps/app-config"), msg)
	assert.Contains(t, msg, "etcd is full")
}
