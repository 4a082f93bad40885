package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Rollout spreads an Apply over waves of members: each wave is applied,
// then must stay healthy on its new revision for BakeTime and pass Gate
// before the next starts; more than MaxFailures failed members halt the
// rollout.
type Rollout struct {
	// Waves in order. Members no wave names form a last wave, "rest".
	Waves []Wave
	// BakeTime is how long a wave's new revisions must stay healthy.
	BakeTime time.Duration
	// MaxFailures is the failure budget: the rollout halts when more
	// members than this failed in total (default 0: the first failure).
	MaxFailures int
	// RollbackFailed rolls the failed members of a halting wave back to
	// their previous revision.
	RollbackFailed bool
	// Gate, if set, is asked after each wave's bake whether to go on (a
	// metrics check, a human approval); an error halts the rollout. A
	// panic of Gate halts it too: the wave's GateErr is then a
	// *release.CallbackPanicError, which Apply also returns.
	Gate func(ctx context.Context, wave WaveReport) error
}

// Wave selects members: by name, by label selector, or a percentage of
// all members (taken in name order among those no earlier wave took).
type Wave struct {
	// Name of the wave, for reports.
	Name string
	// Clusters names members.
	Clusters []string
	// Selector is a label selector over the members' labels.
	Selector string
	// Percent of all members, 1–100.
	Percent int
}

// ApplyOptions tune one Fleet.Apply.
type ApplyOptions struct {
	// Rollout spreads the apply over waves; nil applies everywhere at
	// once (still in dependency order).
	Rollout *Rollout
}

// ItemReport is the outcome of one release on one member.
type ItemReport struct {
	// Key is the release on its member.
	Key Key
	// Wave is the wave it ran in.
	Wave string
	// State is succeeded, failed, skipped or not-started.
	State depgraph.State
	// Actions are the reconciler's actions.
	Actions []reconcile.Action
	// Revision is the Helm revision after the apply (0 for a
	// Kustomization).
	Revision int
	// SourceRevision is, for a Kustomization, the source revision it
	// applied last (its status.lastAppliedRevision); empty for a release.
	SourceRevision string
	// Err says why it failed or was skipped.
	Err error
	// Started and Finished time the item.
	Started, Finished time.Time
	// RolledBack is true when a halted rollout rolled it back.
	RolledBack bool
	// Next and RequeueAfter are the reconciler's hint for this release.
	Next         reconcile.Next
	RequeueAfter time.Duration
}

// WaveReport is the outcome of one wave.
type WaveReport struct {
	// Name of the wave.
	Name string
	// Clusters of the wave, sorted.
	Clusters []string
	// Succeeded and Failed count the wave's units, the uninstalls and
	// deletes of garbage collection included.
	Succeeded, Failed int
	// Unhealthy lists members whose new revision was not healthy after
	// the bake time.
	Unhealthy []string
	// GateErr is the gate's refusal.
	GateErr error
	// Halted is true when the rollout stopped after this wave.
	Halted bool
}

// ApplyReport is the outcome of an Apply.
type ApplyReport struct {
	// Items per release and member, sorted by key.
	Items []ItemReport
	// Waves in order.
	Waves []WaveReport
	// Halted is true when the rollout stopped early.
	Halted bool

	graph  *depgraph.Graph[Key]
	result *depgraph.Result[Key]
}

// EventKind says what happened.
type EventKind string

// Fleet event kinds.
const (
	EventPlanned      EventKind = "planned"
	EventStarted      EventKind = "started"
	EventReady        EventKind = "ready"
	EventFailed       EventKind = "failed"
	EventSkipped      EventKind = "skipped"
	EventUninstalled  EventKind = "uninstalled"
	EventWaveStarted  EventKind = "wave-started"
	EventWaveFinished EventKind = "wave-finished"
	EventHalted       EventKind = "halted"
	EventRolledBack   EventKind = "rolled-back"
)

// Event is one step of an Apply, for progress bars and logs.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Time it happened, by the fleet's clock.
	Time time.Time
	// Key is the release on its member (zero for wave events).
	Key Key
	// Wave is the wave's name.
	Wave string
	// Elapsed is the time since the item (or wave) started.
	Elapsed time.Duration
	// Err is the error of a failed or skipped item.
	Err error
}

