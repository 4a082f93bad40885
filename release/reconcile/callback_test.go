package reconcile_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values"
)

// A panic of the reconciler's chart getter or values reader fails the
// reconcile at its stage, as their errors do, and names the callback.
func TestReconcilerCallbackPanicsAreStageErrors(t *testing.T) {
	tests := []struct {
		name     string
		cfg      reconcile.Config
		callback string
		reason   string
	}{
		{
			name: "chart getter",
			cfg: reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
				panic("chart cache bug")
			})},
			callback: "reconcile.Config.Charts",
			reason:   release.ReasonArtifactFailed,
		},
		{
			name: "values reader",
			cfg: reconcile.Config{Charts: fixture.Charts(), Values: readerFunc(func(context.Context, values.Kind, string, string) (map[string][]byte, error) {
				panic("values cache bug")
			})},
			callback: "reconcile.Config.Values",
			reason:   release.ReasonValuesError,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := reconcile.New(tt.cfg)
			require.NoError(t, err)
			rel := fixture.Release()
			rel.Spec.ValuesFrom = []release.ValuesReference{{Kind: "ConfigMap", Name: "podinfo-values"}}
			c := memory.New("member1")
			require.NotPanics(t, func() { _, err = rec.Reconcile(context.Background(), c, rel) })
			var se *reconcile.StageError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.reason, se.Reason)
			// Text that came from reading Secrets may be withheld; if
			// not, it names the callback.
			if !errors.Is(err, release.ErrWithheld) {
				var pe *release.CallbackPanicError
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tt.callback, pe.Callback)
			}
			assert.Equal(t, tt.reason, rel.Status.GetCondition(release.ConditionReady).Reason)
			assert.Empty(t, c.Summary())
		})
	}
}
