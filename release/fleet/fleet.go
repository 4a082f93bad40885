package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values"
)

// Key names one unit on one member cluster: a release (a HelmRelease)
// or a Flux Kustomization.
type Key struct {
	// Cluster is the member's name.
	Cluster string
	// Namespace and Name are the unit's.
	Namespace, Name string
	// Kind is empty for a release (a HelmRelease) and KindKustomization
	// for a Kustomization. The fleet never writes "HelmRelease" here, so
	// that the keys of releases stay what they were before Kustomizations.
	Kind string
}

// KindKustomization is the Kind of a Kustomization's Key.
const KindKustomization = release.KustomizationKind

// IsKustomization reports whether k names a Kustomization.
func (k Key) IsKustomization() bool { return k.Kind == KindKustomization }

// String renders the key as cluster:namespace/name for a release and
// cluster:Kustomization/namespace/name for a Kustomization.
func (k Key) String() string { return k.Cluster + ":" + k.unit() }

// unit renders the key without its member: namespace/name, or
// Kustomization/namespace/name.
func (k Key) unit() string {
	if k.Kind != "" {
		return k.Kind + "/" + k.Namespace + "/" + k.Name
	}
	return k.Namespace + "/" + k.Name
}

// keyLess orders keys by cluster, namespace, name, then kind (releases
// first).
func keyLess(a, b Key) bool {
	if a.Cluster != b.Cluster {
		return a.Cluster < b.Cluster
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.Kind < b.Kind
}

// Config is what a Fleet needs: Members, and Reconciler or
// ReconcilerConfig.
type Config struct {
	// Members are the member clusters.
	Members []release.Member
	// Reconciler reconciles each release on each member; its values
	// reader is where every release reads valuesFrom (ValuesFromHub). Set
	// it or ReconcilerConfig, not both.
	Reconciler *reconcile.Reconciler
	// ReconcilerConfig is what the fleet builds its reconcilers from when
	// Reconciler is nil: one with ReconcilerConfig.Values (the hub's
	// reader, e.g. release.NewObjectValues(hub)) for releases that read
	// valuesFrom on the hub, and one per member whose Values is
	// release.NewObjectValues of that member's cluster, for releases that
	// read it on the member (ValuesFromMember). Member mode needs it.
	ReconcilerConfig *reconcile.Config
	// ValuesFrom is where releases without a ValuesFromAnnotation read
	// valuesFrom; default ValuesFromHub, where the Release itself lives
	// (see the package doc for why).
	ValuesFrom ValuesFrom
	// DefaultServiceAccount is the service account releases that name no
	// spec.serviceAccountName act as on their members (Flux's
	// --default-service-account); empty: the member's own identity. See
	// "Service accounts" in the package doc.
	DefaultServiceAccount string
	// Store keeps the inventory where a restarted process finds it (see
	// NewObjectStore); nil keeps it in this process only (Inventory and
	// Restore carry it by hand).
	Store Store
	// Concurrency bounds the releases reconciled at once; default 8.
	Concurrency int
	// ClusterConcurrency bounds them per member; default 2.
	ClusterConcurrency int
	// Events receives progress events, one at a time; may be nil. A
	// panic of Events is contained: Apply calls it no more and returns
	// the panic as a *release.CallbackPanicError.
	Events func(Event)
	// Clock times events and bake times; default the system clock.
	Clock depgraph.Clock
	// Kustomize runs the Kustomizations on every member (see the package
	// doc): it must leave out of what it applies the units the fleet
	// runs itself, so build it with ReconcilerConfig.Exclude =
	// kustomize.FleetUnit (a plan that would apply one is an error). Its
	// Variables, if set, is where every Kustomization reads
	// postBuild.substituteFrom. Set it or KustomizeConfig, not both;
	// inputs with Kustomizations need one of them.
	Kustomize *kustomize.Reconciler
	// KustomizeConfig is what the fleet builds one Kustomization
	// reconciler per member from, each excluding the fleet's units (and
	// what KustomizeConfig.Exclude excludes) and, when
	// KustomizeConfig.Variables is nil, reading substituteFrom on its
	// member, as Flux's kustomize-controller on that cluster does.
	KustomizeConfig *kustomize.ReconcilerConfig
	// NoCrossNamespaceRefs refuses, on every member, a release or
	// Kustomization (placed directly or produced by a Kustomization, as
	// overridden for the member) whose references name another
	// namespace (Flux's --no-cross-namespace-refs; see
	// release.Release.DenyCrossNamespaceRefs and
	// release.Kustomization.DenyCrossNamespaceRefs): its plan item fails
	// with a *release.AccessDeniedError, nothing is read through its
	// references, its dependsOn entries are left out of the dependency
	// graph (so no other unit's state shows in its report), and Apply
	// installs, upgrades and uninstalls nothing for it, suspended or not.
	// Off by default, as in Flux; a platform running tenants turns it on.
	NoCrossNamespaceRefs bool
	// AdditiveCELDependencyCheck is helm-controller's and
	// kustomize-controller's feature gate of that name (default off): a
	// dependency whose dependsOn entry has a readyExpr must then be Ready
	// too; off, the readyExpr replaces the Ready check. Apply evaluates
	// readyExpr over the dependency's copy last applied, with its status.
	AdditiveCELDependencyCheck bool
	// Repository, when set, is the repository the fleet runs: it serves
	// the sources of every Kustomization per member and resolves the
	// charts of every release from the sources the Kustomizations
	// produce on its member (see Repository). Set ReconcilerConfig
	// without Charts, and KustomizeConfig without Sources or neither.
	Repository *Repository
	// Mirrors rewrite the URLs of the chart sources per member (see
	// Mirror); they need Repository.
	Mirrors []Mirror
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
	rec       *reconcile.Reconciler
	memberRec map[string]*reconcile.Reconciler
	cfg       Config
	applyMu   sync.Mutex
	callbacks callbacks // of the Apply under way

	loadMu sync.Mutex
	loaded bool

	kust kustomizer
	repo *Repository // Config.Repository
	// mirrors are the Config.Mirrors rules of each member.
	mirrors map[string]mirrorRules

	inv *inventory // what the fleet applied last
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
	f := &Fleet{members: members, byName: map[string]release.Member{}, cfg: cfg, inv: newInventory()}
	for _, m := range members {
		f.byName[m.Facts.Name] = m
	}
	if f.mirrors, err = checkMirrors(cfg, members); err != nil {
		return nil, err
	}
	if err := f.useRepository(&cfg); err != nil {
		return nil, err
	}
	f.cfg = cfg
	if err := f.buildReconcilers(cfg); err != nil {
		return nil, err
	}
	if err := f.buildKustomizers(cfg); err != nil {
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
	// Kustomizations to run (Flux kustomize.toolkit.fluxcd.io/v1); they
	// need Config.Kustomize.
	Kustomizations []*release.Kustomization
	// Policies place the Releases and Kustomizations and override them
	// per member.
	Policies policy.Set
	// Sources holds the chart sources (HelmRepositories, OCIRepositories,
	// HelmCharts) of the inputs, served on every member before those the
	// Kustomizations produce there; only Config.Repository reads them.
	Sources *release.Objects
}

// InputsOf takes the inputs out of decoded objects.
func InputsOf(objs *release.Objects) Inputs {
	return Inputs{Releases: objs.Releases, Kustomizations: objs.Kustomizations, Policies: objs.Policies, Sources: objs}
}

// Plan is what an Apply would do, computed without writing anything.
type Plan struct {
	// Items are the per-member release plans (garbage collection
	// included, as uninstalls), sorted by cluster, namespace and name,
	// the releases Kustomizations produce included.
	Items []*reconcile.Plan
	// Kustomizations are the per-member Kustomization plans (garbage
	// collection included, as deletes), sorted by cluster, namespace and
	// name.
	Kustomizations []*KustomizationPlan
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
	items      map[Key]*reconcile.Plan
	kitems     map[Key]*KustomizationPlan
	valuesFrom map[Key]ValuesFrom
	// gone are the releases garbage collection uninstalls (no longer
	// placed); a placed release whose reconciler plans an uninstall (one
	// left 'uninstalling') is reconciled, not removed.
	gone map[Key]bool
	// producer maps a release a Kustomization produces to that
	// Kustomization; produced is the reverse, in key order.
	producer map[Key]Key
	produced map[Key][]Key
	// sources are, by member, the chart sources the Kustomizations
	// produced there (Config.Repository), mirrored.
	sources map[string]*release.Objects
	// Mirrored are the chart sources Config.Mirrors rewrote, by member
	// and source (in the order they were met, which is deterministic).
	Mirrored []MirroredSource
	// rules are the Config.Mirrors rules and mirrored the rewritten
	// sources (by MirroredSource.Source) of each member that has rules.
	rules    map[string]mirrorRules
	mirrored map[string]map[string]MirroredSource
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

// MemberError is a Plan error of one unit on one member found before the
// unit could be planned there: an override that fails on that member, or
// what the overrides made of the unit that does not decode or validate.
// The unit is neither planned nor applied on that member, so a caller
// that sums up the unit's members counts it as a failed one.
type MemberError struct {
	// Key names the member and the unit.
	Key Key
	// Err is the failure; it names the unit.
	Err error
}

func (e *MemberError) Error() string { return "member " + e.Key.Cluster + ": " + e.Err.Error() }

// Unwrap returns the failure.
func (e *MemberError) Unwrap() error { return e.Err }

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
func (p *Plan) Item(k Key) (*reconcile.Plan, bool) {
	it, ok := p.items[k]
	return it, ok
}

// Plan computes, without writing anything, for every member: which
// releases and Kustomizations it gets after placement and overrides;
// for each release the action it would take, the chart, the composed
// values, the rendered objects and the diff against what runs there now;
// for each Kustomization its objects, their diff and what prune would
// delete, and the releases it produces there (planned like the others);
// and which units it holds that are no longer wanted (uninstalls and
// deletes, unless suspended).
func (f *Fleet) Plan(ctx context.Context, in Inputs) (*Plan, error) {
	if err := f.ensureLoaded(ctx); err != nil {
		return nil, fmt.Errorf("fleet plan: %w", err)
	}
	if len(in.Kustomizations) > 0 && f.kust == nil {
		k := in.Kustomizations[0]
		return nil, fmt.Errorf("fleet plan: kustomizations[0] %s/%s: the fleet has neither Config.Kustomize nor Config.KustomizeConfig to build and apply Kustomizations with", k.Namespace, k.Name)
	}
	engine, err := policy.NewEngine(in.Policies)
	if err != nil {
		return nil, fmt.Errorf("fleet plan: policies: %w", err)
	}
	objs, byRef, kByRef, err := inputObjects(in)
	if err != nil {
		return nil, err
	}
	placement, err := engine.Place(objs, release.FactsOf(f.members))
	if placement == nil {
		return nil, fmt.Errorf("fleet plan: %w", err)
	}
	// A unit that cannot be placed is named in Plan.Errors (below); the
	// others are still planned.
	plan := &Plan{Warnings: placement.Warnings, items: map[Key]*reconcile.Plan{}, kitems: map[Key]*KustomizationPlan{},
		valuesFrom: map[Key]ValuesFrom{}, gone: map[Key]bool{}, producer: map[Key]Key{}, produced: map[Key][]Key{}}
	for _, op := range placement.Objects {
		if op.Err != nil {
			what := "release"
			if op.Object.Kind == release.KustomizationKind {
				what = "kustomization"
			}
			plan.Errors = append(plan.Errors, fmt.Errorf("%s %s/%s: %w", what, op.Object.Namespace, op.Object.Name, op.Err))
		}
	}
	credits := func(string, *unstructured.Unstructured) []values.Credit { return nil }
	if len(in.Policies.Override)+len(in.Policies.ClusterOverride) > 0 {
		credits = func(cluster string, u *unstructured.Unstructured) []values.Credit {
			return valuesCredits(engine, placement, in.Policies, cluster, u)
		}
	}
	if in.Sources != nil {
		for _, m := range f.members {
			plan.addSources(m.Facts.Name, in.Sources, f.sourceRules(engine, in.Policies, m.Facts.Name))
		}
	}
	work, kwork := f.memberWork(plan, engine.Materialize(placement), credits)
	// Kustomizations first: what they produce is planned with the
	// releases.
	produced, err := f.planKustomizations(ctx, plan, in.Policies, engine, kwork, work)
	if err != nil {
		return nil, err
	}
	if err := f.planReleases(ctx, plan, append(work, produced...)); err != nil {
		return nil, err
	}

	// Garbage collection: what the fleet applied before and no longer
	// wants there.
	f.collectGarbage(plan, byRef, kByRef)
	sort.SliceStable(plan.Items, func(i, j int) bool { return keyLess(keyOfPlan(plan.Items[i]), keyOfPlan(plan.Items[j])) })
	sort.SliceStable(plan.Kustomizations, func(i, j int) bool {
		return keyLess(plan.Kustomizations[i].Key(), plan.Kustomizations[j].Key())
	})

	var applied []*release.Kustomization
	for _, kp := range plan.Kustomizations {
		if kp.Action != ActionDelete {
			applied = append(applied, kp.Kustomization)
		}
	}
	if w := release.KustomizationIntervalWarning(applied); w != "" {
		plan.Warnings = append(plan.Warnings, policy.Warning{Message: w})
	}

	plan.graph, plan.gc = f.graphs(plan)
	plan.deferMissingKinds()
	if err := plan.graph.Validate(); err != nil {
		plan.Errors = append(plan.Errors, fmt.Errorf("dependencies: %w", err))
	}
	return plan, nil
}

// inputObjects defaults and validates the inputs' releases and
// Kustomizations and returns them as objects for the policy engine, with
// the releases and the Kustomizations by namespace/name.
func inputObjects(in Inputs) ([]*unstructured.Unstructured, map[string]*release.Release, map[string]bool, error) {
	objs := make([]*unstructured.Unstructured, 0, len(in.Releases)+len(in.Kustomizations))
	byRef := map[string]*release.Release{}
	for i, rel := range in.Releases {
		r := rel.DeepCopy()
		r.Default()
		if err := r.Validate(); err != nil {
			return nil, nil, nil, fmt.Errorf("fleet plan: releases[%d]: %w", i, err)
		}
		u, err := toUnstructured(r)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("fleet plan: releases[%d] %s: %w", i, refOf(r), err)
		}
		byRef[refOf(r)] = r
		objs = append(objs, u)
	}
	kByRef := map[string]bool{}
	for i, ks := range in.Kustomizations {
		k := ks.DeepCopy()
		k.Default()
		if err := k.Validate(); err != nil {
			return nil, nil, nil, fmt.Errorf("fleet plan: kustomizations[%d]: %w", i, err)
		}
		u, err := kustomizationToUnstructured(k)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("fleet plan: kustomizations[%d] %s/%s: %w", i, k.Namespace, k.Name, err)
		}
		kByRef[k.Namespace+"/"+k.Name] = true
		objs = append(objs, u)
	}
	return objs, byRef, kByRef, nil
}

// memberWork turns the members' objects into the plan's work: the
// releases and the Kustomizations to plan, each with the status it was
// last applied with; what cannot be decoded or is invalid goes to
// plan.Errors.
func (f *Fleet) memberWork(plan *Plan, members []policy.ClusterObjects, credits func(cluster string, u *unstructured.Unstructured) []values.Credit) ([]todo, []*KustomizationPlan) {
	var work []todo
	var kwork []*KustomizationPlan
	for _, co := range members {
		for _, e := range co.Errors {
			plan.Errors = append(plan.Errors, memberError(co.Cluster, e))
		}
		for _, u := range co.Objects {
			if isKustomization(u) {
				k, err := kustomizationFromUnstructured(u)
				if err == nil {
					err = k.Validate()
				}
				if err != nil {
					plan.Errors = append(plan.Errors, &MemberError{Key: Key{Cluster: co.Cluster, Namespace: u.GetNamespace(), Name: u.GetName(), Kind: KindKustomization},
						Err: fmt.Errorf("kustomization %s/%s after overrides: %w", u.GetNamespace(), u.GetName(), err)})
					continue
				}
				key := Key{Cluster: co.Cluster, Namespace: k.Namespace, Name: k.Name, Kind: KindKustomization}
				if st, ok := f.inv.kustomizationStatus(key); ok {
					k.Status = st
				}
				kwork = append(kwork, &KustomizationPlan{Cluster: co.Cluster, Kustomization: k, Action: ActionApply})
				continue
			}
			r, err := fromUnstructured(u)
			if err != nil {
				plan.Errors = append(plan.Errors, &MemberError{Key: Key{Cluster: co.Cluster, Namespace: u.GetNamespace(), Name: u.GetName()},
					Err: fmt.Errorf("release %s/%s after overrides: %w", u.GetNamespace(), u.GetName(), err)})
				continue
			}
			if err := r.Validate(); err != nil {
				plan.Errors = append(plan.Errors, &MemberError{Key: Key{Cluster: co.Cluster, Namespace: u.GetNamespace(), Name: u.GetName()},
					Err: fmt.Errorf("release after overrides: %w", err)})
				continue
			}
			setCredits(r, credits(co.Cluster, u))
			work = append(work, f.releaseWork(co.Cluster, r))
		}
	}
	return work, kwork
}

// valuesCredits returns, for the release u placed on cluster, the places
// of spec.values that override rules set there, each with the policy,
// rule and overrider that set it, in the order they were applied. A rule
// that names a place in the values (a plaintext or values overrider with
// a path) is credited with that place, a values overrider's merge with
// the leaves of its patch, and a rule that replaces the values as a whole
// with all of them.
func valuesCredits(engine *policy.Engine, placement *policy.Placement, policies policy.Set, cluster string, u *unstructured.Unstructured) []values.Credit {
	key := policy.ObjectKey{APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
	x, err := engine.Explain(placement, key, cluster)
	if err != nil {
		return nil // u was rendered from this placement: Explain knows it
	}
	var out []values.Credit
	for _, a := range x.Applied {
		by := fmt.Sprintf("%s rule %d %s", a.Policy, a.Rule, a.Overrider)
		for _, t := range a.Targets {
			switch {
			case strings.HasPrefix(t, policy.ValuesPath+"/"):
				out = append(out, values.Credit{Pointer: strings.TrimPrefix(t, policy.ValuesPath), By: by})
			case t != policy.ValuesPath:
			case strings.HasPrefix(a.Overrider, "overriders.valuesOverrider["):
				for _, p := range leafPointers("", mergeOf(policies, a)) {
					out = append(out, values.Credit{Pointer: p, By: by})
				}
			default:
				out = append(out, values.Credit{Pointer: "", By: by})
			}
		}
	}
	return out
}

// mergeOf returns the merge patch of the values overrider a applied,
// decoded; nil when a is no values overrider's merge.
func mergeOf(policies policy.Set, a policy.Applied) map[string]any {
	var i int
	if _, err := fmt.Sscanf(a.Overrider, "overriders.valuesOverrider[%d]", &i); err != nil {
		return nil
	}
	var spec *policy.OverrideSpec
	for j := range policies.Override {
		if p := &policies.Override[j]; a.Policy.Kind == policy.KindOverridePolicy && p.Namespace == a.Policy.Namespace && p.Name == a.Policy.Name {
			spec = &p.Spec
		}
	}
	for j := range policies.ClusterOverride {
		if p := &policies.ClusterOverride[j]; a.Policy.Kind == policy.KindClusterOverridePolicy && p.Name == a.Policy.Name {
			spec = &p.Spec
		}
	}
	if spec == nil {
		return nil
	}
	ovs := spec.Overriders // the deprecated single-rule form
	if len(spec.OverrideRules) > 0 {
		if a.Rule >= len(spec.OverrideRules) {
			return nil
		}
		ovs = spec.OverrideRules[a.Rule].Overriders
	}
	if i >= len(ovs.ValuesOverrider) {
		return nil
	}
	m := ovs.ValuesOverrider[i].Merge
	var patch map[string]any
	if m == nil || json.Unmarshal(m.Raw, &patch) != nil {
		return nil
	}
	return patch
}

// leafPointers lists the JSON pointers of the leaves a merge patch sets
// (its nulls delete, and set nothing), sorted.
func leafPointers(prefix string, patch map[string]any) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(patch)) {
		p := prefix + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
		switch v := patch[k].(type) {
		case nil:
		case map[string]any:
			if len(v) > 0 {
				out = append(out, leafPointers(p, v)...)
				continue
			}
			out = append(out, p)
		default:
			out = append(out, p)
		}
	}
	return out
}