// Apply executes a plan: in each wave, every release is reconciled on
// its member as soon as its dependencies (on the same member or others)
// are ready, within the concurrency limits; releases no longer wanted are
// uninstalled, dependents first. A member that fails fails only its own
// releases and their dependents. With a Rollout, waves follow each other
// behind bake times, the new revisions' health, the gate and the failure
// budget. A release whose reconcile asks to come back at once (it unlocked
// a pending release, say) is reconciled again, up to a few times; one that
// still has work to do later fails with *UnfinishedError, so that nothing
// starts on it. A cancelled Apply leaves every release in a state the next
// Apply continues from: a cancelled attempt takes nothing from a release's
// retries, and the inventory entries of what it changed are still saved
// (Config.Store), each write bounded by a few seconds. A release whose
// entry cannot be saved fails, with a *StoreError.
func (f *Fleet) Apply(ctx context.Context, plan *Plan, opts ApplyOptions) (rep *ApplyReport, err error) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.callbacks.start()
	defer func() { err = f.callbacks.finish(err) }()
	if plan.graph == nil {
		return nil, errors.New("fleet apply: plan was not made by Fleet.Plan")
	}
	if err := plan.graph.Validate(); err != nil {
		return nil, fmt.Errorf("fleet apply: dependencies: %w", err)
	}
	waves, err := f.waves(opts.Rollout)
	if err != nil {
		return nil, fmt.Errorf("fleet apply: %w", err)
	}
	for _, k := range plan.keys() {
		f.emit(Event{Kind: EventPlanned, Time: f.cfg.Clock.Now(), Key: k})
	}
	rep = &ApplyReport{graph: plan.graph}
	items := map[Key]*ItemReport{}
	state := map[Key]depgraph.State{}
	ro := newRolloutState(opts.Rollout)
	for wi, w := range waves {
		wr, err := f.applyWave(ctx, plan, w, wi == len(waves)-1, ro, state, items)
		rep.Waves = append(rep.Waves, wr)
		if err != nil {
			rep.finish(items, plan)
			return rep, err
		}
		if wr.Halted {
			rep.Halted = true
			break
		}
	}
	rep.finish(items, plan)
	return rep, rep.err()
}

// applyWave runs wave w of plan, bakes it, checks its health and asks ro
// whether the rollout goes on after it (last: it is the last wave). The
// error is a cancellation; a halt is in the report.
func (f *Fleet) applyWave(ctx context.Context, plan *Plan, w wave, last bool, ro *rolloutState, state map[Key]depgraph.State, items map[Key]*ItemReport) (WaveReport, error) {
	in := map[string]bool{}
	for _, c := range w.clusters {
		in[c] = true
	}
	wr := WaveReport{Name: w.name, Clusters: w.clusters}
	start := f.cfg.Clock.Now()
	f.emit(Event{Kind: EventWaveStarted, Time: start, Wave: w.name})
	res, runErr := f.runWave(ctx, plan, w.name, in, state, items)
	for _, n := range res.Nodes {
		state[n.Key] = n.State
	}
	f.checkProduced(ctx, plan, state, items)
	for _, n := range res.Nodes {
		switch state[n.Key] {
		case depgraph.Succeeded:
			wr.Succeeded++
		case depgraph.Failed:
			wr.Failed++
		}
	}
	gone, gcErr := f.uninstallWave(ctx, plan, w.name, in, items)
	failedBefore := wr.Failed
	for _, n := range gone {
		switch n.State {
		case depgraph.Succeeded:
			wr.Succeeded++
		case depgraph.Failed:
			wr.Failed++
		}
	}
	if gcErr != nil && wr.Failed == failedBefore {
		wr.Failed++ // cancelled before any removal said so
	}
	if runErr != nil && ctx.Err() != nil {
		return wr, fmt.Errorf("fleet apply: cancelled in wave %s: %w", w.name, ctx.Err())
	}
	if ro.staged(last) {
		if err := ro.bake(ctx, f.cfg.Clock); err != nil {
			return wr, fmt.Errorf("fleet apply: cancelled while baking wave %s: %w", w.name, err)
		}
		wr.Unhealthy = f.unhealthy(ctx, in, state)
	}
	d := ro.decide(ctx, &f.callbacks, wr, last)
	wr.GateErr, wr.Halted = d.gateErr, d.halt
	if d.halt {
		if d.rollback {
			f.rollbackFailed(ctx, plan, in, state, items, wr.Unhealthy)
		}
		f.emit(Event{Kind: EventHalted, Time: f.cfg.Clock.Now(), Wave: w.name, Err: wr.GateErr})
		return wr, nil
	}
	f.emit(Event{Kind: EventWaveFinished, Time: f.cfg.Clock.Now(), Wave: w.name, Elapsed: since(f.cfg.Clock, start)})
	return wr, nil
}

