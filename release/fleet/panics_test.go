package fleet_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// panicFleet is newTestFleet's three members with events going to
// events.
func panicFleet(t *testing.T, events func(fleet.Event)) *fleet.Fleet {
	t.Helper()
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"dev-1", "dev"}, {"prod-eu-1", "prod"}, {"prod-us-1", "prod"}} {
		members = append(members, release.Member{Cluster: memory.New(m.name), Facts: policy.Cluster{
			Labels: map[string]string{"env": m.env, "tier": "apps"},
		}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec, Events: events})
	require.NoError(t, err)
	return f
}

// A panic of Config.Events, called from the goroutines of Apply, does not
// reach the caller or end the process: Apply goes on without events and
// returns the panic.
func TestFleetEventsPanicIsApplysError(t *testing.T) {
	tests := []struct {
		name string
		kind fleet.EventKind
	}{
		{name: "on Apply's goroutine", kind: fleet.EventPlanned},
		{name: "on a reconcile's goroutine", kind: fleet.EventStarted},
		{name: "on an uninstall's goroutine", kind: fleet.EventUninstalled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var (
				mu    sync.Mutex
				after int
				armed = tt.kind != fleet.EventUninstalled
				fired bool
			)
			f := panicFleet(t, func(e fleet.Event) {
				mu.Lock()
				defer mu.Unlock()
				if fired {
					after++
				}
				if armed && e.Kind == tt.kind && !fired {
					fired = true
					panic("event sink bug")
				}
			})
			in := decodeInputs(t, fleetYAML)
			plan, err := f.Plan(ctx, in)
			require.NoError(t, err)
			if tt.kind == fleet.EventUninstalled {
				// Install first, then remove the release everywhere.
				_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
				require.NoError(t, err)
				plan, err = f.Plan(ctx, fleet.Inputs{Policies: in.Policies})
				require.NoError(t, err)
				mu.Lock()
				armed = true
				mu.Unlock()
			}
			var rep *fleet.ApplyReport
			require.NotPanics(t, func() { rep, err = f.Apply(ctx, plan, fleet.ApplyOptions{}) })
			var pe *release.CallbackPanicError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "fleet.Config.Events", pe.Callback)
			assert.ErrorContains(t, err, "fleet apply: event "+string(tt.kind)+": fleet.Config.Events panicked: event sink bug")
			assert.Zero(t, after, "no event after the panic")
			require.NotNil(t, rep)
			for _, it := range rep.Items {
				assert.Equal(t, depgraph.Succeeded, it.State, "%s: the apply went on", it.Key)
			}

			// The next Apply has its events again.
			mu.Lock()
			fired, armed, after = false, false, 0
			mu.Unlock()
			_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.NoError(t, err)
		})
	}
}

// A panic of Rollout.Gate halts the rollout as a refusal does; the wave
// report and Apply's error carry it.
func TestFleetGatePanicHaltsRollout(t *testing.T) {
	ctx := context.Background()
	f := panicFleet(t, nil)
	plan, err := f.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	var rep *fleet.ApplyReport
	require.NotPanics(t, func() {
		rep, err = f.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
			Waves: []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod", Selector: "env=prod"}},
			Gate:  func(context.Context, fleet.WaveReport) error { panic("gate bug") },
		}})
	})
	require.Error(t, err)
	var pe *release.CallbackPanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "fleet.Rollout.Gate", pe.Callback)
	assert.ErrorContains(t, err, "rollout halted after wave dev")
	assert.ErrorContains(t, err, "fleet apply: wave dev: fleet.Rollout.Gate panicked: gate bug")
	require.True(t, rep.Halted)
	require.Len(t, rep.Waves, 1)
	require.ErrorAs(t, rep.Waves[0].GateErr, &pe, "the wave report says why it halted")
}

// panicky is a member backend with a bug: once broken, every call of
// Helm's configuration panics.
type panicky struct {
	*memory.Cluster
	broken *atomic.Bool
}

func (p panicky) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	if p.broken.Load() {
		panic("member backend bug")
	}
	return p.Cluster.HelmConfig(ctx, scope)
}

// Plan and Drift work on members on goroutines of their own: a panic of
// a member's backend fails that member's items, and the process goes on.
func TestFleetMemberPanicFailsItsItems(t *testing.T) {
	ctx := context.Background()
	var broken atomic.Bool
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"dev-1", "dev"}, {"prod-eu-1", "prod"}} {
		var c release.Cluster = memory.New(m.name)
		if m.name == "prod-eu-1" {
			c = panicky{Cluster: c.(*memory.Cluster), broken: &broken}
		}
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env, "tier": "apps"}}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
	require.NoError(t, err)
	in := decodeInputs(t, fleetYAML)
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	broken.Store(true)
	check := func(t *testing.T, what string, err error) {
		t.Helper()
		var pe *release.CallbackPanicError
		require.ErrorAs(t, err, &pe, what)
		assert.Equal(t, "release.Cluster of member prod-eu-1", pe.Callback)
		assert.ErrorContains(t, err, "member backend bug")
	}
	require.NotPanics(t, func() { plan, err = f.Plan(ctx, in) })
	require.NoError(t, err)
	require.Len(t, plan.Errors, 1)
	check(t, "plan", plan.Errors[0])
	var rep *fleet.DriftReport
	require.NotPanics(t, func() { rep, err = f.Drift(ctx, false) })
	check(t, "drift", err)
	for _, it := range rep.Items {
		if it.Key.Cluster == "dev-1" {
			assert.NoError(t, it.Err, "the other member is checked")
		}
	}
}
