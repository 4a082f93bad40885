package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
)

// Key names one release on one member cluster.
type Key struct {
	// Cluster is the member's name.
	Cluster string
	// Namespace and Name are the Release's.
	Namespace, Name string
}

// String renders the key as cluster:namespace/name.
func (k Key) String() string { return k.Cluster + ":" + k.Namespace + "/" + k.Name }

func keyLess(a, b Key) bool {
	if a.Cluster != b.Cluster {
		return a.Cluster < b.Cluster
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// Config is what a Fleet needs: Members, and Reconciler or
// ReconcilerConfig.
type Config struct {
	// Members are the member clusters.
	Members []release.Member
	// Reconciler reconciles each release on each member; its values
	// reader is where every release reads valuesFrom (ValuesFromHub). Set
	// it or ReconcilerConfig, not both.
	Reconciler *release.Reconciler
	// ReconcilerConfig is what the fleet builds its reconcilers from when
	// Reconciler is nil: one with ReconcilerConfig.Values (the hub's
	// reader, e.g. release.NewObjectValues(hub)) for releases that read
	// valuesFrom on the hub, and one per member whose Values is
	// release.NewObjectValues of that member's cluster, for releases that
	// read it on the member (ValuesFromMember). Member mode needs it.
	ReconcilerConfig *release.ReconcilerConfig
	// ValuesFrom is where releases without a ValuesFromAnnotation read
	// valuesFrom; default ValuesFromHub, where the Release itself lives
	// (see the package doc for why).
	ValuesFrom ValuesFrom
	// Store keeps the inventory where a restarted process finds it (see
	// NewObjectStore); nil keeps it in this process only (Inventory and
	// Restore carry it by hand).
	Store Store
	// Concurrency bounds the releases reconciled at once; default 8.
	Concurrency int
	// ClusterConcurrency bounds them per member; default 2.
	ClusterConcurrency int
	// Events receives progress events, one at a time; may be nil.
	Events func(Event)
	// Clock times events and bake times; default the system clock.
	Clock depgraph.Clock
}

// Fleet spreads Releases over member clusters, one real Helm release per
// member (visible with helm ls there): policies place each Release,
// override policies and values overriders give each member its own copy,
// and the Reconciler runs each copy. The Fleet keeps, per member and
// release, the copy last applied with its status (the inventory the
// reconciler's history and the garbage collection need), in a Store when
// Config has one, so that a restarted process finds it. Safe for
// concurrent use, one Apply at a time.
type Fleet struct {
	members   []release.Member
	byName    map[string]release.Member
	rec       *release.Reconciler
	memberRec map[string]*release.Reconciler
	cfg       Config
	applyMu   sync.Mutex

	loadMu sync.Mutex
	loaded bool

	mu      sync.Mutex
	applied map[Key]*release.Release
}

// New returns a Fleet for cfg.
func New(cfg Config) (*Fleet, error) {
	if cfg.ValuesFrom == "" {
		cfg.ValuesFrom = ValuesFromHub
	}
	if !cfg.ValuesFrom.valid() {
		return nil, fmt.Errorf("fleet: config: ValuesFrom: %q is neither %q nor %q", cfg.ValuesFrom, ValuesFromHub, ValuesFromMember)
	}
	members, err := release.SortMembers(cfg.Members)
	if err != nil {
		return nil, fmt.Errorf("fleet: config: %w", err)
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.ClusterConcurrency <= 0 {
		cfg.ClusterConcurrency = 2
	}
	if cfg.Clock == nil {
		cfg.Clock = depgraph.SystemClock()
	}
	f := &Fleet{members: members, byName: map[string]release.Member{}, cfg: cfg, applied: map[Key]*release.Release{}}
	for _, m := range members {
		f.byName[m.Facts.Name] = m
	}
	if err := f.buildReconcilers(cfg); err != nil {
		return nil, err
	}
	return f, nil
}

// Members returns the members, sorted by name.
func (f *Fleet) Members() []release.Member { return append([]release.Member(nil), f.members...) }

// Inputs are what a fleet should run.
type Inputs struct {
	// Releases to run.
	Releases []*release.Release
	// Policies place the Releases and override them per member.
	Policies policy.Set
}

// InputsOf takes the inputs out of decoded objects.
func InputsOf(objs *release.Objects) Inputs {
	return Inputs{Releases: objs.Releases, Policies: objs.Policies}
}

// Plan is what an Apply would do, computed without writing anything.
type Plan struct {
	// Items are the per-member release plans (garbage collection
	// included, as uninstalls), sorted by cluster, namespace and name.
	Items []*release.ReleasePlan
	// Warnings are the policy engine's (a policy that matches nothing, an
	// override of a path a kind lacks, …).
	Warnings []policy.Warning
	// Errors are every problem of the plan, each naming release and
	// member: placement problems of whole releases (no policy, an override
	// that fails on a member) and every item that failed (Item.Err), so a
	// plan with failed items never looks clean. Those of failed items are
	// *ItemError: Apply still runs the other items (a caller that wants
	// all or nothing refuses any error).
	Errors []error

	graph      *depgraph.Graph[Key]
	gc         *depgraph.Graph[Key]
	items      map[Key]*release.ReleasePlan
	valuesFrom map[Key]ValuesFrom
}

// ValuesFrom returns where the plan of k read its release's valuesFrom;
// false when the release has no valuesFrom (or k is not planned, or is
// an uninstall).
func (p *Plan) ValuesFrom(k Key) (ValuesFrom, bool) {
	v, ok := p.valuesFrom[k]
	return v, ok
}

// ItemError is a Plan error of one release on one member: the item's
// Err, which names both.
type ItemError struct {
	// Key names the member and release.
	Key Key
	// Err is the item's error.
	Err error
}

func (e *ItemError) Error() string { return e.Err.Error() }

// Unwrap returns the item's error.
func (e *ItemError) Unwrap() error { return e.Err }

// PlacementErrors returns the errors of Errors that are not an item's:
// what stops whole releases (no policy, an override that fails, a
// dependency cycle). A caller that lets Apply run what it can, member by
// member, refuses to go on only on these.
func (p *Plan) PlacementErrors() []error {
	var out []error
	for _, e := range p.Errors {
		var item *ItemError
		if !errors.As(e, &item) {
			out = append(out, e)
		}
	}
	return out
}

// Item returns the plan of one release on one member.
func (p *Plan) Item(k Key) (*release.ReleasePlan, bool) {
	it, ok := p.items[k]
	return it, ok
}

// Plan computes, without writing anything, for every member: which
// releases it gets after placement and overrides, the action each would
// take, the chart, the composed values, the rendered objects and the diff
// against what runs there now; and which releases it holds that are no
// longer wanted (uninstalls, unless suspended).
func (f *Fleet) Plan(ctx context.Context, in Inputs) (*Plan, error) {
	if err := f.ensureLoaded(ctx); err != nil {
		return nil, fmt.Errorf("fleet plan: %w", err)
	}
	engine, err := policy.NewEngine(in.Policies)
	if err != nil {
		return nil, fmt.Errorf("fleet plan: policies: %w", err)
	}
	objs := make([]*unstructured.Unstructured, 0, len(in.Releases))
	byRef := map[string]*release.Release{}
	for i, rel := range in.Releases {
		r := rel.DeepCopy()
		r.Default()
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("fleet plan: releases[%d]: %w", i, err)
		}
		u, err := toUnstructured(r)
		if err != nil {
			return nil, fmt.Errorf("fleet plan: releases[%d] %s: %w", i, refOf(r), err)
		}
		byRef[refOf(r)] = r
		objs = append(objs, u)
	}
	placement, err := engine.Place(objs, release.FactsOf(f.members))
	if placement == nil {
		return nil, fmt.Errorf("fleet plan: %w", err)
	}
	// A release that cannot be placed is named in Plan.Errors (below);
	// the others are still planned.
	plan := &Plan{Warnings: placement.Warnings, items: map[Key]*release.ReleasePlan{}, valuesFrom: map[Key]ValuesFrom{}}
	for _, op := range placement.Objects {
		if op.Err != nil {
			plan.Errors = append(plan.Errors, fmt.Errorf("release %s/%s: %w", op.Object.Namespace, op.Object.Name, op.Err))
		}
	}
	type todo struct {
		key  Key
		rel  *release.Release
		from ValuesFrom
		rec  *release.Reconciler
		err  error
	}
	var work []todo
	for _, co := range engine.Materialize(placement) {
		for _, e := range co.Errors {
			plan.Errors = append(plan.Errors, fmt.Errorf("member %s: %w", co.Cluster, e))
		}
		for _, u := range co.Objects {
			r, err := fromUnstructured(u)
			if err != nil {
				plan.Errors = append(plan.Errors, fmt.Errorf("member %s: release %s/%s after overrides: %w", co.Cluster, u.GetNamespace(), u.GetName(), err))
				continue
			}
			if err := r.Validate(); err != nil {
				plan.Errors = append(plan.Errors, fmt.Errorf("member %s: release after overrides: %w", co.Cluster, err))
				continue
			}
			k := Key{Cluster: co.Cluster, Namespace: r.Namespace, Name: r.Name}
			f.mu.Lock()
			if prev, ok := f.applied[k]; ok {
				r.Status = *prev.Status.DeepCopy()
			}
			f.mu.Unlock()
			w := todo{key: k, rel: r}
			w.rec = f.rec
			// Where valuesFrom is read matters only to a release that has
			// one; a bad annotation is an error either way.
			if w.from, w.err = f.valuesFromOf(k, r); w.err == nil && len(r.Spec.ValuesFrom) > 0 {
				w.rec, w.err = f.reconcilerFor(k, w.from)
			}
			work = append(work, w)
		}
	}
	sort.Slice(work, func(i, j int) bool { return keyLess(work[i].key, work[j].key) })
	plan.Items = make([]*release.ReleasePlan, len(work))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cfg.Concurrency)
	for i, w := range work {
		if w.err != nil {
			plan.Items[i] = &release.ReleasePlan{Cluster: w.key.Cluster, Release: w.rel, Action: release.ActionNone, Err: w.err}
			continue
		}
		g.Go(func() error {
			p := w.rec.Plan(gctx, f.byName[w.key.Cluster].Cluster, w.rel)
			p.Err = nameValuesFrom(w.key, w.from, p.Err)
			plan.Items[i] = p
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("fleet plan: %w", err)
	}
	for i, w := range work {
		plan.items[w.key] = plan.Items[i]
		if len(w.rel.Spec.ValuesFrom) > 0 && w.err == nil {
			plan.valuesFrom[w.key] = w.from
		}
		if err := plan.Items[i].Err; err != nil {
			plan.Errors = append(plan.Errors, &ItemError{Key: w.key, Err: err})
		}
	}

	// Garbage collection: what the fleet applied before and no longer
	// wants there.
	f.mu.Lock()
	var gone []Key
	for k := range f.applied {
		if _, ok := plan.items[k]; !ok {
			gone = append(gone, k)
		}
	}
	sort.Slice(gone, func(i, j int) bool { return keyLess(gone[i], gone[j]) })
	for _, k := range gone {
		prev := f.applied[k].DeepCopy()
		item := &release.ReleasePlan{Cluster: k.Cluster, Release: prev, State: release.StateInSync, Action: release.ActionUninstall, Reason: "no longer placed on this member"}
		if _, ok := byRef[k.Namespace+"/"+k.Name]; !ok {
			item.Reason = "removed from the inputs"
		}
		if prev.Spec.Suspend {
			item.Action, item.Reason = release.ActionNone, item.Reason+"; suspended, so left installed"
		}
		plan.Items = append(plan.Items, item)
		plan.items[k] = item
	}
	f.mu.Unlock()
	sort.SliceStable(plan.Items, func(i, j int) bool { return keyLess(keyOfPlan(plan.Items[i]), keyOfPlan(plan.Items[j])) })

	plan.graph, plan.gc = f.graphs(plan, byRef)
	if err := plan.graph.Validate(); err != nil {
		plan.Errors = append(plan.Errors, fmt.Errorf("dependencies: %w", err))
	}
	return plan, nil
}

func keyOfPlan(p *release.ReleasePlan) Key {
	return Key{Cluster: p.Cluster, Namespace: p.Release.Namespace, Name: p.Release.Name}
}

// graphs builds the dependency graph of the plan's releases, grouped by
// member, and the reversed graph of its uninstalls. A dependsOn entry is
// satisfied by the same release on the same member when it is placed
// there, else by every member running it (a dependency across clusters:
// the database on member A ready before the app on member B).
func (f *Fleet) graphs(plan *Plan, byRef map[string]*release.Release) (*depgraph.Graph[Key], *depgraph.Graph[Key]) {
	where := map[string][]Key{}
	for _, it := range plan.Items {
		if it.Action == release.ActionUninstall {
			continue
		}
		k := keyOfPlan(it)
		where[k.Namespace+"/"+k.Name] = append(where[k.Namespace+"/"+k.Name], k)
	}
	deps := func(k Key, rel *release.Release) []Key {
		var out []Key
		for _, d := range rel.Spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = rel.Namespace
			}
			ref := ns + "/" + d.Name
			same := Key{Cluster: k.Cluster, Namespace: ns, Name: d.Name}
			if _, ok := plan.items[same]; ok && plan.items[same].Action != release.ActionUninstall {
				out = append(out, same)
				continue
			}
			if ks, ok := where[ref]; ok {
				out = append(out, ks...)
				continue
			}
			out = append(out, same) // unknown: Validate reports it
		}
		return out
	}
	g, gc := depgraph.New[Key](), depgraph.New[Key]()
	for _, it := range plan.Items {
		k := keyOfPlan(it)
		if it.Action == release.ActionUninstall {
			gc.AddNode(depgraph.Node[Key]{Key: k, Group: k.Cluster})
			continue
		}
		g.AddNode(depgraph.Node[Key]{Key: k, Deps: deps(k, it.Release), Group: k.Cluster})
	}
	// Uninstall dependents before what they depend on.
	for _, it := range plan.Items {
		if it.Action != release.ActionUninstall {
			continue
		}
		k := keyOfPlan(it)
		for _, d := range it.Release.Spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = it.Release.Namespace
			}
			dk := Key{Cluster: k.Cluster, Namespace: ns, Name: d.Name}
			if p, ok := plan.items[dk]; ok && p.Action == release.ActionUninstall {
				// dk must wait for k: add k as a dependency of dk.
				gc.AddNode(depgraph.Node[Key]{Key: dk, Deps: []Key{k}, Group: dk.Cluster})
			}
		}
	}
	return g, mergeDuplicateNodes(gc)
}