// err is the error of a finished Apply: every failed item's, and the
// halt's.
func (rep *ApplyReport) err() error {
	var errs []error
	for _, it := range rep.Items {
		if it.State == depgraph.Failed {
			errs = append(errs, fmt.Errorf("%s: %w", it.Key, it.Err))
		}
	}
	if rep.Halted {
		errs = append(errs, fmt.Errorf("rollout halted after wave %s", rep.Waves[len(rep.Waves)-1].Name))
	}
	if len(errs) > 0 {
		return fmt.Errorf("fleet apply: %w", errors.Join(errs...))
	}
	return nil
}

// itemLog records the items of a wave as its goroutines start them.
type itemLog struct {
	mu    sync.Mutex
	items map[Key]*ItemReport
}

// add records it under its key.
func (l *itemLog) add(it *ItemReport) {
	l.mu.Lock()
	l.items[it.Key] = it
	l.mu.Unlock()
}

// runWave reconciles the plan's releases on the wave's members.
func (f *Fleet) runWave(ctx context.Context, plan *Plan, wave string, in map[string]bool, state map[Key]depgraph.State, items map[Key]*ItemReport) (*depgraph.Result[Key], error) {
	g, blocked := f.waveGraph(ctx, plan, wave, in, state)
	log := &itemLog{items: items}
	res, err := depgraph.Run(ctx, g, func(ctx context.Context, k Key) error {
		item := &ItemReport{Key: k, Wave: wave, Started: f.cfg.Clock.Now()}
		log.add(item)
		item.Err = f.applyItem(ctx, plan, k, blocked[k], item)
		return item.Err
	}, depgraph.Options[Key]{
		Concurrency:      f.cfg.Concurrency,
		GroupConcurrency: f.cfg.ClusterConcurrency,
		Clock:            f.cfg.Clock,
		Events:           f.waveEvents(wave),
		Gate:             f.readyExprGate(plan),
	})
	if res == nil {
		return &depgraph.Result[Key]{}, err
	}
	for _, n := range res.Nodes {
		it, ok := items[n.Key]
		if !ok {
			it = &ItemReport{Key: n.Key, Wave: wave}
			items[n.Key] = it
		}
		it.State = n.State
		it.Finished = n.Finished
		var gated *depgraph.GateError[Key]
		switch {
		case n.State != depgraph.Skipped || it.Err != nil:
		case errors.As(n.Err, &gated):
			it.Err = fmt.Errorf("skipped: %w", gated.Err)
		default:
			it.Err = fmt.Errorf("skipped: dependency %s failed", n.Cause)
		}
	}
	return res, err
}

// waveGraph is the part of the plan's graph on the wave's members, with
// the dependencies on other members that are not ready as blocked: why
// each such release cannot start.
func (f *Fleet) waveGraph(ctx context.Context, plan *Plan, wave string, in map[string]bool, state map[Key]depgraph.State) (*depgraph.Graph[Key], map[Key]error) {
	g := depgraph.New[Key]()
	blocked := map[Key]error{}
	for _, n := range plan.graph.Nodes() {
		if !in[n.Key.Cluster] {
			continue
		}
		var deps []Key
		for _, d := range n.Deps {
			if in[d.Cluster] {
				deps = append(deps, d)
				continue
			}
			// Outside the wave: ready if it succeeded in an earlier wave, or
			// (in a later wave) from an earlier Apply.
			ready := state[d] == depgraph.Succeeded || (state[d] == depgraph.NotStarted && f.inv.ready(d))
			why := fmt.Errorf("dependency %s is not ready (state %s, outside wave %s)", d, state[d], wave)
			if err := f.dependencyNotReady(ctx, plan, n.Key, d, ready, why); err != nil {
				blocked[n.Key] = err
			}
		}
		g.AddNode(depgraph.Node[Key]{Key: n.Key, Deps: deps, Group: n.Group})
	}
	return g, blocked
}

