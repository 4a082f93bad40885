package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// TestFluxBuildMetadataIsTheSameChartVersion: a release Flux installed
// from a HelmChart with valuesFiles records its chart version with the
// HelmChart's generation as build metadata (6.5.0+4). helmfleet resolves
// the repository's 6.5.0 for the same spec: that is the same chart, so a
// takeover is InSync and nothing is upgraded. Other build metadata still
// counts as a change.
func TestFluxBuildMetadataIsTheSameChartVersion(t *testing.T) {
	for _, tc := range []struct {
		name, installed, wanted string
		upgrade                 bool
	}{
		{"flux valuesFiles version taken over", "6.5.0+4", "6.5.0", false},
		{"other build metadata wanted", "6.5.0+4", "6.5.0+5", true},
		{"build metadata added", "6.5.0", "6.5.0+4", true},
		{"other version", "6.5.0+4", "6.5.1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c := memory.New("member1")
			rel := fixture.Release()
			// Flux's install: the repository's chart with the version
			// its HelmChart artifact carries.
			flux := versionedReconciler(t, tc.installed)
			res, err := flux.Reconcile(ctx, c, rel)
			require.NoError(t, err)
			require.Equal(t, []reconcile.Action{reconcile.ActionInstall}, res.Actions)
			require.Equal(t, tc.installed, res.Helm.Chart.Metadata.Version)

			rel.Generation = 2
			rec := versionedReconciler(t, tc.wanted)
			plan := rec.Plan(ctx, c, rel)
			require.NoError(t, plan.Err)
			res, err = rec.Reconcile(ctx, c, rel)
			require.NoError(t, err)
			if !tc.upgrade {
				assert.Equal(t, reconcile.StateInSync, plan.State)
				assert.Empty(t, res.Actions, "no upgrade")
				assert.Equal(t, tc.installed, res.Helm.Chart.Metadata.Version, "the version stays as Flux wrote it")
				assert.Equal(t, 1, res.Helm.Version)
			} else {
				assert.Equal(t, reconcile.StateOutOfSync, plan.State)
				assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
			}
		})
	}
}

// versionedReconciler serves the test chart with its version (only) set
// to version.
func versionedReconciler(t *testing.T, version string) *reconcile.Reconciler {
	t.Helper()
	charts := reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		ch, err := testchart.Load("")
		if err == nil {
			ch.Metadata.Version = version
		}
		return &reconcile.Chart{Chart: ch}, err
	})
	r, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: 2 * time.Millisecond})
	require.NoError(t, err)
	return r
}
