package fleet

import (
	"context"

	"github.com/helmfleet/helmfleet/depgraph"
)

// rolloutState is a rollout's running account as one value: its rules
// (failure budget, bake time, gate, rollback), the failures counted so
// far, and after each wave the decision whether to go on. Only Apply's
// own goroutine uses it, between waves, so it needs no lock.
type rolloutState struct {
	spec     *Rollout // nil: no rollout, the plan applied at once
	failures int
}

// waveDecision is what a rollout decides after a wave.
type waveDecision struct {
	// gateErr is the gate's refusal (or panic).
	gateErr error
	// halt stops the rollout after the wave.
	halt bool
	// rollback rolls the wave's failed and unhealthy members back.
	rollback bool
}

// newRolloutState starts the account of rollout r (nil: none).
func newRolloutState(r *Rollout) *rolloutState { return &rolloutState{spec: r} }

// staged reports whether a wave is followed by a bake, a health check
// and the gate: it is in a rollout and not the last wave.
func (s *rolloutState) staged(last bool) bool { return s.spec != nil && !last }

// bake waits the bake time by clock; the error is ctx's, when it ends
// first.
func (s *rolloutState) bake(ctx context.Context, clock depgraph.Clock) error {
	if s.spec.BakeTime <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-clock.After(s.spec.BakeTime):
		return nil
	}
}

// decide counts the failed and unhealthy members of wave wr against the
// budget, asks the gate (through cb) while the budget holds, and says
// whether the rollout halts after wr (never after the last wave).
func (s *rolloutState) decide(ctx context.Context, cb *callbacks, wr WaveReport, last bool) waveDecision {
	s.failures += wr.Failed + len(wr.Unhealthy)
	if !s.staged(last) {
		return waveDecision{}
	}
	var d waveDecision
	if s.spec.Gate != nil && s.failures <= s.spec.MaxFailures {
		d.gateErr = cb.gate(ctx, s.spec.Gate, wr)
	}
	d.halt = s.failures > s.spec.MaxFailures || d.gateErr != nil
	d.rollback = d.halt && s.spec.RollbackFailed
	return d
}