// mergeDuplicateNodes folds nodes added several times into one with the
// union of their dependencies.
func mergeDuplicateNodes(g *depgraph.Graph[Key]) *depgraph.Graph[Key] {
	var order []Key
	nodes := map[Key]*depgraph.Node[Key]{}
	for _, n := range g.Nodes() {
		if m, ok := nodes[n.Key]; ok {
			m.Deps = append(m.Deps, n.Deps...)
			continue
		}
		c := n
		nodes[n.Key] = &c
		order = append(order, n.Key)
	}
	out := depgraph.New[Key]()
	for _, k := range order {
		out.AddNode(*nodes[k])
	}
	return out
}

func toUnstructured(r *release.Release) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	delete(u.Object, "status")
	u.SetAPIVersion(release.APIVersion)
	u.SetKind(release.Kind)
	return u, nil
}

func fromUnstructured(u *unstructured.Unstructured) (*release.Release, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	r := &release.Release{}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, err
	}
	return r, nil
}

// Table renders the plan as a table: member, release, state, action,
// chart, revision now, the Kubernetes version rendered for, where
// valuesFrom was read (hub, member, or - without valuesFrom), and errors.
func (p *Plan) Table() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tRELEASE\tSTATE\tACTION\tCHART\tREVISION\tKUBERNETES\tVALUESFROM\tNOTE")
	for _, it := range p.Items {
		note := it.Reason
		if it.Err != nil {
			note = it.Err.Error()
		}
		chart := "-"
		if it.Chart != "" {
			chart = it.Chart + "@" + it.Version
		}
		kube := it.KubeVersion
		switch {
		case kube == "":
			kube = "-"
		case it.CapabilitiesFrom == release.CapabilitiesFromHelmDefault:
			kube += " (helm default)"
		}
		from := "-"
		if v, ok := p.valuesFrom[keyOfPlan(it)]; ok {
			from = string(v)
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", it.Cluster, it.Release.Namespace, it.Release.Name, it.State, it.Action, chart, it.Revision, kube, from, note)
	}
	_ = tw.Flush()
	for _, e := range p.Errors {
		fmt.Fprintf(&sb, "error: %v\n", e)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&sb, "warning: %s\n", w.Message)
	}
	return sb.String()
}