// waveEvents turns the graph run's events of a wave into the fleet's.
func (f *Fleet) waveEvents(wave string) func(depgraph.Event[Key]) {
	return func(e depgraph.Event[Key]) {
		fe := Event{Time: e.Time, Key: e.Key, Wave: wave, Elapsed: e.Elapsed, Err: e.Err}
		switch e.Kind {
		case depgraph.EventStarted:
			fe.Kind = EventStarted
		case depgraph.EventSucceeded:
			fe.Kind = EventReady
		case depgraph.EventFailed:
			fe.Kind = EventFailed
		case depgraph.EventSkipped:
			fe.Kind = EventSkipped
			fe.Err = fmt.Errorf("dependency %s failed", e.Cause)
			var gated *depgraph.GateError[Key]
			if errors.As(e.Err, &gated) {
				fe.Err = gated.Err
			}
		default:
			return
		}
		f.emit(fe)
	}
}

// applyItem applies unit k of plan on its member, filling item, and
// returns why it failed; blocked, if not nil, is why it cannot start.
func (f *Fleet) applyItem(ctx context.Context, plan *Plan, k Key, blocked error, item *ItemReport) error {
	if blocked != nil {
		return blocked
	}
	if k.IsKustomization() {
		return f.applyKustomization(ctx, plan.kitems[k], item)
	}
	p := plan.items[k]
	if p.Err != nil {
		var se *reconcile.StalledError
		if !errors.As(p.Err, &se) {
			return p.Err
		}
	}
	from, hasValuesFrom := plan.valuesFrom[k]
	rec := f.rec
	if hasValuesFrom {
		var err error
		if rec, err = f.reconcilerFor(k, from); err != nil {
			return err
		}
	}
	return f.applyRelease(withMemberSources(ctx, plan, k.Cluster), k, rec, from, p.Release.DeepCopy(), item)
}

// applyRelease reconciles rel, member k's copy of a release, with rec
// (from is where it reads valuesFrom), records it in the inventory and
// fills item.
func (f *Fleet) applyRelease(ctx context.Context, k Key, rec *reconcile.Reconciler, from ValuesFrom, rel *release.Release, item *ItemReport) error {
	cluster, err := f.releaseCluster(k.Cluster, rel)
	if err != nil {
		return err
	}
	// A release installed for the first time is written to the store
	// before, so that a process dying during the install leaves it
	// known to garbage collection.
	if !f.inv.has(k) {
		if err := f.save(ctx, k, rel); err != nil {
			return err
		}
	}
	res, err := reconcilePasses(ctx, k, rec, cluster, from, rel, item)
	f.inv.putRelease(k, rel)
	if serr := bookkeeping(ctx, func(ctx context.Context) error { return f.save(ctx, k, rel) }); serr != nil {
		err = errors.Join(err, serr)
	}
	if res != nil {
		item.Next, item.RequeueAfter = res.Next, res.RequeueAfter
		if res.Helm != nil {
			item.Revision = res.Helm.Version
		}
		if err == nil && res.Next == reconcile.NextRequeue {
			err = &UnfinishedError{Release: refOf(rel), Cluster: k.Cluster, Actions: item.Actions, RequeueAfter: res.RequeueAfter, Message: readyMessage(rel)}
		}
	}
	return err
}

// reconcilePasses reconciles rel on cluster, adding the actions to item.
// A reconcile that ends asking to come back at once (a pending release
// unlocked, a remediation done) is run again, up to maxPasses, as a
// controller would requeue it; one that must wait (a retry interval)
// leaves the release unfinished, which the caller counts as a failure:
// dependents and waves must not start on it.
func reconcilePasses(ctx context.Context, k Key, rec *reconcile.Reconciler, cluster release.Cluster, from ValuesFrom, rel *release.Release, item *ItemReport) (*reconcile.Result, error) {
	var (
		res *reconcile.Result
		err error
	)
	for pass := 0; pass < maxPasses; pass++ {
		res, err = rec.Reconcile(ctx, cluster, rel)
		err = nameValuesFrom(k, from, err)
		if res != nil {
			item.Actions = append(item.Actions, res.Actions...)
		}
		if err != nil || res == nil || res.Next != reconcile.NextRequeue || res.RequeueAfter > 0 {
			break
		}
	}
	return res, err
}

