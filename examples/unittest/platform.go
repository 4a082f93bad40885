package unittest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/helmfleet/helmfleet/release/fleet"
)

// Labels the team puts on its member clusters.
const (
	// EnvLabel is dev or prod.
	EnvLabel = "env"
	// CanaryLabel marks the prod cluster that takes a change first.
	CanaryLabel = "canary"
)

// Waves is the team's rollout order: dev, then the prod canary, then the
// rest of prod.
var Waves = []fleet.Wave{
	{Name: "dev", Selector: EnvLabel + "=dev"},
	{Name: "prod-canary", Selector: EnvLabel + "=prod," + CanaryLabel + "=true"},
	{Name: "prod", Selector: EnvLabel + "=prod"},
}

// PlanError says the inputs cannot be placed: nothing was applied.
type PlanError struct {
	// Errs are the plan's errors, each naming release and member.
	Errs []error
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("platform rollout: the plan has %d error(s): %v", len(e.Errs), errors.Join(e.Errs...))
}

// Unwrap returns the plan's errors.
func (e *PlanError) Unwrap() []error { return e.Errs }

// RolloutPlatform applies the inputs to the fleet with the team's policy:
// wave by wave (Waves), each wave baking for bake before the next; the
// first failed or unhealthy member halts the rollout and rolls its wave's
// failed members back to their previous revision. Nothing is applied
// when a release cannot be placed (a *PlanError); a release that fails
// on one member fails that member's part, and the waves halt. The report says what happened
// on every member, also when the error is not nil.
func RolloutPlatform(ctx context.Context, fl *fleet.Fleet, in fleet.Inputs, bake time.Duration) (*fleet.ApplyReport, error) {
	plan, err := fl.Plan(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("platform rollout: %w", err)
	}
	// A member that fails fails its own part (the waves halt on it);
	// a release that cannot be placed stops everything.
	if errs := plan.PlacementErrors(); len(errs) > 0 {
		return nil, &PlanError{Errs: errs}
	}
	return fl.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves:          Waves,
		BakeTime:       bake,
		MaxFailures:    0,
		RollbackFailed: true,
	}})
}

// HealDrift checks every member for changes made outside the fleet and
// puts the releases' objects back; it returns the releases it corrected,
// sorted by member and name.
func HealDrift(ctx context.Context, fl *fleet.Fleet) ([]fleet.Key, error) {
	d, err := fl.Drift(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("heal drift: %w", err)
	}
	var healed []fleet.Key
	var errs []error
	for _, it := range d.Items {
		if it.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", it.Key, it.Err))
		}
		if it.Corrected {
			healed = append(healed, it.Key)
		}
	}
	return healed, errors.Join(errs...)
}
