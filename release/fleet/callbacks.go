package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/helmfleet/helmfleet/release"
)

// callbacks calls the caller's callbacks of one Apply, Config.Events and
// Rollout.Gate, containing their panics: a panic becomes a
// *release.CallbackPanicError that Apply returns, Events is called no
// more during that Apply, and a panicking Gate halts the rollout as a
// refusal would.
type callbacks struct {
	mu       sync.Mutex // one event at a time
	eventErr error      // Events panicked: no more events
	panics   []error
}

// start forgets the panics of an earlier Apply.
func (cb *callbacks) start() {
	cb.mu.Lock()
	cb.eventErr, cb.panics = nil, nil
	cb.mu.Unlock()
}

// event hands e to events.
func (cb *callbacks) event(events func(Event), e Event) {
	if events == nil {
		return
	}
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.eventErr != nil {
		return
	}
	if err := release.Contain("fleet.Config.Events", func() error {
		events(e)
		return nil
	}); err != nil {
		cb.eventErr = err
		cb.panics = append(cb.panics, fmt.Errorf("event %s: %w", e.Kind, err))
	}
}

// gate asks gate about wave.
func (cb *callbacks) gate(ctx context.Context, gate func(context.Context, WaveReport) error, wave WaveReport) error {
	err := release.Contain("fleet.Rollout.Gate", func() error { return gate(ctx, wave) })
	if errors.Is(err, release.ErrCallbackPanic) {
		cb.mu.Lock()
		cb.panics = append(cb.panics, fmt.Errorf("wave %s: %w", wave.Name, err))
		cb.mu.Unlock()
	}
	return err
}

// finish adds the panics of the Apply to its error.
func (cb *callbacks) finish(err error) error {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if len(cb.panics) == 0 {
		return err
	}
	perr := fmt.Errorf("fleet apply: %w", errors.Join(cb.panics...))
	if err == nil {
		return perr
	}
	return errors.Join(err, perr)
}