// Diff renders every item's diff, each headed by its member and release.
func (p *Plan) Diff() string {
	var sb strings.Builder
	for _, it := range p.Items {
		if it.Diff == "" {
			continue
		}
		fmt.Fprintf(&sb, "### %s %s/%s (%s)\n%s", it.Cluster, it.Release.Namespace, it.Release.Name, it.Action, it.Diff)
	}
	return sb.String()
}

// planJSON is the JSON form of one plan item; values are redacted.
type planJSON struct {
	Cluster   string         `json:"cluster"`
	Namespace string         `json:"namespace"`
	Name      string         `json:"name"`
	State     release.State  `json:"state"`
	Action    release.Action `json:"action"`
	Reason    string         `json:"reason,omitempty"`
	Chart     string         `json:"chart,omitempty"`
	Version   string         `json:"version,omitempty"`
	Revision  int            `json:"revision"`
	// KubeVersion and CapabilitiesFrom: what the chart was rendered for.
	KubeVersion      string `json:"kubeVersion,omitempty"`
	CapabilitiesFrom string `json:"capabilitiesFrom,omitempty"`
	// ValuesFrom is where valuesFrom was read: hub or member.
	ValuesFrom ValuesFrom     `json:"valuesFrom,omitempty"`
	Values     map[string]any `json:"values,omitempty"`
	Objects    []string       `json:"objects,omitempty"`
	Diff       string         `json:"diff,omitempty"`
	Error      string         `json:"error,omitempty"`
}

