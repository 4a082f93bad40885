package fleet

import (
	"context"
	"fmt"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fieldcheck"
	"github.com/helmfleet/helmfleet/release"
)

// dependent is a unit as its dependsOn entries see it: the object bound
// to self in a readyExpr, its name for errors and its entries.
type dependent struct {
	self      any
	name      string
	own       string
	dependsOn []release.DependencyReference
}

// dependentOf returns unit k of plan as a dependent; ok is false for a
// unit the plan does not hold.
func dependentOf(plan *Plan, k Key) (dependent, bool) {
	if k.IsKustomization() {
		kp, ok := plan.kitems[k]
		if !ok || kp.Kustomization == nil {
			return dependent{}, false
		}
		ks := kp.Kustomization
		return dependent{self: ks, name: fieldcheck.ObjectName(release.KustomizationKind, ks.Namespace, ks.Name),
			own: release.KustomizationKind, dependsOn: ks.Spec.DependsOn}, true
	}
	p, ok := plan.items[k]
	if !ok || p.Release == nil {
		return dependent{}, false
	}
	rel := p.Release
	return dependent{self: rel, name: fieldcheck.ObjectName(release.Kind, rel.Namespace, rel.Name),
		own: release.Kind, dependsOn: rel.Spec.DependsOn}, true
}

// hasReadyExpr reports whether a unit of plan has a dependsOn entry with
// a readyExpr.
func hasReadyExpr(plan *Plan) bool {
	for _, u := range plan.units() {
		for _, d := range u.dependsOn {
			if d.ReadyExpr != "" {
				return true
			}
		}
	}
	return false
}

// dependencyNotReady returns why dependency d of unit k, on the state the
// fleet has of it, does not let k start, or nil. ready is the Ready
// check: d succeeded (reconciled and Ready) in this Apply or earlier. As
// helm-controller and kustomize-controller, a dependsOn entry of k that
// names d with a readyExpr decides instead of Ready, evaluated over k's
// planned object (self) and d's copy last applied, with its status
// (dep); with Config.AdditiveCELDependencyCheck d must be Ready as well.
// A dependency k has for another reason (the Kustomization that
// produces it, the releases a waited-for Kustomization produces) must be
// Ready. notReady is the error when Ready is what fails.
func (f *Fleet) dependencyNotReady(ctx context.Context, plan *Plan, k, d Key, ready bool, notReady error) error {
	u, ok := dependentOf(plan, k)
	if !ok {
		return readyOr(ready, notReady)
	}
	for i, entry := range u.dependsOn {
		ref := depKey(k.Cluster, k.Namespace, u.own, entry)
		if entry.ReadyExpr == "" || ref.Namespace != d.Namespace || ref.Name != d.Name || ref.Kind != d.Kind {
			continue
		}
		field := fmt.Sprintf("spec.dependsOn[%d].readyExpr", i)
		dep, found := f.liveObject(d)
		if !found {
			return fmt.Errorf("dependency %s is not ready: nothing applied yet to evaluate %s %q over", d, field, entry.ReadyExpr)
		}
		ok, err := release.DependencyReady(ctx, field, entry.ReadyExpr, u.self, dep)
		if err != nil {
			return fmt.Errorf("%s: dependency %s: %w", u.name, d, err)
		}
		if !ok {
			return fmt.Errorf("dependency %s is not ready according to %s: %s", d, field, entry.ReadyExpr)
		}
		if !f.cfg.AdditiveCELDependencyCheck {
			return nil
		}
	}
	return readyOr(ready, notReady)
}

// readyOr is nil when ready, else notReady.
func readyOr(ready bool, notReady error) error {
	if ready {
		return nil
	}
	return notReady
}

// liveObject returns the copy of d the fleet applied last, with its
// status.
func (f *Fleet) liveObject(d Key) (any, bool) {
	if d.IsKustomization() {
		ks, ok := f.inv.kustomization(d)
		return ks, ok
	}
	rel, ok := f.inv.release(d)
	return rel, ok
}

// readyExprGate is the depgraph gate of a wave when a unit of plan has a
// readyExpr (nil otherwise, keeping depgraph's own rule): unit k starts
// when every dependency passes dependencyNotReady.
func (f *Fleet) readyExprGate(plan *Plan) func(context.Context, Key, []depgraph.NodeResult[Key]) error {
	if !hasReadyExpr(plan) {
		return nil
	}
	return func(ctx context.Context, k Key, deps []depgraph.NodeResult[Key]) error {
		for _, d := range deps {
			why := fmt.Errorf("dependency %s %s", d.Key, d.State)
			if err := f.dependencyNotReady(ctx, plan, k, d.Key, d.State == depgraph.Succeeded, why); err != nil {
				return err
			}
		}
		return nil
	}
}