// uninstallWave removes, dependents first, the releases the wave's
// members hold and no longer want, and returns the removals' outcomes.
func (f *Fleet) uninstallWave(ctx context.Context, plan *Plan, wave string, in map[string]bool, items map[Key]*ItemReport) ([]depgraph.NodeResult[Key], error) {
	g := depgraph.New[Key]()
	for _, n := range plan.gc.Nodes() {
		if in[n.Key.Cluster] {
			var deps []Key
			for _, d := range n.Deps {
				if in[d.Cluster] {
					deps = append(deps, d)
				}
			}
			g.AddNode(depgraph.Node[Key]{Key: n.Key, Deps: deps, Group: n.Group})
		}
	}
	if g.Len() == 0 {
		return nil, nil
	}
	log := &itemLog{items: items}
	res, err := depgraph.Run(ctx, g, func(ctx context.Context, k Key) error {
		return f.uninstallItem(ctx, plan, wave, k, log)
	}, depgraph.Options[Key]{Concurrency: f.cfg.Concurrency, GroupConcurrency: f.cfg.ClusterConcurrency, Clock: f.cfg.Clock})
	if res == nil {
		return nil, err
	}
	for _, n := range res.Nodes {
		if it, ok := items[n.Key]; ok {
			it.State = n.State
		}
	}
	return res.Nodes, err
}

// uninstallItem removes unit k of plan from its member, records its item
// in log and, once it is gone, forgets it.
func (f *Fleet) uninstallItem(ctx context.Context, plan *Plan, wave string, k Key, log *itemLog) error {
	item := &ItemReport{Key: k, Wave: wave, Started: f.cfg.Clock.Now(), Actions: []reconcile.Action{reconcile.ActionUninstall}}
	var err error
	if k.IsKustomization() {
		item.Actions = []reconcile.Action{ActionDelete}
		err = f.kust.delete(ctx, k.Cluster, f.byName[k.Cluster].Cluster, plan.kitems[k].Kustomization.DeepCopy())
	} else {
		rel := plan.items[k].Release.DeepCopy()
		var cluster release.Cluster
		if cluster, err = f.releaseCluster(k.Cluster, rel); err == nil {
			// rel is the copy the inventory recorded, with the status
			// history of what the fleet installed there: the engine's
			// ownership check compares it with the member's storage.
			_, err = f.rec.Uninstall(ctx, cluster, rel)
			if oe := (*reconcile.OwnershipError)(nil); errors.As(err, &oe) {
				err = &NotOwnedError{Key: k, Err: oe}
			}
		}
	}
	item.Err = err
	item.Finished = f.cfg.Clock.Now()
	log.add(item)
	if err != nil {
		return err
	}
	f.inv.forget(k)
	if err = bookkeeping(ctx, func(ctx context.Context) error { return f.forget(ctx, k) }); err != nil {
		item.Err = err
	}
	f.emit(Event{Kind: EventUninstalled, Time: item.Finished, Key: k, Wave: wave})
	return err
}