// MarshalJSON renders the plan as JSON: items (with values redacted where
// they came from Secrets), errors and warnings.
func (p *Plan) MarshalJSON() ([]byte, error) {
	out := struct {
		Items    []planJSON `json:"items"`
		Errors   []string   `json:"errors,omitempty"`
		Warnings []string   `json:"warnings,omitempty"`
	}{Items: []planJSON{}}
	for _, it := range p.Items {
		j := planJSON{Cluster: it.Cluster, Namespace: it.Release.Namespace, Name: it.Release.Name, State: it.State,
			Action: it.Action, Reason: it.Reason, Chart: it.Chart, Version: it.Version, Revision: it.Revision, Diff: it.Diff,
			KubeVersion: it.KubeVersion, CapabilitiesFrom: it.CapabilitiesFrom, ValuesFrom: p.valuesFrom[keyOfPlan(it)]}
		if it.Values != nil {
			j.Values = it.Values.Redacted()
		}
		for _, o := range it.Objects {
			j.Objects = append(j.Objects, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
		}
		if it.Err != nil {
			j.Error = it.Err.Error()
		}
		out.Items = append(out.Items, j)
	}
	for _, e := range p.Errors {
		out.Errors = append(out.Errors, e.Error())
	}
	for _, w := range p.Warnings {
		out.Warnings = append(out.Warnings, w.Message)
	}
	return json.Marshal(out)
}

// Mermaid draws the plan's dependency graph, a box per member.
func (p *Plan) Mermaid() string { return p.graph.Mermaid(nil) }

// Inventory returns the per-member releases the fleet applied, with their
// status, sorted by key, each annotated with its member: what a caller
// without a Config.Store persists by hand to continue after a restart
// (see Restore).
func (f *Fleet) Inventory() []*release.Release {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]Key, 0, len(f.applied))
	for k := range f.applied {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	out := make([]*release.Release, len(keys))
	for i, k := range keys {
		r := f.applied[k].DeepCopy()
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		r.Annotations[MemberAnnotation] = k.Cluster
		out[i] = r
	}
	return out
}

