package reconcile_test

import (
	"context"
	"errors"
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

// TestUninstallingIsNoDeadEnd runs Flux's "install failure with
// remediation" on its chart, whose failing hook is also a pre-delete
// hook: the uninstall remediating the failed install fails too and
// leaves the release 'uninstalling'. Every later reconcile must stall
// with a reason or make progress, within a bounded number of runs, never
// requeue at once forever; once the hook is fixed and the spec changes,
// the release becomes ready.
func TestUninstallingIsNoDeadEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		retries int
		// stalled is the reason the release stalls with, once it does.
		stalled string
	}{
		{name: "out of retries", retries: 0, stalled: release.ReasonRetriesExceeded},
		{name: "retries left", retries: 1, stalled: release.ReasonUninstallFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := &scriptedHealth{broken: [][2]string{{"0.2.0", "Pod"}}}
			c := memory.New("member1", memory.WithHealth(h.fn))
			rec, err := reconcile.New(reconcile.Config{Charts: peerCharts(t), PollInterval: 2 * time.Millisecond})
			require.NoError(t, err)
			rel := fixture.Release()
			rel.Spec.Timeout = &metav1.Duration{Duration: 50 * time.Millisecond}
			rel.Spec.Chart.Spec.Version = failingHookVersion
			rel.Spec.Install = &release.Install{Remediation: &release.InstallRemediation{Retries: tc.retries, RemediateLastFailure: ptr(true)}}
			rel.Spec.Uninstall = &release.Uninstall{KeepHistory: true}

			// Each reconcile the caller would run at once (Next requeue
			// without delay) is run; a release that has not stalled after
			// bound runs is a dead end.
			const bound = 6
			var stalled *reconcile.StalledError
			for i := 0; i < bound; i++ {
				res, err := rec.Reconcile(ctx, c, rel)
				if err != nil {
					assert.NotContains(t, err.Error(), "cannot determine state", "run %d", i+1)
				}
				if res.Next == reconcile.NextStalled {
					require.ErrorAs(t, err, &stalled)
					break
				}
				require.Equal(t, reconcile.NextRequeue, res.Next, "run %d: %v", i+1, err)
			}
			require.NotNil(t, stalled, "no Stalled after %d reconciles: a dead end", bound)
			assert.Equal(t, tc.stalled, stalled.Reason, "%v", stalled)
			assert.Equal(t, "True/"+tc.stalled, cond(rel, release.ConditionStalled))
			assert.Contains(t, cond(rel, release.ConditionReady), "False/")

			// Stalled again on the next reconcile, with nothing run twice.
			res, err := rec.Reconcile(ctx, c, rel)
			require.ErrorAs(t, err, &stalled)
			assert.Equal(t, reconcile.NextStalled, res.Next)

			// The way out: the hook is fixed and the spec changes (with
			// install.replace, as Helm installs over the record that
			// uninstall.keepHistory keeps only then).
			h.broken = nil
			rel.Generation++
			rel.Spec.Install.Replace = true
			for i := 0; i < bound; i++ {
				res, err = rec.Reconcile(ctx, c, rel)
				if res.Next == reconcile.NextDone {
					break
				}
				var se *reconcile.StalledError
				require.False(t, errors.As(err, &se), "stalled after the fix: %v", err)
			}
			require.NoError(t, err)
			assert.Equal(t, reconcile.NextDone, res.Next)
			last, err := c.Storage("apps").Last("podinfo")
			require.NoError(t, err)
			assert.Equal(t, "deployed", last.Info.Status.String())
		})
	}
}