// setCredits writes credits into r's values.CreditsAnnotation, which the
// fleet owns on a member's copy: without credits it is removed.
func setCredits(r *release.Release, credits []values.Credit) {
	if len(credits) == 0 {
		delete(r.Annotations, values.CreditsAnnotation)
		return
	}
	data, err := json.Marshal(credits)
	if err != nil {
		return // strings only: Marshal does not fail
	}
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[values.CreditsAnnotation] = string(data)
}

// memberError is the Plan error of err, a failure of the policy engine
// on member cluster: a *MemberError naming the unit when err is an
// *policy.OverrideError (the error of one object on one member).
func memberError(cluster string, err error) error {
	oe, ok := errors.AsType[*policy.OverrideError](err)
	if !ok {
		return fmt.Errorf("member %s: %w", cluster, err)
	}
	k := Key{Cluster: cluster, Namespace: oe.Object.Namespace, Name: oe.Object.Name}
	if oe.Object.Kind == release.KustomizationKind {
		k.Kind = KindKustomization
	}
	return &MemberError{Key: k, Err: err}
}

// planReleases plans the work's releases on their members, at most
// Config.Concurrency at a time, into plan (in key order), naming each
// failed item in plan.Errors.
func (f *Fleet) planReleases(ctx context.Context, plan *Plan, work []todo) error {
	sort.Slice(work, func(i, j int) bool { return keyLess(work[i].key, work[j].key) })
	plan.Items = make([]*reconcile.Plan, len(work))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cfg.Concurrency)
	for i, w := range work {
		if w.err != nil {
			plan.Items[i] = &reconcile.Plan{Cluster: w.key.Cluster, Release: w.rel, Action: reconcile.ActionNone, Err: w.err}
			continue
		}
		g.Go(func() error {
			var p *reconcile.Plan
			if err := release.Contain("release.Cluster of member "+w.key.Cluster, func() error {
				p = w.rec.Plan(withMemberSources(gctx, plan, w.key.Cluster), w.cluster, w.rel)
				return nil
			}); err != nil {
				p = &reconcile.Plan{Cluster: w.key.Cluster, Release: w.rel, Action: reconcile.ActionNone, Err: err}
			}
			p.Err = nameValuesFrom(w.key, w.from, p.Err)
			plan.Items[i] = p
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fleet plan: %w", err)
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
	return nil
}

// todo is a release to plan on a member.
type todo struct {
	key  Key
	rel  *release.Release
	from ValuesFrom
	rec  *reconcile.Reconciler
	// cluster is the member as the release acts on it (releaseCluster).
	cluster release.Cluster
	err     error
}

// releaseWork prepares the plan of member's copy r: its last status and
// the reconciler that reads its valuesFrom.
func (f *Fleet) releaseWork(member string, r *release.Release) todo {
	k := Key{Cluster: member, Namespace: r.Namespace, Name: r.Name}
	if st, ok := f.inv.releaseStatus(k); ok {
		r.Status = st
	}
	w := todo{key: k, rel: r, rec: f.rec}
	if w.err = f.denyCrossNamespaceRefs(r); w.err != nil {
		return w
	}
	// Where valuesFrom is read matters only to a release that has one; a
	// bad annotation is an error either way.
	if w.from, w.err = f.valuesFromOf(k, r); w.err == nil && len(r.Spec.ValuesFrom) > 0 {
		w.rec, w.err = f.reconcilerFor(k, w.from)
	}
	if w.err == nil {
		w.cluster, w.err = f.releaseCluster(member, r)
	}
	return w
}

// collectGarbage adds to plan what the fleet applied before and the plan
// no longer has: releases to uninstall and Kustomizations to delete,
// unless suspended. A unit a Kustomization produced is left in place
// when that Kustomization does not prune it (as Flux orphans it) or
// failed (what it produces is unknown). A unit that failed on its member
// before it could be planned (a *MemberError: an override that fails
// there) is still placed there: it is left in place too.
func (f *Fleet) collectGarbage(plan *Plan, byRef map[string]*release.Release, kByRef map[string]bool) {
	failed := map[Key]bool{}
	for _, e := range plan.Errors {
		if me, ok := errors.AsType[*MemberError](e); ok {
			failed[me.Key] = true
		}
	}
	goneRels, goneKusts := f.inv.except(func(k Key) bool {
		if failed[k] {
			return true
		}
		if k.IsKustomization() {
			_, ok := plan.kitems[k]
			return ok
		}
		_, ok := plan.items[k]
		return ok
	})
	var goneK []*KustomizationPlan
	for k, prev := range goneKusts {
		item := &KustomizationPlan{Cluster: k.Cluster, Kustomization: prev, State: StateRemoved, Action: ActionDelete, Reason: "no longer placed on this member"}
		if !kByRef[k.Namespace+"/"+k.Name] {
			item.Reason = "removed from the inputs"
		}
		goneK = append(goneK, item)
		plan.kitems[k] = item
	}
	sort.Slice(goneK, func(i, j int) bool { return keyLess(goneK[i].Key(), goneK[j].Key()) })
	// Parents first, so that a child sees whether its parent prunes it.
	for range maxNesting + 1 {
		for _, item := range goneK {
			prev := item.Kustomization
			item.Action, item.Reason = ActionDelete, strings.SplitN(item.Reason, ";", 2)[0]
			if reason, keep := orphaned(plan, item.Cluster, prev.Labels); keep {
				item.Action, item.Reason = reconcile.ActionNone, reason
				continue
			} else if reason != "" {
				item.Reason = reason
			}
			switch {
			case prev.Spec.Suspend:
				item.Action, item.Reason = reconcile.ActionNone, item.Reason+"; suspended, so left in place"
			case prev.DeletesInventory():
				item.Reason += "; its objects are pruned"
			default:
				item.Reason += fmt.Sprintf("; its objects are left in place (deletionPolicy %s, prune %t)", prev.GetDeletionPolicy(), prev.Spec.Prune)
			}
		}
	}
	plan.Kustomizations = append(plan.Kustomizations, goneK...)
	gone := make([]Key, 0, len(goneRels))
	for k := range goneRels {
		gone = append(gone, k)
	}
	sort.Slice(gone, func(i, j int) bool { return keyLess(gone[i], gone[j]) })
	for _, k := range gone {
		prev := goneRels[k]
		item := &reconcile.Plan{Cluster: k.Cluster, Release: prev, State: StateRemoved, Action: reconcile.ActionUninstall, Reason: "no longer placed on this member"}
		if _, ok := byRef[k.Namespace+"/"+k.Name]; !ok {
			item.Reason = "removed from the inputs"
		}
		if reason, keep := orphaned(plan, k.Cluster, prev.Labels); keep {
			item.Action, item.Reason = reconcile.ActionNone, reason
		} else if reason != "" {
			item.Reason = reason
		}
		if prev.Spec.Suspend && item.Action == reconcile.ActionUninstall {
			item.Action, item.Reason = reconcile.ActionNone, item.Reason+"; suspended, so left installed"
		}
		plan.Items = append(plan.Items, item)
		plan.items[k] = item
		plan.gone[k] = item.Action == reconcile.ActionUninstall
	}
}

// orphaned says, for a unit applied before and no longer planned whose
// labels name the Kustomization that produced it, why it goes or stays:
// it stays (keep) when that Kustomization stays and fails (what it
// produces is unknown) or does not prune, or is deleted without deleting
// its objects, as Flux leaves them; "" when no Kustomization of the plan
// produced it.
func orphaned(plan *Plan, member string, labels map[string]string) (reason string, keep bool) {
	pk, ok := producerOf(member, labels)
	if !ok {
		return "", false
	}
	kp, ok := plan.kitems[pk]
	if !ok {
		return "", false
	}
	p := pk.unit()
	switch {
	case kp.Action == ActionDelete && kp.Kustomization.DeletesInventory():
		return p + " is deleted and prunes it", false
	case kp.Action == ActionDelete:
		return p + " is deleted and does not prune: left in place, as Flux orphans it", true
	case kp.Err != nil:
		return p + " failed, so what it produces is unknown: left in place", true
	case kp.Action == reconcile.ActionNone:
		return p + " is left as it is (" + kp.Reason + "): so is what it produced", true
	case !kp.Kustomization.Spec.Prune:
		return "no longer produced by " + p + ", which does not prune: left in place, as Flux orphans it", true
	}
	return "no longer produced by " + p, false
}

func keyOfPlan(p *reconcile.Plan) Key {
	return Key{Cluster: p.Cluster, Namespace: p.Release.Namespace, Name: p.Release.Name}
}

// unit is one node of the plan's graphs: a release or a Kustomization.
type unit struct {
	key       Key
	removal   bool
	dependsOn []release.DependencyReference
	// denied is set when NoCrossNamespaceRefs refused the unit: it
	// depends on nothing, so that it fails at once with its refusal.
	denied bool
	// ownKind is what a dependsOn entry without kind names.
	ownKind string
	labels  map[string]string
}

// units lists the plan's releases and Kustomizations in key order.
func (p *Plan) units() []unit {
	out := make([]unit, 0, len(p.Items)+len(p.Kustomizations))
	for _, it := range p.Items {
		out = append(out, unit{key: keyOfPlan(it), removal: p.gone[keyOfPlan(it)], dependsOn: it.Release.Spec.DependsOn, denied: denied(it.Err), ownKind: release.Kind, labels: it.Release.Labels})
	}
	for _, it := range p.Kustomizations {
		out = append(out, unit{key: it.Key(), removal: it.Action == ActionDelete, dependsOn: it.Kustomization.Spec.DependsOn, denied: denied(it.Err), ownKind: release.KustomizationKind, labels: it.Kustomization.Labels})
	}
	sort.SliceStable(out, func(i, j int) bool { return keyLess(out[i].key, out[j].key) })
	return out
}

// planned reports whether k is in the plan and not being removed.
func (p *Plan) planned(k Key) bool {
	if k.IsKustomization() {
		it, ok := p.kitems[k]
		return ok && it.Action != ActionDelete
	}
	_, ok := p.items[k]
	return ok && !p.gone[k]
}

// Removed reports whether k is in the plan only to be removed from its
// member: a release garbage collection uninstalls (it left the member or
// the inputs), a Kustomization it deletes. A placed release whose own
// plan is an uninstall (a remediation) is not.
func (p *Plan) Removed(k Key) bool { return p.removed(k) }

// removed reports whether k is in the plan as an uninstall or delete.
func (p *Plan) removed(k Key) bool {
	if k.IsKustomization() {
		it, ok := p.kitems[k]
		return ok && it.Action == ActionDelete
	}
	return p.gone[k]
}

// depKey is the key, on member, of a dependsOn entry of a unit of kind
// own in namespace ns.
func depKey(member, ns, own string, d release.DependencyReference) Key {
	if d.Namespace != "" {
		ns = d.Namespace
	}
	k := Key{Cluster: member, Namespace: ns, Name: d.Name}
	if d.GetKind(own) == release.KustomizationKind {
		k.Kind = KindKustomization
	}
	return k
}

// graphs builds the dependency graph of the plan's units, grouped by
// member, and the reversed graph of its removals. A dependsOn entry names
// a release or, with kind Kustomization (or from a Kustomization, without
// kind), a Kustomization; it is satisfied by that unit on the same member
// when it is placed there, else by every member running it (a dependency
// across clusters: the database on member A ready before the app on
// member B). A release a Kustomization produces depends on that
// Kustomization, so it starts after the Kustomization's own dependencies
// and objects; a dependency on a Kustomization with spec.wait is a
// dependency on the releases it produces too, as Flux's wait includes
// their Ready.
func (f *Fleet) graphs(plan *Plan) (*depgraph.Graph[Key], *depgraph.Graph[Key]) {
	units := plan.units()
	where := map[Key][]Key{}
	for _, u := range units {
		if !u.removal {
			ref := Key{Namespace: u.key.Namespace, Name: u.key.Name, Kind: u.key.Kind}
			where[ref] = append(where[ref], u.key)
		}
	}
	expand := func(out []Key, d Key) []Key {
		out = append(out, d)
		if kp, ok := plan.kitems[d]; ok {
			out = append(out, waitedFor(kp.Kustomization, plan.produced[d])...)
		}
		return out
	}
	deps := func(u unit) []Key {
		var out []Key
		if u.denied {
			return nil
		}
		if pk, ok := plan.producer[u.key]; ok {
			out = append(out, pk)
		}
		for _, d := range u.dependsOn {
			same := depKey(u.key.Cluster, u.key.Namespace, u.ownKind, d)
			if plan.planned(same) {
				out = expand(out, same)
				continue
			}
			if ks, ok := where[Key{Namespace: same.Namespace, Name: same.Name, Kind: same.Kind}]; ok {
				for _, k := range ks {
					out = expand(out, k)
				}
				continue
			}
			out = append(out, same) // unknown: Validate reports it
		}
		return out
	}
	g, gc := depgraph.New[Key](), depgraph.New[Key]()
	for _, u := range units {
		if !u.removal {
			g.AddNode(depgraph.Node[Key]{Key: u.key, Deps: deps(u), Group: u.key.Cluster})
		}
	}
	// Remove dependents before what they depend on, and a Kustomization's
	// releases before the Kustomization (whose prune may delete their
	// namespace): a removal waits for the removals that depend on it.
	after := map[Key][]Key{}
	for _, u := range units {
		if !u.removal {
			continue
		}
		var before []Key
		for _, d := range u.dependsOn {
			before = append(before, depKey(u.key.Cluster, u.key.Namespace, u.ownKind, d))
		}
		if pk, ok := producerOf(u.key.Cluster, u.labels); ok {
			before = append(before, pk)
		}
		for _, dk := range before {
			if plan.removed(dk) {
				after[dk] = append(after[dk], u.key)
			}
		}
	}
	for _, u := range units {
		if u.removal {
			gc.AddNode(depgraph.Node[Key]{Key: u.key, Deps: after[u.key], Group: u.key.Cluster})
		}
	}
	return g, gc
}

func toUnstructured(r *release.Release) (*unstructured.Unstructured, error) {
	return unitToUnstructured(r, release.APIVersion, release.Kind)
}

func fromUnstructured(u *unstructured.Unstructured) (*release.Release, error) {
	return unitFromUnstructured[release.Release](u)
}

// unitToUnstructured turns a unit (a Release or a Kustomization) into the
// object the policy engine places, without its status.
func unitToUnstructured(obj any, apiVersion, kind string) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	delete(u.Object, "status")
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	return u, nil
}

// unitFromUnstructured turns a placed object back into its unit.
func unitFromUnstructured[T any](u *unstructured.Unstructured) (*T, error) {
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Table renders the plan as a table: member, unit (a release as
// namespace/name, a Kustomization as Kustomization/namespace/name),
// state, action, chart (a Kustomization's source path and revision),
// revision now, the Kubernetes version rendered for, where valuesFrom
// was read (hub, member, or - without valuesFrom), and notes (errors;
// the releases a Kustomization produces, what its prune would delete).
func (p *Plan) Table() string {
	var sb strings.Builder
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tUNIT\tSTATE\tACTION\tCHART\tREVISION\tKUBERNETES\tVALUESFROM\tNOTE")
	p.each(func(it *reconcile.Plan) {
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
		case it.CapabilitiesFrom == reconcile.CapabilitiesFromHelmDefault:
			kube += " (helm default)"
		}
		from := "-"
		if v, ok := p.valuesFrom[keyOfPlan(it)]; ok {
			from = string(v)
		}
		fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", it.Cluster, it.Release.Namespace, it.Release.Name, it.State, it.Action, chart, it.Revision, kube, from, note)
	}, func(it *KustomizationPlan) {
		var notes []string
		if it.Reason != "" {
			notes = append(notes, it.Reason)
		}
		if it.Err != nil {
			notes = append(notes, it.Err.Error())
		}
		if len(it.Produced) > 0 {
			names := make([]string, len(it.Produced))
			for i, k := range it.Produced {
				names[i] = k.unit()
			}
			notes = append(notes, "produces "+strings.Join(names, ", "))
		}
		if len(it.Prune) > 0 {
			notes = append(notes, "prunes "+strings.Join(refNames(it.Prune), ", "))
		}
		src := kustomizationSource(it.Kustomization)
		if it.Revision != "" {
			src += "@" + it.Revision
		}
		action := it.Action
		if action == ActionApply && it.State == reconcile.StateInSync {
			// Apply re-applies it (as Flux does every interval) and
			// changes nothing: as for a release in sync, nothing to do.
			action = reconcile.ActionNone
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t-\t-\t-\t%s\n", it.Cluster, it.Key().unit(), it.State, action, src, strings.Join(notes, "; "))
	})
	_ = tw.Flush()
	for _, e := range p.Errors {
		if p.inRow(e) {
			continue // its row's note says it
		}
		fmt.Fprintf(&sb, "error: %v\n", e)
	}
	for _, m := range p.Mirrored {
		fmt.Fprintf(&sb, "mirror: %s\n", m)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&sb, "warning: %s\n", w.Message)
	}
	return sb.String()
}

// inRow reports whether e is the error of a plan item, which Table shows
// in the item's row.
func (p *Plan) inRow(e error) bool {
	ie, ok := e.(*ItemError)
	if !ok {
		return false
	}
	if it, ok := p.items[ie.Key]; ok && it.Err == ie.Err {
		return true
	}
	it, ok := p.kitems[ie.Key]
	return ok && it.Err == ie.Err
}

// each calls rel and kust for the plan's items in key order.
func (p *Plan) each(rel func(*reconcile.Plan), kust func(*KustomizationPlan)) {
	i, j := 0, 0
	for i < len(p.Items) || j < len(p.Kustomizations) {
		if j == len(p.Kustomizations) || (i < len(p.Items) && keyLess(keyOfPlan(p.Items[i]), p.Kustomizations[j].Key())) {
			rel(p.Items[i])
			i++
			continue
		}
		kust(p.Kustomizations[j])
		j++
	}
}

// kustomizationSource names where k's directory comes from:
// Kind/namespace/name:path.
func kustomizationSource(k *release.Kustomization) string {
	s := k.Spec.SourceRef
	path := k.Spec.Path
	if path == "" {
		path = "./"
	}
	return s.Kind + "/" + s.Namespace + "/" + s.Name + ":" + path
}

// Diff renders every item's diff, each headed by its member and unit.
func (p *Plan) Diff() string {
	var sb strings.Builder
	p.each(func(it *reconcile.Plan) {
		if it.Diff != "" {
			fmt.Fprintf(&sb, "### %s %s/%s (%s)\n%s", it.Cluster, it.Release.Namespace, it.Release.Name, it.Action, it.Diff)
		}
	}, func(it *KustomizationPlan) {
		if it.Diff != "" {
			fmt.Fprintf(&sb, "### %s %s (%s)\n%s", it.Cluster, it.Key().unit(), it.Action, it.Diff)
		}
	})
	return sb.String()
}

// planJSON is the JSON form of one plan item; values are redacted.
type planJSON struct {
	Cluster string `json:"cluster"`
	// Kind is Kustomization for a Kustomization, empty for a release.
	Kind      string           `json:"kind,omitempty"`
	Namespace string           `json:"namespace"`
	Name      string           `json:"name"`
	State     reconcile.State  `json:"state"`
	Action    reconcile.Action `json:"action"`
	Reason    string           `json:"reason,omitempty"`
	Chart     string           `json:"chart,omitempty"`
	Version   string           `json:"version,omitempty"`
	Revision  int              `json:"revision"`
	// KubeVersion and CapabilitiesFrom: what the chart was rendered for.
	KubeVersion      string `json:"kubeVersion,omitempty"`
	CapabilitiesFrom string `json:"capabilitiesFrom,omitempty"`
	// ValuesFrom is where valuesFrom was read: hub or member.
	ValuesFrom ValuesFrom     `json:"valuesFrom,omitempty"`
	Values     map[string]any `json:"values,omitempty"`
	// Source and SourceRevision: a Kustomization's directory and the
	// revision built.
	Source         string `json:"source,omitempty"`
	SourceRevision string `json:"sourceRevision,omitempty"`
	// Produced are the releases a Kustomization produces; Prune what its
	// apply would delete.
	Produced []string `json:"produced,omitempty"`
	Prune    []string `json:"prune,omitempty"`
	Objects  []string `json:"objects,omitempty"`
	Diff     string   `json:"diff,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// MarshalJSON renders the plan as JSON: items (with values redacted where
// they came from Secrets), errors and warnings.
func (p *Plan) MarshalJSON() ([]byte, error) {
	out := struct {
		Items    []planJSON     `json:"items"`
		Errors   []string       `json:"errors,omitempty"`
		Warnings []string       `json:"warnings,omitempty"`
		Mirrored []mirroredJSON `json:"mirrored,omitempty"`
	}{Items: []planJSON{}}
	for _, m := range p.Mirrored {
		out.Mirrored = append(out.Mirrored, mirroredJSON(m))
	}
	p.each(func(it *reconcile.Plan) {
		j := planJSON{Cluster: it.Cluster, Namespace: it.Release.Namespace, Name: it.Release.Name, State: it.State,
			Action: it.Action, Reason: it.Reason, Chart: it.Chart, Version: it.Version, Revision: it.Revision, Diff: it.Diff,
			KubeVersion: it.KubeVersion, CapabilitiesFrom: it.CapabilitiesFrom, ValuesFrom: p.valuesFrom[keyOfPlan(it)]}
		if it.Values != nil {
			j.Values = it.Values.Redacted()
		}
		j.Objects = objectNames(it.Objects)
		if it.Err != nil {
			j.Error = it.Err.Error()
		}
		out.Items = append(out.Items, j)
	}, func(it *KustomizationPlan) {
		j := planJSON{Cluster: it.Cluster, Kind: KindKustomization, Namespace: it.Kustomization.Namespace, Name: it.Kustomization.Name,
			State: it.State, Action: it.Action, Reason: it.Reason, Source: kustomizationSource(it.Kustomization),
			SourceRevision: it.Revision, Prune: refNames(it.Prune), Diff: it.Diff}
		for _, o := range it.Objects {
			j.Objects = append(j.Objects, o.Object.Kind+"/"+o.Object.Namespace+"/"+o.Object.Name+" "+o.Action)
		}
		for _, k := range it.Produced {
			j.Produced = append(j.Produced, k.unit())
		}
		if it.Err != nil {
			j.Error = it.Err.Error()
		}
		out.Items = append(out.Items, j)
	})
	for _, e := range p.Errors {
		out.Errors = append(out.Errors, e.Error())
	}
	for _, w := range p.Warnings {
		out.Warnings = append(out.Warnings, w.Message)
	}
	return json.Marshal(out)
}

// refNames names objects as kind/namespace/name.
func refNames(refs []release.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Kind + "/" + r.Namespace + "/" + r.Name
	}
	return out
}

// objectNames names objects as kind/namespace/name.
func objectNames(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	return out
}

// Mermaid draws the plan's dependency graph, a box per member.
func (p *Plan) Mermaid() string { return p.graph.Mermaid(nil) }

// Inventory returns the per-member releases the fleet applied, with their
// status, sorted by key, each annotated with its member: what a caller
// without a Config.Store persists by hand to continue after a restart
// (see Restore).
func (f *Fleet) Inventory() []*release.Release {
	rels := f.inv.releases()
	keys := make([]Key, 0, len(rels))
	for k := range rels {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
	out := make([]*release.Release, len(keys))
	for i, k := range keys {
		r := rels[k]
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

// Restore replaces the fleet's inventory of releases with one Inventory
// returned. It writes nothing to Config.Store, and the fleet no longer
// loads the store by itself (Load still does). Kustomizations are not in
// an Inventory: only a Config.Store carries them across a restart.
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
	f.inv.replace(applied, nil)
	return nil
}

// Status returns the status of one release on one member, as last
// applied.
func (f *Fleet) Status(k Key) (release.Status, bool) {
	return f.inv.releaseStatus(k)
}

func (f *Fleet) emit(e Event) { f.callbacks.event(f.cfg.Events, e) }

// refOf names a release as namespace/name.
func refOf(r *release.Release) string { return r.Namespace + "/" + r.Name }

// since is the time from t to now by c.
func since(c depgraph.Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// denyCrossNamespaceRefs returns the refusal of a unit's references to
// other namespaces under Config.NoCrossNamespaceRefs, or nil.
func (f *Fleet) denyCrossNamespaceRefs(u interface{ DenyCrossNamespaceRefs() error }) error {
	if !f.cfg.NoCrossNamespaceRefs {
		return nil
	}
	return u.DenyCrossNamespaceRefs()
}

// denied reports whether err is a refusal of NoCrossNamespaceRefs.
func denied(err error) bool {
	_, ok := errors.AsType[*release.AccessDeniedError](err)
	return ok
}