// MemberAnnotation names the member of a Release in an Inventory.
const MemberAnnotation = "helmfleet.io/member"

// Restore replaces the fleet's inventory with one Inventory returned. It
// writes nothing to Config.Store, and the fleet no longer loads the
// store by itself (Load still does).
func (f *Fleet) Restore(inventory []*release.Release) error {
	applied := map[Key]*release.Release{}
	for i, r := range inventory {
		c := r.Annotations[MemberAnnotation]
		if _, ok := f.byName[c]; !ok {
			return fmt.Errorf("fleet restore: inventory[%d] %s: annotation %s: unknown member %q", i, refOf(r), MemberAnnotation, c)
		}
		cp := r.DeepCopy()
		delete(cp.Annotations, MemberAnnotation)
		applied[Key{Cluster: c, Namespace: r.Namespace, Name: r.Name}] = cp
	}
	f.loadMu.Lock()
	f.loaded = true
	f.loadMu.Unlock()
	f.mu.Lock()
	f.applied = applied
	f.mu.Unlock()
	return nil
}

// Status returns the status of one release on one member, as last
// applied.
func (f *Fleet) Status(k Key) (release.Status, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.applied[k]
	if !ok {
		return release.Status{}, false
	}
	return *r.Status.DeepCopy(), true
}

func (f *Fleet) emit(e Event) {
	if f.cfg.Events != nil {
		f.cfg.Events(e)
	}
}

// refOf names a release as namespace/name.
func refOf(r *release.Release) string { return r.Namespace + "/" + r.Name }

// since is the time from t to now by c.
func since(c depgraph.Clock, t time.Time) time.Duration { return c.Now().Sub(t) }
