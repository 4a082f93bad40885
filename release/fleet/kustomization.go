package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Actions of a Kustomization plan item, besides reconcile.ActionNone.
const (
	// ActionApply builds the Kustomization and applies its objects
	// (server-side), prunes what left its inventory and waits if asked.
	ActionApply reconcile.Action = "apply"
	// ActionDelete deletes a Kustomization the member no longer gets: its
	// objects are pruned when its deletion policy says so (spec.prune
	// with the default MirrorPrune).
	ActionDelete reconcile.Action = "delete"
)

// Flux's labels on every object a Kustomization applies; the fleet sets
// them on the releases a Kustomization produces, and reads them to know
// which Kustomization produced a release it applied before.
const (
	// KustomizationNameLabel holds the producing Kustomization's name.
	KustomizationNameLabel = "kustomize.toolkit.fluxcd.io/name"
	// KustomizationNamespaceLabel holds its namespace.
	KustomizationNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// KustomizationPlan is the plan of one Kustomization on one member.
type KustomizationPlan struct {
	// Cluster is the member's name.
	Cluster string
	// Kustomization is the member's copy, after override policies.
	Kustomization *release.Kustomization
	// State is StateAbsent before its first apply on the member, else
	// StateInSync when applying changes nothing and StateOutOfSync when it
	// does.
	State reconcile.State
	// Action is ActionApply, ActionDelete or reconcile.ActionNone
	// (suspended). An apply in sync (State) changes nothing, and
	// Plan.Table shows it as reconcile.ActionNone, as for a release.
	Action reconcile.Action
	// Reason says why, when the action has one.
	Reason string
	// Revision is the source revision built.
	Revision string
	// Objects are what it would do to each object it applies on the
	// member, in apply order: its build without the HelmReleases,
	// Kustomizations, sources and policies, which the fleet runs itself
	// (Produced).
	Objects []kustomize.ObjectPlan
	// Diff is the objects' diffs, from what the member holds to what
	// would be applied, with Secret data and the values substituted from
	// Secrets masked on both sides (see release/kustomize, "Secret
	// values").
	Diff string
	// Prune are the objects of its inventory an apply would delete (they
	// left the build and spec.prune is set); Orphan those it would
	// forget.
	Prune, Orphan []release.ObjectRef
	// Warnings are the reconciler's (fields it does not act on,
	// kustomize's deprecations).
	Warnings []string
	// Produced are the releases it produces on the member, planned as
	// Plan.Items.
	Produced []Key
	// Err is why it cannot be built or planned.
	Err error
}

// Key is the plan item's key.
func (p *KustomizationPlan) Key() Key {
	return Key{Cluster: p.Cluster, Namespace: p.Kustomization.Namespace, Name: p.Kustomization.Name, Kind: KindKustomization}
}

// Kustomization returns the plan of one Kustomization on one member.
func (p *Plan) Kustomization(k Key) (*KustomizationPlan, bool) {
	it, ok := p.kitems[k]
	return it, ok
}

// kustomizePlan is what a kustomizer plans for one Kustomization: the
// reconciler's plan and the units its build produces.
type kustomizePlan struct {
	plan     *kustomize.Plan
	produced *release.Objects
	plain    []*unstructured.Unstructured // the build's other objects
}

// isKustomization reports whether u is a Flux Kustomization.
func isKustomization(u *unstructured.Unstructured) bool {
	return u.GetKind() == release.KustomizationKind && strings.HasPrefix(u.GetAPIVersion(), release.KustomizationGroup+"/")
}

func kustomizationToUnstructured(k *release.Kustomization) (*unstructured.Unstructured, error) {
	return unitToUnstructured(k, release.KustomizationAPIVersion, release.KustomizationKind)
}

func kustomizationFromUnstructured(u *unstructured.Unstructured) (*release.Kustomization, error) {
	return unitFromUnstructured[release.Kustomization](u)
}

// producerOf returns the Kustomization on member that produced a unit
// with labels, from Flux's labels.
func producerOf(member string, labels map[string]string) (Key, bool) {
	name, ok := labels[KustomizationNameLabel]
	if !ok || name == "" {
		return Key{}, false
	}
	return Key{Cluster: member, Namespace: labels[KustomizationNamespaceLabel], Name: name, Kind: KindKustomization}, true
}

// maxNesting bounds how deep Kustomizations produce Kustomizations.
const maxNesting = 8

// planKustomizations plans the Kustomizations placed on members and,
// round by round, those they produce (as Flux's clusters/<env>
// Kustomization produces infrastructure and apps), and returns the
// releases they produce as release work on their members.
func (f *Fleet) planKustomizations(ctx context.Context, plan *Plan, policies policy.Set, engine *policy.Engine, items []*KustomizationPlan, direct []todo) ([]todo, error) {
	taken := map[Key]string{}
	for _, w := range direct {
		taken[w.key] = placedDirectly
	}
	for _, it := range items {
		taken[it.Key()] = placedDirectly
	}
	var out []todo
	for depth := 0; len(items) > 0; depth++ {
		if depth > maxNesting {
			for _, it := range items {
				parent := plan.producer[it.Key()]
				plan.Errors = append(plan.Errors, fmt.Errorf("member %s: kustomization %s/%s produced by %s: Kustomizations nest more than %d deep", it.Cluster, it.Kustomization.Namespace, it.Kustomization.Name, parent.unit(), maxNesting))
			}
			break
		}
		outs, err := f.planRound(ctx, plan, items)
		if err != nil {
			return nil, err
		}
		var next []*KustomizationPlan
		for i, it := range items {
			if outs[i] == nil || outs[i].produced == nil {
				continue
			}
			if errs := f.checkGenerators(it.Cluster, outs[i].plain); len(errs) > 0 {
				it.Err = errors.Join(errs...)
				plan.Errors = append(plan.Errors, &ItemError{Key: it.Key(), Err: it.Err})
			}
			plan.addSources(it.Cluster, outs[i].produced, f.sourceRules(engine, policies, it.Cluster))
			rels, ks := f.producedUnits(plan, policies, engine, taken, it, outs[i].produced)
			out = append(out, rels...)
			next = append(next, ks...)
		}
		items = next
	}
	return out, nil
}

// planRound plans items, at most Config.Concurrency at a time, and adds
// them to plan.
func (f *Fleet) planRound(ctx context.Context, plan *Plan, items []*KustomizationPlan) ([]*kustomizePlan, error) {
	sort.Slice(items, func(i, j int) bool { return keyLess(items[i].Key(), items[j].Key()) })
	outs := make([]*kustomizePlan, len(items))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cfg.Concurrency)
	for i, it := range items {
		k := it.Key()
		st, known := f.inv.kustomizationStatus(k)
		if known {
			it.Kustomization.Status = st
		}
		it.State = reconcile.StateAbsent
		if known {
			it.State = reconcile.StateInSync
		}
		if err := f.denyCrossNamespaceRefs(it.Kustomization); err != nil {
			it.Action, it.Err = reconcile.ActionNone, fmt.Errorf("member %s: %w", k.Cluster, err)
			continue
		}
		if it.Kustomization.Spec.Suspend {
			it.Action, it.Reason = reconcile.ActionNone, "suspended"
			continue
		}
		g.Go(func() error {
			var out *kustomizePlan
			err := release.Contain("release.Cluster of member "+k.Cluster, func() (err error) {
				out, err = f.kust.plan(gctx, k.Cluster, f.byName[k.Cluster].Cluster, it.Kustomization.DeepCopy())
				return err
			})
			if err != nil {
				it.Err = kustomizationErr(k, err)
				return nil
			}
			outs[i] = out
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet plan: %w", err)
	}
	for i, it := range items {
		if out := outs[i]; out != nil {
			kp := out.plan
			it.Revision, it.Objects, it.Prune, it.Orphan, it.Warnings = kp.Revision, kp.Objects, kp.Prune, kp.Orphan, kp.Warnings
			var diff strings.Builder
			for _, o := range kp.Objects {
				diff.WriteString(o.Diff)
			}
			it.Diff = diff.String()
			if it.State == reconcile.StateInSync && kp.Changed() {
				it.State = reconcile.StateOutOfSync
			}
			for _, w := range kp.Warnings {
				plan.Warnings = append(plan.Warnings, policy.Warning{Message: it.Key().String() + ": " + w})
			}
		}
		plan.Kustomizations = append(plan.Kustomizations, it)
		plan.kitems[it.Key()] = it
		if it.Err != nil {
			plan.Errors = append(plan.Errors, &ItemError{Key: it.Key(), Err: it.Err})
		}
	}
	return outs, nil
}

// producedUnits turns the releases and Kustomizations it produced into
// units on its member, as if decoded directly: labelled as Flux labels
// what a Kustomization applies, then overridden for the member by the
// inputs' override policies and those it produced with them. A unit that
// is also placed on the member directly, or produced by another
// Kustomization there, is an error naming both; the first keeps it;
// except a Kustomization that produces itself, or produces one placed
// on the member directly: that is the same unit (sameKustomization).
// Propagation policies it produces are warned about and not acted on:
// what a Kustomization produces stays on its member. Sources it produces
// are, as in the inputs, for the caller's ChartGetter: the fleet does not
// run them.
func (f *Fleet) producedUnits(plan *Plan, policies policy.Set, engine *policy.Engine, taken map[Key]string, it *KustomizationPlan, objs *release.Objects) ([]todo, []*KustomizationPlan) {
	kk := it.Key()
	eng := engine
	ps := objs.Policies
	if n := len(ps.Propagation) + len(ps.ClusterPropagation); n > 0 {
		plan.Warnings = append(plan.Warnings, policy.Warning{Message: fmt.Sprintf("%s produces %d propagation policies: not acted on (what a Kustomization produces stays on its member)", kk, n)})
	}
	if len(ps.Override)+len(ps.ClusterOverride) > 0 {
		set := policies
		set.Override = append(append([]policy.OverridePolicy(nil), policies.Override...), ps.Override...)
		set.ClusterOverride = append(append([]policy.ClusterOverridePolicy(nil), policies.ClusterOverride...), ps.ClusterOverride...)
		var err error
		if eng, err = policy.NewEngine(set); err != nil {
			it.Err = fmt.Errorf("member %s: kustomization %s/%s: the override policies it produces: %w", kk.Cluster, kk.Namespace, kk.Name, err)
			plan.Errors = append(plan.Errors, &ItemError{Key: kk, Err: it.Err})
			return nil, nil
		}
	}
	facts := f.byName[kk.Cluster].Facts
	claim := func(k Key) bool {
		if by, dup := taken[k]; dup {
			plan.Errors = append(plan.Errors, &ItemError{Key: kk, Err: fmt.Errorf("member %s: %s produced by %s is also %s", kk.Cluster, k.unit(), kk.unit(), by)})
			return false
		}
		taken[k] = "produced by " + kk.unit()
		plan.producer[k] = kk
		plan.produced[kk] = append(plan.produced[kk], k)
		it.Produced = append(it.Produced, k)
		return true
	}
	var rels []todo
	for _, rel := range objs.Releases {
		r := rel.DeepCopy()
		r.Default()
		r.Labels = producedLabels(r.Labels, kk)
		rk := Key{Cluster: kk.Cluster, Namespace: r.Namespace, Name: r.Name}
		u, err := toUnstructured(r)
		if err == nil {
			r, err = overridden(eng, u, facts, fromUnstructured, (*release.Release).Validate)
		}
		if err == nil {
			release.KeepSecretFields(r, rel) // an override cannot unmark
		}
		if err != nil {
			plan.Errors = append(plan.Errors, fmt.Errorf("member %s: release %s/%s produced by %s: %w", kk.Cluster, rk.Namespace, rk.Name, kk.unit(), err))
			continue
		}
		if claim(rk) {
			rels = append(rels, f.releaseWork(kk.Cluster, r))
		}
	}
	var ks []*KustomizationPlan
	for _, child := range objs.Kustomizations {
		c := child.DeepCopy()
		c.Default()
		c.Labels = producedLabels(c.Labels, kk)
		ck := Key{Cluster: kk.Cluster, Namespace: c.Namespace, Name: c.Name, Kind: KindKustomization}
		u, err := kustomizationToUnstructured(c)
		if err == nil {
			c, err = overridden(eng, u, facts, kustomizationFromUnstructured, (*release.Kustomization).Validate)
		}
		if err != nil {
			plan.Errors = append(plan.Errors, fmt.Errorf("member %s: kustomization %s/%s produced by %s: %w", kk.Cluster, ck.Namespace, ck.Name, kk.unit(), err))
			continue
		}
		if plan.sameKustomization(taken, it, c, ck) {
			continue
		}
		if claim(ck) {
			ks = append(ks, &KustomizationPlan{Cluster: kk.Cluster, Kustomization: c, Action: ActionApply})
		}
	}
	sort.Slice(it.Produced, func(i, j int) bool { return keyLess(it.Produced[i], it.Produced[j]) })
	sort.Slice(plan.produced[kk], func(i, j int) bool { return keyLess(plan.produced[kk][i], plan.produced[kk][j]) })
	return rels, ks
}

// producedLabels adds Flux's labels of the Kustomization k to labels.
func producedLabels(labels map[string]string, k Key) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	labels[KustomizationNameLabel] = k.Name
	labels[KustomizationNamespaceLabel] = k.Namespace
	return labels
}

// overridden applies eng's override policies for the member facts to u,
// turns it back into its unit and validates it.
func overridden[T any](eng *policy.Engine, u *unstructured.Unstructured, facts policy.Cluster, from func(*unstructured.Unstructured) (*T, error), validate func(*T) error) (*T, error) {
	o, _, err := eng.Override(u, facts)
	if err != nil {
		return nil, err
	}
	out, err := from(o)
	if err != nil {
		return nil, fmt.Errorf("after overrides: %w", err)
	}
	if err := validate(out); err != nil {
		return nil, fmt.Errorf("after overrides: %w", err)
	}
	return out, nil
}

// keys lists every unit of the plan, releases and Kustomizations, in key
// order.
func (p *Plan) keys() []Key {
	out := make([]Key, 0, len(p.Items)+len(p.Kustomizations))
	for _, it := range p.Items {
		out = append(out, keyOfPlan(it))
	}
	for _, it := range p.Kustomizations {
		out = append(out, it.Key())
	}
	sort.Slice(out, func(i, j int) bool { return keyLess(out[i], out[j]) })
	return out
}

// applyKustomization reconciles one Kustomization on its member: builds
// it, applies its objects (not the releases it produces, which are their
// own units), prunes and waits as its spec says, and records it. It is
// ready when its Ready condition is True for its generation.
func (f *Fleet) applyKustomization(ctx context.Context, p *KustomizationPlan, item *ItemReport) error {
	k := p.Key()
	if p.Err != nil {
		return p.Err
	}
	item.Actions = []reconcile.Action{p.Action}
	if p.Action == reconcile.ActionNone {
		return nil
	}
	ks := p.Kustomization.DeepCopy()
	if !f.inv.has(k) {
		// Known to garbage collection before anything is applied.
		if err := f.saveKustomization(ctx, k, ks); err != nil {
			return err
		}
	}
	err := f.kust.reconcile(ctx, k.Cluster, f.byName[k.Cluster].Cluster, ks)
	item.SourceRevision = ks.Status.LastAppliedRevision
	f.inv.putKustomization(k, ks)
	if serr := bookkeeping(ctx, func(ctx context.Context) error { return f.saveKustomization(ctx, k, ks) }); serr != nil {
		err = errors.Join(err, serr)
	}
	if err != nil {
		return kustomizationErr(k, err)
	}
	if !ks.IsReady() {
		msg := "no Ready condition"
		if c := ks.Status.GetCondition(release.ConditionReady); c != nil {
			msg = c.Reason + ": " + c.Message
		}
		return fmt.Errorf("member %s: kustomization %s/%s is not ready: %s", k.Cluster, k.Namespace, k.Name, msg)
	}
	return nil
}

// kustomizationErr is err of Kustomization k on its member, naming each
// once: the Kustomization reconciler's own errors begin with the
// Kustomization ("Kustomization namespace/name: ...").
func kustomizationErr(k Key, err error) error {
	if strings.HasPrefix(err.Error(), "Kustomization "+k.Namespace+"/"+k.Name+": ") {
		return fmt.Errorf("member %s: %w", k.Cluster, err)
	}
	return fmt.Errorf("member %s: kustomization %s/%s: %w", k.Cluster, k.Namespace, k.Name, err)
}

// kustomizer is what the fleet needs to run a Kustomization on one
// member; kustomizeAdapter gives it over *kustomize.Reconciler.
type kustomizer interface {
	// plan builds k and plans its apply on cluster, writing nothing: the
	// objects it would apply (not the releases, sources and policies it
	// produces, returned apart), their diff and what prune would delete.
	plan(ctx context.Context, member string, cluster release.ObjectClient, k *release.Kustomization) (*kustomizePlan, error)
	// reconcile builds and applies k on cluster the same way, prunes and
	// waits as its spec says, and records the outcome in k.Status.
	reconcile(ctx context.Context, member string, cluster release.ObjectClient, k *release.Kustomization) error
	// delete removes k from cluster: its inventory is pruned when its
	// deletion policy says so.
	delete(ctx context.Context, member string, cluster release.ObjectClient, k *release.Kustomization) error
}

// KustomizationStatus returns the status of one Kustomization on one
// member, as last applied.
func (f *Fleet) KustomizationStatus(k Key) (release.KustomizationStatus, bool) {
	return f.inv.kustomizationStatus(k)
}
