package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/release"
)

// UnitHealth is one unit a Kustomization's health check found not
// ready.
type UnitHealth struct {
	// Key is the unit on its member.
	Key Key
	// Why it is not ready: its error, or its state.
	Why string
}

// ProducedNotReadyError is why a Kustomization that waits for what it
// produces (spec.wait, or spec.healthChecks naming them) is not ready:
// the HelmReleases and Kustomizations it produced on its member that are
// not, as Flux's health check of the objects it applied would find them.
type ProducedNotReadyError struct {
	// Kustomization is the Kustomization on its member.
	Kustomization Key
	// Units are those not ready, in key order.
	Units []UnitHealth
}

// Error names the Kustomization and each unit with why.
func (e *ProducedNotReadyError) Error() string {
	return fmt.Sprintf("member %s: kustomization %s/%s: %s", e.Kustomization.Cluster, e.Kustomization.Namespace, e.Kustomization.Name, e.condition())
}

// condition is the message of the Kustomization's Ready condition.
func (e *ProducedNotReadyError) condition() string {
	parts := make([]string, len(e.Units))
	for i, u := range e.Units {
		kind := release.Kind
		if u.Key.IsKustomization() {
			kind = release.KustomizationKind
		}
		parts[i] = fmt.Sprintf("%s %s/%s: %s", kind, u.Key.Namespace, u.Key.Name, u.Why)
	}
	return "health check failed: " + strings.Join(parts, "; ")
}

// checkProduced fails, in state and items, each Kustomization that
// succeeded on its own but waits for what it produced while one of those
// is not ready; its status in the inventory (and Config.Store) becomes
// Ready and Healthy False, reason HealthCheckFailed, naming those units.
// Its dependents already waited for the same units (graphs); this makes
// its own status say so. A Kustomization failed this way fails the
// Kustomizations that produced it and wait for it, too.
func (f *Fleet) checkProduced(ctx context.Context, plan *Plan, state map[Key]depgraph.State, items map[Key]*ItemReport) {
	for changed := true; changed; {
		changed = false
		for _, kp := range plan.Kustomizations {
			k := kp.Key()
			if state[k] != depgraph.Succeeded || kp.Action != ActionApply {
				continue
			}
			var bad []UnitHealth
			for _, u := range waitedFor(kp.Kustomization, plan.produced[k]) {
				if s, ok := state[u]; !ok || s == depgraph.Succeeded {
					continue
				}
				why := state[u].String()
				if it := items[u]; it != nil && it.Err != nil {
					why = firstLine(it.Err.Error())
				}
				bad = append(bad, UnitHealth{Key: u, Why: why})
			}
			if len(bad) == 0 {
				continue
			}
			changed = true
			pe := &ProducedNotReadyError{Kustomization: k, Units: bad}
			var err error = pe
			if serr := f.markUnhealthy(ctx, k, pe); serr != nil {
				err = errors.Join(pe, serr)
			}
			state[k] = depgraph.Failed
			if it := items[k]; it != nil {
				it.State, it.Err = depgraph.Failed, err
			}
			f.emit(Event{Kind: EventFailed, Time: f.cfg.Clock.Now(), Key: k, Wave: waveOf(items[k]), Err: err})
		}
	}
}

// waveOf is the wave of an item; empty for none.
func waveOf(it *ItemReport) string {
	if it == nil {
		return ""
	}
	return it.Wave
}

// waitedFor are the units of produced whose health ks checks: all with
// spec.wait, else those spec.healthChecks names (a HelmRelease or a
// Kustomization, namespace defaulting to the Kustomization's).
func waitedFor(ks *release.Kustomization, produced []Key) []Key {
	if ks.Spec.Wait {
		return produced
	}
	var out []Key
	for _, u := range produced {
		for _, hc := range ks.Spec.HealthChecks {
			if namesUnit(hc, ks.Namespace, u) {
				out = append(out, u)
				break
			}
		}
	}
	return out
}

// namesUnit reports whether the health check hc of a Kustomization in
// namespace ns names the unit u.
func namesUnit(hc release.NamespacedObjectKindReference, ns string, u Key) bool {
	if hc.Namespace != "" {
		ns = hc.Namespace
	}
	if ns != u.Namespace || hc.Name != u.Name {
		return false
	}
	kind, group := release.Kind, release.Group
	if u.IsKustomization() {
		kind, group = release.KustomizationKind, release.KustomizationGroup
	}
	if hc.Kind != kind {
		return false
	}
	if hc.APIVersion == "" {
		return true
	}
	gv, err := schema.ParseGroupVersion(hc.APIVersion)
	return err == nil && gv.Group == group
}

// markUnhealthy records the failed health check err in Kustomization k's
// status in the inventory and the store; the error is the store's.
func (f *Fleet) markUnhealthy(ctx context.Context, k Key, err *ProducedNotReadyError) error {
	ks, ok := f.inv.kustomization(k)
	if !ok {
		return nil
	}
	now := metav1.NewTime(f.cfg.Clock.Now())
	for _, typ := range []string{release.ConditionHealthy, release.ConditionReady} {
		ks.Status.SetCondition(metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: release.ReasonHealthCheckFailed,
			Message: err.condition(), ObservedGeneration: ks.Generation, LastTransitionTime: now})
	}
	f.inv.putKustomization(k, ks)
	return bookkeeping(ctx, func(ctx context.Context) error { return f.saveKustomization(ctx, k, ks) })
}