// unhealthy returns the wave's members whose new revision is not healthy
// now: the Helm release is not the revision just made, not deployed, or
// its objects are not Current.
func (f *Fleet) unhealthy(ctx context.Context, in map[string]bool, state map[Key]depgraph.State) []string {
	bad := map[string]bool{}
	for k, s := range state {
		if !in[k.Cluster] || s != depgraph.Succeeded {
			continue
		}
		if k.IsKustomization() {
			// Its objects' health is its Ready (with wait or
			// healthChecks); the releases it produces are checked here
			// as releases.
			if !f.inv.ready(k) {
				bad[k.Cluster] = true
			}
			continue
		}
		rel, _ := f.inv.release(k)
		cluster, err := f.releaseCluster(k.Cluster, rel)
		if err == nil {
			err = f.rec.Health(ctx, cluster, rel)
		}
		if err != nil {
			bad[k.Cluster] = true
		}
	}
	out := make([]string, 0, len(bad))
	for c := range bad {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// rollbackFailed rolls the failed and unhealthy members of a halting wave
// back to their previous good revision. A member whose reconciler
// already remediated by a rollback (upgrade.remediation) is back there
// and is left alone: rolling it back again would add a second
// "Rollback to" revision. The item's revision is then Helm's.
func (f *Fleet) rollbackFailed(ctx context.Context, plan *Plan, in map[string]bool, state map[Key]depgraph.State, items map[Key]*ItemReport, unhealthy []string) {
	sick := map[string]bool{}
	for _, c := range unhealthy {
		sick[c] = true
	}
	for _, it := range plan.Items {
		k := keyOfPlan(it)
		if !in[k.Cluster] || plan.gone[k] || (state[k] != depgraph.Failed && !sick[k.Cluster]) {
			continue
		}
		rel, ok := f.inv.release(k)
		if !ok || remediatedByRollback(rel) {
			continue
		}
		cluster, err := f.releaseCluster(k.Cluster, rel)
		if err == nil {
			err = f.rec.RollbackToPrevious(ctx, cluster, rel)
		}
		// A failed attempt may have written a revision and changed the
		// status too: both are kept and reported, never dropped.
		f.inv.putRelease(k, rel)
		serr := bookkeeping(ctx, func(ctx context.Context) error { return f.save(ctx, k, rel) })
		ir, ok := items[k]
		if err != nil {
			if ok {
				ir.Err = errors.Join(ir.Err, &RollbackError{Key: k, Err: err}, serr)
			}
			continue
		}
		if ok {
			ir.RolledBack = true
			if cur := rel.Status.History.Latest(); cur != nil {
				ir.Revision = cur.Version
			}
			if serr != nil {
				ir.Err = errors.Join(ir.Err, serr)
			}
		}
		f.emit(Event{Kind: EventRolledBack, Time: f.cfg.Clock.Now(), Key: k})
	}
}

// NotOwnedError is a release the fleet did not uninstall from a member
// because what it recorded there itself, the status history in its
// inventory (Store), does not prove that the member's Helm release of
// that name is the one it installed or took over: the entry recorded no
// revision (it was saved before a first install whose outcome was never
// recorded), or Helm's latest revision is not the one recorded (someone
// upgraded the release since, or the fleet's last save was lost). The
// Helm release and the inventory entry are left as they are, so the next
// Apply reports it again; remove the Helm release by hand if it is the
// fleet's, or delete the entry (Store.Delete) to leave it. It is that
// member's ItemReport.Err.
type NotOwnedError struct {
	// Key is the release on its member.
	Key Key
	// Err is the engine's refusal (errors.Is reconcile.ErrNoLatest or
	// reconcile.ErrReleaseMismatch); it names the Helm release, its
	// storage namespace and what mismatched.
	Err *reconcile.OwnershipError
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("%s not uninstalled: the fleet's inventory does not prove it installed Helm release %s (storage namespace %s) on member %s: %s",
		e.Key, e.Err.HelmRelease, e.Err.StorageNamespace, e.Key.Cluster, e.Err.Reason)
}

// Unwrap returns the engine's refusal.
func (e *NotOwnedError) Unwrap() error { return e.Err }

// RollbackError is a halted rollout's rollback of one member that
// failed (the rollback may have written a failed revision there): it is
// part of that member's ItemReport.Err.
type RollbackError struct {
	// Key is the release on its member.
	Key Key
	// Err is the rollback's error.
	Err error
}

func (e *RollbackError) Error() string {
	return fmt.Sprintf("rollout halted: rolling %s back failed: %v", e.Key, e.Err)
}

// Unwrap returns the rollback's error.
func (e *RollbackError) Unwrap() error { return e.Err }

// remediatedByRollback says whether rel's latest revision is a rollback
// that remediated its failure (the reconciler's, or an earlier halted
// rollout's) and is deployed: rolling back from it would only repeat it.
// That holds too when a later attempt failed before Helm wrote a
// revision (its Remediated condition is gone, the rollback still runs).
func remediatedByRollback(rel *release.Release) bool {
	c := rel.Status.GetCondition(release.ConditionRemediated)
	cur := rel.Status.History.Latest()
	if cur == nil || cur.Status != release.SnapshotStatusDeployed {
		return false
	}
	return c != nil && c.Status == metav1.ConditionTrue && c.Reason == release.ReasonRollbackSucceeded ||
		cur.Action == string(reconcile.ActionRollback)
}

type wave struct {
	name     string
	clusters []string
}

// waves turns a rollout into member sets; without one, one wave of all.
func (f *Fleet) waves(r *Rollout) ([]wave, error) {
	all := make([]string, len(f.members))
	for i, m := range f.members {
		all[i] = m.Facts.Name
	}
	if r == nil || len(r.Waves) == 0 {
		return []wave{{name: "all", clusters: all}}, nil
	}
	taken := map[string]bool{}
	var out []wave
	for i, w := range r.Waves {
		name := w.Name
		if name == "" {
			name = fmt.Sprintf("wave-%d", i+1)
		}
		var cs []string
		switch {
		case len(w.Clusters) > 0:
			for _, c := range w.Clusters {
				if _, ok := f.byName[c]; !ok {
					return nil, fmt.Errorf("rollout.waves[%d].clusters: unknown member %q", i, c)
				}
				if !taken[c] {
					cs = append(cs, c)
				}
			}
		case w.Selector != "":
			sel, err := labels.Parse(w.Selector)
			if err != nil {
				return nil, fmt.Errorf("rollout.waves[%d].selector: %q: %w", i, w.Selector, err)
			}
			for _, m := range f.members {
				if sel.Matches(labels.Set(m.Facts.Labels)) && !taken[m.Facts.Name] {
					cs = append(cs, m.Facts.Name)
				}
			}
		case w.Percent > 0 && w.Percent <= 100:
			n := (len(all)*w.Percent + 99) / 100
			for _, c := range all {
				if len(cs) == n {
					break
				}
				if !taken[c] {
					cs = append(cs, c)
				}
			}
		default:
			return nil, fmt.Errorf("rollout.waves[%d]: needs clusters, a selector or a percent in 1..100", i)
		}
		sort.Strings(cs)
		for _, c := range cs {
			taken[c] = true
		}
		out = append(out, wave{name: name, clusters: cs})
	}
	var rest []string
	for _, c := range all {
		if !taken[c] {
			rest = append(rest, c)
		}
	}
	if len(rest) > 0 {
		out = append(out, wave{name: "rest", clusters: rest})
	}
	return out, nil
}

// finish fills the report's items, marking those no wave reached.
func (rep *ApplyReport) finish(items map[Key]*ItemReport, plan *Plan) {
	for _, k := range plan.keys() {
		if _, ok := items[k]; !ok {
			items[k] = &ItemReport{Key: k, State: depgraph.NotStarted, Err: errors.New("not started: the rollout halted or was cancelled before its wave")}
		}
	}
	rep.Items = rep.Items[:0]
	for _, it := range items {
		rep.Items = append(rep.Items, *it)
	}
	sort.Slice(rep.Items, func(i, j int) bool { return keyLess(rep.Items[i].Key, rep.Items[j].Key) })
}

// Table renders the report: one line per unit and member; REVISION is a
// release's Helm revision, a Kustomization's applied source revision ("-"
// when it applied none).
func (rep *ApplyReport) Table() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WAVE\tCLUSTER\tUNIT\tRESULT\tACTIONS\tREVISION\tNOTE")
	for _, it := range rep.Items {
		note := ""
		if it.Err != nil {
			note = firstLine(it.Err.Error())
		}
		if it.RolledBack {
			note = "rolled back; " + note
		}
		acts := make([]string, len(it.Actions))
		for i, a := range it.Actions {
			acts[i] = string(a)
		}
		if len(acts) == 0 {
			acts = []string{"-"}
		}
		rev := strconv.Itoa(it.Revision)
		if it.Key.IsKustomization() {
			rev = it.SourceRevision
			if rev == "" {
				rev = "-"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Wave, it.Key.Cluster, it.Key.unit(), it.State, strings.Join(acts, ","), rev, note)
	}
	_ = tw.Flush()
	for _, w := range rep.Waves {
		fmt.Fprintf(&sb, "wave %s %v: %d succeeded, %d failed", w.Name, w.Clusters, w.Succeeded, w.Failed)
		if len(w.Unhealthy) > 0 {
			fmt.Fprintf(&sb, ", unhealthy after bake: %v", w.Unhealthy)
		}
		if w.GateErr != nil {
			fmt.Fprintf(&sb, ", gate: %v", w.GateErr)
		}
		if w.Halted {
			sb.WriteString(", HALTED")
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}

// Mermaid draws the rollout as a Mermaid flowchart: a box per wave, inside
// it a box per member, a node per release coloured by its outcome, and an
// arrow from each dependency to its dependent.
func (rep *ApplyReport) Mermaid() string {
	ids := map[Key]string{}
	byWave := map[string]map[string][]ItemReport{}
	var waveOrder []string
	for _, w := range rep.Waves {
		waveOrder = append(waveOrder, w.Name)
	}
	for i, it := range rep.Items {
		ids[it.Key] = fmt.Sprintf("n%d", i)
		w := it.Wave
		if w == "" {
			w = "not reached"
		}
		if byWave[w] == nil {
			byWave[w] = map[string][]ItemReport{}
			if !slices.Contains(waveOrder, w) {
				waveOrder = append(waveOrder, w)
			}
		}
		byWave[w][it.Key.Cluster] = append(byWave[w][it.Key.Cluster], it)
	}
	var sb strings.Builder
	sb.WriteString("flowchart LR\n")
	classes := map[string][]string{}
	for wi, w := range waveOrder {
		fmt.Fprintf(&sb, "  subgraph w%d[\"wave %s\"]\n", wi, w)
		clusters := make([]string, 0, len(byWave[w]))
		for c := range byWave[w] {
			clusters = append(clusters, c)
		}
		sort.Strings(clusters)
		for ci, c := range clusters {
			fmt.Fprintf(&sb, "    subgraph w%dc%d[\"%s\"]\n", wi, ci, c)
			for _, it := range byWave[w][c] {
				id := ids[it.Key]
				fmt.Fprintf(&sb, "      %s[\"%s\"]\n", id, it.Key.unit())
				cls := strings.ReplaceAll(it.State.String(), "-", "_")
				classes[cls] = append(classes[cls], id)
			}
			sb.WriteString("    end\n")
		}
		sb.WriteString("  end\n")
	}
	for _, n := range rep.graph.Nodes() {
		for _, d := range n.Deps {
			if a, b := ids[d], ids[n.Key]; a != "" && b != "" {
				fmt.Fprintf(&sb, "  %s --> %s\n", a, b)
			}
		}
	}
	sb.WriteString("  classDef succeeded fill:#b7e1a1\n  classDef failed fill:#f4a6a6\n  classDef skipped fill:#fde2a7\n  classDef not_started fill:#e0e0e0\n")
	for _, cls := range []string{"succeeded", "failed", "skipped", "not_started"} {
		if len(classes[cls]) > 0 {
			fmt.Fprintf(&sb, "  class %s %s\n", strings.Join(classes[cls], ","), cls)
		}
	}
	return sb.String()
}

// bookkeeping runs an inventory write that follows a change already made
// on a member with a context that outlives the cancellation of ctx, for
// a short while, so that a cancelled Apply still records what it did.
func bookkeeping(ctx context.Context, write func(context.Context) error) error {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), bookkeepingTimeout)
	defer cancel()
	return write(c)
}

// bookkeepingTimeout bounds an inventory write after a cancel.
const bookkeepingTimeout = 10 * time.Second

// maxPasses bounds the reconciles Apply runs for one release in a row
// while each asks to come back at once.
const maxPasses = 4

// UnfinishedError reports a release whose reconcile ended without error
// but with more to do later (Next is requeue): Apply counts it as failed,
// so that nothing that depends on it starts and its wave's gate holds.
type UnfinishedError struct {
	// Release is namespace/name.
	Release string
	// Cluster is the member.
	Cluster string
	// Actions are the actions the reconciles ran.
	Actions []reconcile.Action
	// RequeueAfter is when the reconciler asks to come back.
	RequeueAfter time.Duration
	// Message is the release's Ready condition message.
	Message string
}

func (e *UnfinishedError) Error() string {
	msg := fmt.Sprintf("release %s on cluster %s is not finished after %v", e.Release, e.Cluster, e.Actions)
	if e.RequeueAfter > 0 {
		msg += fmt.Sprintf(" (next attempt in %v)", e.RequeueAfter)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// readyMessage is rel's Ready condition message, or "".
func readyMessage(rel *release.Release) string {
	if c := rel.Status.GetCondition(release.ConditionReady); c != nil {
		return c.Message
	}
	return ""
}
