package distribute

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
)

// Labels and annotation the Distributor puts on every copy it applies to a
// member. They are its inventory: pruning lists a release's objects back
// by these labels, one List per kind and member.
const (
	// InventoryNameLabel holds the Helm release's name.
	InventoryNameLabel = "helmfleet.io/release-name"
	// InventoryNamespaceLabel holds the Helm release's namespace.
	InventoryNamespaceLabel = "helmfleet.io/release-namespace"
	// InventoryAnnotation holds namespace/name of the Helm release, for
	// people reading a member's object.
	InventoryAnnotation = "helmfleet.io/release"
	// InventoryHookLabel marks the copies of a release's hooks (value
	// "true"): they carry the inventory labels too, so that a hook's
	// delete policy removes only the release's own copies, but they are
	// not pruned with the release's objects, as Helm leaves hooks to
	// their delete policy.
	InventoryHookLabel = "helmfleet.io/hook"
)

// ErrNoHubObjects is returned by a Distributor's ObjectReader and
// ObjectWriter methods when its hub is not an ObjectClient.
var ErrNoHubObjects = errors.New("the distributor's hub has no object client")

// Config is what a Distributor needs. Hub and Members are
// required.
type Config struct {
	// Name is the Distributor's name as a Cluster, in errors and
	// statuses; default "fleet".
	Name string
	// Hub is where Helm keeps the release records (helm ls there shows
	// the release). If it is also an ObjectClient, the Distributor's own
	// Get, List, Apply and Delete act on it.
	Hub release.HelmConfigurer
	// Members are the clusters the release's objects are spread over.
	Members []release.Member
	// Policies are propagation and override policies from outside the
	// chart. Policies the chart renders itself are taken out of its
	// manifest on every build and used as well; they are never applied to
	// members.
	Policies policy.Set
	// FieldManager owns the fields applied to members; default
	// "helmfleet".
	FieldManager string
	// PollInterval is how often waits re-read the members' objects;
	// default 1s.
	PollInterval time.Duration
	// Concurrency bounds the members written at once; default 8.
	Concurrency int
	// RESTMapper resolves kinds that are neither built into client-go
	// nor defined by a CustomResourceDefinition of the manifest (custom
	// resources whose CRD the members already have); may be nil.
	RESTMapper meta.RESTMapper
	// Strict makes an object of a release that would go to no member an
	// error (*UnplacedError, naming each such object and why, its hooks
	// included) that fails the install, upgrade or rollback before
	// anything is written: the hub does not store the release record, no
	// hook runs, and Helm returns the typed error as it is. By
	// default such an object is a warning (policy.WarnNotPlaced), given
	// to OnWarning and shown by Placements, and the rest is applied.
	Strict bool
	// OnWarning, when set, is told each placement warning of every
	// install, upgrade and rollback (and of each hook run), in a
	// deterministic order, before the objects are applied: objects that go
	// to no member, dependencies that are not in the chart, policies that
	// select nothing, overriders that do nothing. It must not block. A
	// panic of OnWarning fails the install, upgrade or rollback before
	// anything is written, with a *release.CallbackPanicError.
	OnWarning func(Warning)
}

// Warning is a placement warning of one Helm release.
type Warning struct {
	// Release is namespace/name of the Helm release.
	Release string
	policy.Warning
}

func (w Warning) String() string { return "release " + w.Release + ": " + w.Warning.String() }

// Distributor is a Cluster that spreads a Helm release's rendered objects
// over member clusters. Helm's actions run against the hub (its storage
// keeps the release records) with a kube client that, instead of writing
// to one cluster:
//
//   - places the manifest's objects with the propagation policies (by
//     kind, name and labels: community charts work unmodified), divides
//     replicas by weight, lets what a workload uses follow it (ConfigMaps,
//     Secrets, ServiceAccounts and their RBAC, Services, Ingresses,
//     IngressClasses, webhook configurations, custom resources, …), puts
//     what no policy places where the release's workloads go, and applies
//     the override policies per member (package policy; see the package
//     documentation for the rules and Placements for the result);
//   - holds the CRDs of crds/ and the namespace of createNamespace, which
//     Helm writes before its release record, and gives them to each member
//     with the release's first objects there, CRDs served before anything
//     that uses them, as the release's CRD policy says; with
//     createNamespace the hub gets the namespace of its release records;
//   - server-side applies each member's copies (creating their namespaces
//     where missing) and prunes the objects of the release a member holds
//     but should no longer hold, found by their inventory labels; an
//     object another release holds there is not taken over (*OwnerError);
//   - honours Karmada's conflict resolution for an object a member holds
//     that no release manages (no inventory labels: kubectl, another tool
//     or a person made it): under Abort, the default, it is left as it
//     is and that member's copy fails with a *ConflictResolutionError
//     naming member, object and policy; under Overwrite it is taken over.
//     The object's work.karmada.io/conflict-resolution annotation
//     (overwrite or abort) beats the policy's spec.conflictResolution; a
//     dependency without a policy of its own takes Overwrite if a
//     workload it follows has it (policy.ObjectPlacement.Conflict). The
//     release's own copies are never a conflict, nor is a Namespace the
//     Distributor created for them;
//   - runs hooks (Jobs, Pods, …) where a policy puts them, else on the
//     members the release's workloads go to, with what they use, and
//     waits for them there; deletes them per their delete policy from the
//     members it put them on;
//   - waits until every member's copy is Current by kstatus;
//   - deletes from every member on uninstall the copies that carry the
//     release's inventory labels (objects it never took over stay).
//
// The Reconciler drives it unchanged: Reconcile(ctx, distributor, rel)
// installs, upgrades, tests, remediates and, with drift detection on,
// corrects what was changed on members (DetectDrift and CorrectDrift).
// A member that fails fails only its own part: the others are still
// written and the action's error names the member. The Helm action on
// the hub then fails, and its record says so; this holds for a conflict
// too, as Helm fails an install that meets an object it does not own.
//
// A Distributor is safe for concurrent use.
type Distributor struct {
	name         string
	hub          release.HelmConfigurer
	members      []release.Member
	facts        []policy.Cluster
	policies     policy.Set
	engine       *policy.Engine // engine of policies alone
	fieldManager string
	poll         time.Duration
	limit        int
	mapper       *manifestMapper
	strict       bool
	onWarning    func(Warning)

	known   manifestIndex
	reports reportIndex
}

var (
	_ release.Cluster       = (*Distributor)(nil)
	_ release.DriftDetector = (*Distributor)(nil)
)

// New validates cfg (members, policies) and returns a
// Distributor.
func New(cfg Config) (*Distributor, error) {
	if cfg.Hub == nil {
		return nil, errors.New("distribute: config: Hub is required")
	}
	if len(cfg.Members) == 0 {
		return nil, errors.New("distribute: config: Members is empty")
	}
	members, err := release.SortMembers(cfg.Members)
	if err != nil {
		return nil, fmt.Errorf("distribute: config: %w", err)
	}
	engine, err := policy.NewEngine(cfg.Policies)
	if err != nil {
		return nil, fmt.Errorf("distribute: config: policies: %w", err)
	}
	d := &Distributor{
		name: cfg.Name, hub: cfg.Hub, members: members, facts: release.FactsOf(members),
		policies: cfg.Policies, engine: engine, fieldManager: cfg.FieldManager,
		poll: cfg.PollInterval, limit: cfg.Concurrency, mapper: newManifestMapper(cfg.RESTMapper),
		strict: cfg.Strict, onWarning: cfg.OnWarning,
	}
	if d.name == "" {
		d.name = "fleet"
	}
	if d.fieldManager == "" {
		d.fieldManager = "helmfleet"
	}
	if d.poll <= 0 {
		d.poll = time.Second
	}
	if d.limit <= 0 {
		d.limit = 8
	}
	return d, nil
}

// Name returns the Distributor's name ("fleet" unless configured).
func (d *Distributor) Name() string { return d.name }

// Members returns the members, sorted by name.
func (d *Distributor) Members() []release.Member { return append([]release.Member(nil), d.members...) }

// HelmConfig returns the hub's action configuration for scope with its
// kube client replaced by one that spreads objects over the members, and
// the capabilities of the render-once (Capabilities; the hub's when no
// member reports), to which the API versions of the CRDs Helm creates are
// added as Helm's discovery would see them. The client observes ctx:
// after cancellation it writes nothing more.
//
// The configuration is bound to the Helm release scope names
// (HelmReleaseName in Namespace, or StorageNamespace when Namespace is
// empty): its kube client writes, prunes and deletes for that release
// from the first call, whatever record Helm reads or writes first, and
// DetectDrift called with ctx finds that release even when another
// release has the same manifest. The one exception is a Helm action,
// through this configuration, on the record of another release (the
// Reconciler uninstalls so the release a Release had under an older name
// or namespace): the client then works for that record's release.
//
// A scope without HelmReleaseName (a caller that works for no Release)
// binds nothing: the client works for the release whose record Helm last
// read or wrote through the configuration, and refuses to write objects
// before Helm has read or written one.
func (d *Distributor) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	hubCfg, err := d.hub.HelmConfig(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("distributor %s: hub: %w", d.name, err)
	}
	caps, err := d.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	ns := scopeNamespace(scope)
	cfg := *hubCfg
	if cfg.RESTClientGetter != nil {
		// Helm reads the hub through its getter (the lookup function,
		// discovery); a kube client built on it would write to the hub
		// and bypass the spread over the members, so only Helm's narrow
		// getter is handed on (Helm v4's native client refuses it).
		cfg.RESTClientGetter = hubGetter{cfg.RESTClientGetter}
	}
	kc := &distClient{d: d, ctx: ctx, namespace: ns, storage: scope.StorageNamespace, hub: hubCfg.KubeClient, cfg: &cfg, pre: &preRelease{}, hooks: map[release.ObjectRef][]string{}}
	if scope.HelmReleaseName != "" {
		rel := releaseID{Namespace: ns, Name: scope.HelmReleaseName}
		kc.cur, kc.chart = rel, d.known.chartOf(rel)
	}
	obs := &observedDriver{Driver: hubCfg.Releases.Driver, d: d, client: kc, namespace: scope.StorageNamespace}
	kc.releases = hubCfg.Releases.Driver
	st := storage.Init(obs)
	st.MaxHistory = hubCfg.Releases.MaxHistory
	if hubCfg.Releases.Log != nil {
		st.Log = hubCfg.Releases.Log
	}
	cfg.Releases = st
	cfg.KubeClient = kc
	if caps != nil {
		cfg.Capabilities = caps
	} else if cfg.Capabilities != nil {
		cfg.Capabilities = cfg.Capabilities.Copy()
		cfg.Capabilities.APIVersions = append(chartutil.VersionSet(nil), cfg.Capabilities.APIVersions...)
	}
	return &cfg, nil
}

// hubGetter is the hub's RESTClientGetter with only the methods of Helm
// v3's action.RESTClientGetter: enough to read the hub, not enough to
// build a kube client that would write to it instead of the members.
type hubGetter struct{ action.RESTClientGetter }

// hubName names the hub in errors: "hub", with its name when it has one.
func (d *Distributor) hubName() string {
	if n, ok := d.hub.(interface{ Name() string }); ok && n.Name() != "" {
		return "hub " + n.Name()
	}
	return "hub"
}

// ensureHubNamespace makes sure the hub holds namespace ns, where Helm's
// storage keeps the release's records (the scope's storage namespace):
// Helm's install with createNamespace writes the release's Namespace
// before its record, which on one cluster makes a Secret record in it
// possible, but the Distributor holds that Namespace back for the
// members. asked is the Namespace Helm asked for; ns is created as it
// (with its labels) when it has ns's name, and with Helm's name label
// otherwise. A hub that is not an ObjectWriter is left as it is (its
// storage then says whether ns is missing); one that is also an
// ObjectReader is written only when it lacks ns.
func (d *Distributor) ensureHubNamespace(ctx context.Context, ns string, asked *unstructured.Unstructured) error {
	w, ok := d.hub.(release.ObjectWriter)
	if !ok || ns == "" {
		return nil
	}
	ref := release.ObjectRef{GroupVersionKind: namespaceGVK, Name: ns}
	if r, ok := d.hub.(release.ObjectReader); ok {
		_, err := r.Get(ctx, ref)
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, release.ErrNotFound):
			return fmt.Errorf("%s: namespace %s of the release records: %w", d.hubName(), ns, err)
		}
	}
	obj := &unstructured.Unstructured{}
	if asked != nil && asked.GetName() == ns {
		obj = asked.DeepCopy()
	} else {
		obj.SetLabels(map[string]string{"name": ns})
	}
	obj.SetGroupVersionKind(namespaceGVK)
	obj.SetName(ns)
	if _, err := w.Apply(ctx, obj, release.ApplyOptions{DiscardResult: true, FieldManager: d.fieldManager}); err != nil {
		return fmt.Errorf("%s: namespace %s of the release records: %w", d.hubName(), ns, err)
	}
	return nil
}

func (d *Distributor) hubObjects() (release.ObjectClient, error) {
	oc, ok := d.hub.(release.ObjectClient)
	if !ok {
		return nil, fmt.Errorf("distributor %s: %w", d.name, ErrNoHubObjects)
	}
	return oc, nil
}

// Get reads one object of the hub.
func (d *Distributor) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	oc, err := d.hubObjects()
	if err != nil {
		return nil, err
	}
	return oc.Get(ctx, ref)
}

// List lists objects of the hub.
func (d *Distributor) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	oc, err := d.hubObjects()
	if err != nil {
		return nil, err
	}
	return oc.List(ctx, gvk, namespace, selector)
}

// Apply server-side applies obj to the hub.
func (d *Distributor) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	oc, err := d.hubObjects()
	if err != nil {
		return nil, err
	}
	return oc.Apply(ctx, obj, opts)
}

// Delete deletes one object of the hub.
func (d *Distributor) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	oc, err := d.hubObjects()
	if err != nil {
		return err
	}
	return oc.Delete(ctx, ref, opts)
}

// releaseID names the Helm release a client works for.
type releaseID struct {
	Namespace, Name string
}

func (r releaseID) String() string { return r.Namespace + "/" + r.Name }

// scopeNamespace is the namespace of the objects of the release scope
// names: its Namespace, else its StorageNamespace.
func scopeNamespace(scope release.HelmScope) string {
	if scope.Namespace != "" {
		return scope.Namespace
	}
	return scope.StorageNamespace
}

// MemberError is the failure of one member's part of an action.
type MemberError struct {
	// Member is the member cluster's name.
	Member string
	// Err is what failed there (several errors joined).
	Err error
}

func (e *MemberError) Error() string { return fmt.Sprintf("member %s: %v", e.Member, e.Err) }

// Unwrap returns what failed.
func (e *MemberError) Unwrap() error { return e.Err }

// spread is what every member should hold of one manifest. It holds the
// placement, not the members' copies: member computes one member's copies
// when they are needed, so that a fleet's copies are never all in memory
// at once.
type spread struct {
	// errs are the placement errors, naming the object; the override
	// errors are per member (copies.errs).
	errs []error
	// failed are the refs of the objects whose placement failed: their
	// copies are unknown on every member.
	failed []release.ObjectRef
	// rel, when not empty, is written into the copies' inventory labels.
	rel releaseID
	// clusters are the members' facts, index as Distributor.members.
	clusters []policy.Cluster
	// placement is the policy engine's placement of the objects, the
	// default placement included.
	placement *policy.Placement
	engine    *policy.Engine
	// objects are the objects placed (policies taken out), by key.
	byKey map[policy.ObjectKey]*unstructured.Unstructured
}

// copies are what one member should hold of a spread.
type copies struct {
	// objects are the member's copies, each carrying the inventory labels
	// when a release is known.
	objects []*unstructured.Unstructured
	// unknown are the refs whose copy could not be computed (a placement
	// or override error); pruning leaves them alone.
	unknown map[release.ObjectRef]bool
	// errs are the member's override errors, naming object and member.
	errs []error
}

// member computes the copies member i gets (when only is not nil, of the
// objects it accepts alone).
func (sp *spread) member(i int, only func(policy.ObjectKey) bool) copies {
	out := copies{unknown: make(map[release.ObjectRef]bool, len(sp.failed))}
	for _, ref := range sp.failed {
		out.unknown[ref] = true
	}
	co, _ := sp.engine.MaterializeCluster(sp.placement, sp.clusters[i].Name, only)
	if sp.rel.Name != "" {
		for _, o := range co.Objects {
			stamp(o, sp.rel)
		}
	}
	out.objects = co.Objects
	out.errs = co.Errors
	for _, e := range co.Errors {
		var oe *policy.OverrideError
		if errors.As(e, &oe) {
			out.unknown[refOfKey(oe.Object)] = true
		}
	}
	return out
}

// engineFor returns the engine of the configured policies plus those the
// chart rendered (set); the configured ones alone when the chart has none.
func (d *Distributor) engineFor(set policy.Set) (*policy.Engine, error) {
	if len(set.Propagation)+len(set.ClusterPropagation)+len(set.Override)+len(set.ClusterOverride) == 0 {
		return d.engine, nil
	}
	all := policy.Set{
		Propagation:        append(append([]policy.PropagationPolicy(nil), d.policies.Propagation...), set.Propagation...),
		ClusterPropagation: append(append([]policy.ClusterPropagationPolicy(nil), d.policies.ClusterPropagation...), set.ClusterPropagation...),
		Override:           append(append([]policy.OverridePolicy(nil), d.policies.Override...), set.Override...),
		ClusterOverride:    append(append([]policy.ClusterOverridePolicy(nil), d.policies.ClusterOverride...), set.ClusterOverride...),
	}
	return policy.NewEngine(all)
}

// spreadObjects places objs (a manifest's objects, policies included) on
// the members; the spread computes each member's copies when asked. rel,
// when not empty, is written into the copies' inventory labels.
func (d *Distributor) spreadObjects(objs []*unstructured.Unstructured, namespace string, rel releaseID) (*spread, error) {
	set, rest, err := policy.FromObjects(objs, namespace)
	if err != nil {
		return nil, fmt.Errorf("policies rendered by the chart: %w", err)
	}
	engine, err := d.engineFor(set)
	if err != nil {
		return nil, fmt.Errorf("policies rendered by the chart: %w", err)
	}
	placement, perr := engine.Place(rest, d.facts)
	if placement == nil {
		return nil, perr
	}
	byKey := make(map[policy.ObjectKey]*unstructured.Unstructured, len(rest))
	var hooks []policy.ObjectKey
	for _, o := range rest {
		key := policy.KeyOf(o)
		byKey[key] = o
		if o.GetAnnotations()[hookAnnotation] != "" {
			hooks = append(hooks, key)
		}
	}
	// A hook runs with what it uses wherever a policy runs it.
	placement.Lead(hooks...)
	clusters, reason := defaultPlacement(placement, byKey)
	if err := engine.PlaceDefault(placement, clusters, reason); err != nil {
		return nil, err
	}
	sp := &spread{rel: rel, clusters: d.facts, placement: placement, engine: engine, byKey: byKey}
	for _, op := range placement.Objects {
		if op.Err == nil {
			continue
		}
		sp.errs = append(sp.errs, op.Err)
		sp.failed = append(sp.failed, refOfKey(op.Object))
	}
	return sp, nil
}

// defaultPlacement returns the members an object goes to when no policy
// places it and it follows no placed object, and why: the members the
// release's workloads (objects with a pod template, hooks aside) go to;
// when no workload is placed, those its placed objects go to.
func defaultPlacement(p *policy.Placement, byKey map[policy.ObjectKey]*unstructured.Unstructured) ([]string, string) {
	for _, workloads := range []bool{true, false} {
		set := map[string]bool{}
		var names []string
		for _, op := range p.Objects {
			o := byKey[op.Object]
			if op.Err != nil || len(op.Targets) == 0 || o == nil || o.GetAnnotations()[hookAnnotation] != "" {
				continue
			}
			if workloads && !isWorkload(o) {
				continue
			}
			names = append(names, op.Object.String())
			for _, t := range op.Targets {
				set[t.Cluster] = true
			}
		}
		if len(set) == 0 {
			continue
		}
		clusters := make([]string, 0, len(set))
		for c := range set {
			clusters = append(clusters, c)
		}
		sort.Strings(clusters)
		if len(names) > 3 {
			names = append(names[:3], fmt.Sprintf("and %d more", len(names)-3))
		}
		if workloads {
			return clusters, "it goes where the release's workloads go (" + strings.Join(names, ", ") + ")"
		}
		return clusters, "no workload of the release is placed, so it goes where its placed objects go (" + strings.Join(names, ", ") + ")"
	}
	return nil, "no object of the release is placed by a policy"
}

// isWorkload reports whether o runs pods: a kind with a pod template.
func isWorkload(o *unstructured.Unstructured) bool {
	return workloadKinds[o.GroupVersionKind().GroupKind()]
}

// warn hands the warnings of sp that concern only (all when nil) to the
// OnWarning sink, and under Strict returns the objects that go to no
// member as an *UnplacedError.
func (d *Distributor) warn(sp *spread, rel releaseID, only map[policy.ObjectKey]bool) error {
	var ws []policy.Warning
	for _, w := range sp.placement.Warnings {
		if only == nil || only[w.Object] {
			ws = append(ws, w)
		}
	}
	return d.report(rel, ws)
}

// report hands ws, warnings of rel, to the OnWarning sink, and under
// Strict returns those of objects that go to no member as an
// *UnplacedError.
func (d *Distributor) report(rel releaseID, ws []policy.Warning) error {
	var unplaced []policy.Warning
	for _, w := range ws {
		if d.onWarning != nil {
			// OnWarning runs on Helm's goroutine, where a panic would end
			// the process: it fails the action instead.
			warning := Warning{Release: rel.String(), Warning: w}
			if err := release.Contain("distribute.Config.OnWarning", func() error {
				d.onWarning(warning)
				return nil
			}); err != nil {
				return fmt.Errorf("release %s: %w", rel, err)
			}
		}
		if w.Code == policy.WarnNotPlaced {
			unplaced = append(unplaced, w)
		}
	}
	if d.strict && len(unplaced) > 0 {
		return &UnplacedError{Release: rel.String(), Warnings: unplaced}
	}
	return nil
}

// refuseUnplaced is Strict's check of a release record before Helm stores
// it (an install, upgrade or rollback): when objects of its manifest or
// hooks would go to no member, as Placements counts them (placeRecord),
// the record is not stored and the action fails with an *UnplacedError
// naming each of them, before anything is written, the hub included.
// Helm returns the error of its storage as it is, where it formats the
// error of a hook with %s: so a chart with pre-install hooks gives the
// caller the typed error too. The warnings go to OnWarning first. A
// record whose placement fails otherwise is stored, and its action fails
// where it places.
func (d *Distributor) refuseUnplaced(ctx context.Context, rec *helmrelease.Release) error {
	if !d.strict || rec == nil {
		return nil
	}
	_, _, ws, err := d.placeRecord(ctx, rec)
	if err != nil {
		return nil
	}
	for _, w := range ws {
		if w.Code == policy.WarnNotPlaced {
			return fmt.Errorf("distributor %s: %w", d.name, d.report(releaseID{Namespace: rec.Namespace, Name: rec.Name}, ws))
		}
	}
	return nil
}

// UnplacedError is returned under Config.Strict when objects of a release
// would go to no member; nothing of the action is written.
type UnplacedError struct {
	// Release is namespace/name of the Helm release.
	Release string
	// Warnings name each object and why (policy.WarnNotPlaced).
	Warnings []policy.Warning
}

func (e *UnplacedError) Error() string {
	msgs := make([]string, len(e.Warnings))
	for i, w := range e.Warnings {
		msgs[i] = w.Message
	}
	return fmt.Sprintf("release %s: %d object(s) would go to no member (strict): %s", e.Release, len(e.Warnings), strings.Join(msgs, "; "))
}

func refOfKey(k policy.ObjectKey) release.ObjectRef {
	return release.ObjectRef{GroupVersionKind: schema.FromAPIVersionAndKind(k.APIVersion, k.Kind), Namespace: k.Namespace, Name: k.Name}
}

// stamp writes the inventory labels and annotation of rel on obj, in
// place: obj is a member's own copy.
func stamp(obj *unstructured.Unstructured, rel releaseID) {
	meta, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		meta = map[string]any{}
		obj.Object["metadata"] = meta
	}
	set := func(field string, kv ...string) {
		m, ok := meta[field].(map[string]any)
		if !ok {
			m = make(map[string]any, len(kv)/2)
			meta[field] = m
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
	}
	set("labels", InventoryNameLabel, rel.Name, InventoryNamespaceLabel, rel.Namespace)
	set("annotations", InventoryAnnotation, rel.String())
}

// eachMember runs fn for every member index in members (all when nil),
// at most d.limit at once, and returns the failures as *MemberError
// joined in member order. A failing member does not stop the others.
func (d *Distributor) eachMember(ctx context.Context, only []int, fn func(ctx context.Context, i int) error) error {
	if only == nil {
		only = make([]int, len(d.members))
		for i := range only {
			only[i] = i
		}
	}
	errs := make([]error, len(d.members))
	var g errgroup.Group
	g.SetLimit(d.limit)
	for _, i := range only {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				errs[i] = &MemberError{Member: d.members[i].Facts.Name, Err: err}
				return nil
			}
			// The member's Cluster is the caller's code: its panic on
			// this goroutine would end the process.
			name := d.members[i].Facts.Name
			if err := release.Contain("release.Cluster of member "+name, func() error { return fn(ctx, i) }); err != nil {
				errs[i] = &MemberError{Member: name, Err: err}
			}
			return nil
		})
	}
	_ = g.Wait()
	return errors.Join(errs...)
}

// applyAndPrune applies each member's copies and deletes the objects of
// rel a member holds that it should no longer hold; kinds are the kinds
// the release had or has (one List per kind and member). On each member
// that gets objects, the namespaces they go into come first, then the
// CRDs of pre (the chart's crds/; nil when there are none) and the
// manifest's own CRDs, served before the rest is applied in Helm's
// install order.
func (d *Distributor) applyAndPrune(ctx context.Context, sp *spread, rel releaseID, kinds []schema.GroupVersionKind, pre *preRelease) error {
	// Each member's copies are computed on its goroutine and dropped when
	// it is done; only its override errors are kept, to be returned after
	// the members' own errors as one list.
	overrideErrs := make([][]error, len(d.members))
	computed := make([]bool, len(d.members))
	err := d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		m := d.members[i].Cluster
		cp := sp.member(i, nil)
		overrideErrs[i], computed[i] = cp.errs, true
		if errs := d.ensureNamespaces(ctx, m, cp.objects, pre); len(errs) > 0 {
			// Nothing can be applied into a namespace that is not there
			// (and a member that is down fails here once, not per object).
			return errors.Join(errs...)
		}
		if len(cp.objects) > 0 {
			if err := d.ensureCRDs(ctx, i, pre); err != nil {
				return err
			}
		}
		owners, errs := inventory(ctx, m, kinds)
		keep := map[release.ObjectRef]bool{}
		for ref := range cp.unknown {
			keep[groupKindRef(ref)] = true
		}
		objs := cp.objects
		installOrder(objs)
		var crds []release.ObjectRef
		for _, obj := range objs {
			ref := release.RefOf(obj)
			if len(crds) > 0 && !isCRDObject(obj) {
				// Custom resources of the manifest's CRDs need them served.
				if err := d.waitServed(ctx, i, crds); err != nil {
					errs = append(errs, err)
				}
				crds = nil
			}
			keep[groupKindRef(ref)] = true
			owner, ok := owners[groupKindRef(ref)]
			if ok && owner.releaseID != rel {
				errs = append(errs, &OwnerError{Object: ref, Owner: owner.String()})
				continue
			}
			if !ok {
				if err := d.checkConflict(ctx, i, ref, conflictOf(sp.placement, obj), rel); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if _, err := m.Apply(ctx, obj, release.ApplyOptions{DiscardResult: true, FieldManager: d.fieldManager, Force: true}); err != nil {
				errs = append(errs, fmt.Errorf("apply %s: %w", ref, err))
				continue
			}
			if isCRDObject(obj) {
				crds = append(crds, ref)
			}
		}
		if err := d.waitServed(ctx, i, crds); err != nil {
			errs = append(errs, err)
		}
		// Prune what this release applied before and no longer wants;
		// hooks are left to their delete policy.
		refs := make([]release.ObjectRef, 0, len(owners))
		for ref, owner := range owners {
			if owner.releaseID == rel && !owner.hook && !keep[ref] {
				refs = append(refs, ref)
			}
		}
		sort.Slice(refs, func(i, j int) bool { return refs[i].String() < refs[j].String() })
		for _, ref := range refs {
			ref.Version = versionOf(kinds, ref.GroupVersionKind.GroupKind())
			if err := m.Delete(ctx, ref, release.DeleteOptions{}); err != nil && !errors.Is(err, release.ErrNotFound) {
				errs = append(errs, fmt.Errorf("prune %s: %w", ref, err))
			}
		}
		return errors.Join(errs...)
	})
	all := slices.Clone(sp.errs)
	for i, errs := range overrideErrs {
		if !computed[i] {
			// The member was not reached (ctx ended): its override errors
			// are still the release's.
			errs = sp.member(i, nil).errs
		}
		all = append(all, errs...)
	}
	return errors.Join(err, errors.Join(all...))
}

// OwnerError reports an object that a member holds for another release
// (by its inventory labels). The Distributor does not take it over, as
// Helm refuses to adopt another release's objects.
type OwnerError struct {
	// Object is the object.
	Object release.ObjectRef
	// Owner is namespace/name of the release that holds it.
	Owner string
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("%s exists and belongs to release %s; it is not taken over", e.Object, e.Owner)
}

// ConflictResolutionError reports an object that a member already holds
// and that no release of a Distributor manages there (it carries no
// inventory labels: kubectl, another tool or a person made it), while the
// object's conflict resolution is Abort: the Distributor leaves it as it
// is, as Karmada does with spec.conflictResolution Abort (its default) and
// Helm does with objects that lack its ownership metadata. Overwrite, from
// the propagation policy or the object's work.karmada.io/conflict-resolution
// annotation, lets the Distributor take it over.
type ConflictResolutionError struct {
	// Member is the member cluster's name.
	Member string
	// Object is the object.
	Object release.ObjectRef
	// Conflict is the object's conflict resolution and where it came from
	// (the policy that governs the object, or its annotation).
	Conflict policy.Conflict
}

func (e *ConflictResolutionError) Error() string {
	var why, fix string
	pol := "no propagation policy"
	if e.Conflict.Policy.Name != "" {
		pol = e.Conflict.Policy.String()
	}
	switch e.Conflict.Source {
	case policy.ConflictFromAnnotation:
		why = fmt.Sprintf("by the object's annotation %s: %s", policy.AnnotationConflictResolution, policy.AnnotationAbort)
		fix = fmt.Sprintf("set that annotation to %s to take it over", policy.AnnotationOverwrite)
	case policy.ConflictFromPolicy:
		why = "by spec.conflictResolution of " + pol
	default:
		why = "by default: " + pol + " does not set spec.conflictResolution"
	}
	if fix == "" {
		fix = fmt.Sprintf("set spec.conflictResolution: %s in %s, or annotate the object %s: %s, to take it over",
			policy.ConflictOverwrite, pol, policy.AnnotationConflictResolution, policy.AnnotationOverwrite)
	}
	return fmt.Sprintf("%s exists on member %s and no release manages it (it has no inventory labels); conflict resolution is %s %s, so it is not taken over: %s",
		e.Object, e.Member, policy.ConflictAbort, why, fix)
}

// conflictOf returns the conflict resolution the placement gives obj (a
// member's copy); Abort when the placement does not know it.
func conflictOf(p *policy.Placement, obj *unstructured.Unstructured) policy.Conflict {
	if p != nil {
		if op := p.Get(policy.KeyOf(obj)); op != nil {
			return op.Conflict
		}
	}
	return policy.Conflict{Resolution: policy.ConflictAbort, Source: policy.ConflictFromDefault}
}

// checkConflict decides whether ref, which no inventory list of member i
// showed, may be applied there for rel: yes if the member does not hold
// it or c is Overwrite; an *OwnerError if another release holds it; a
// *ConflictResolutionError if nobody's inventory labels are on it. A
// Namespace the Distributor created for a release's objects (its field
// manager wrote it) is not a conflict: a chart's own Namespace object
// takes it over.
func (d *Distributor) checkConflict(ctx context.Context, i int, ref release.ObjectRef, c policy.Conflict, rel releaseID) error {
	if c.Resolution == policy.ConflictOverwrite {
		return nil
	}
	live, err := d.members[i].Cluster.Get(ctx, ref)
	switch {
	case errors.Is(err, release.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("get %s: %w", ref, err)
	}
	if owner, ok := ownerOf(live); ok {
		if owner != rel {
			return &OwnerError{Object: ref, Owner: owner.String()}
		}
		return nil
	}
	if ref.GroupKind() == namespaceGVK.GroupKind() && writtenBy(live, d.fieldManager) {
		return nil
	}
	return &ConflictResolutionError{Member: d.members[i].Facts.Name, Object: ref, Conflict: c}
}

// ownerOf returns the release whose inventory labels obj carries.
func ownerOf(obj *unstructured.Unstructured) (releaseID, bool) {
	l := obj.GetLabels()
	name, hasName := l[InventoryNameLabel]
	ns, hasNS := l[InventoryNamespaceLabel]
	return releaseID{Namespace: ns, Name: name}, hasName || hasNS
}

// writtenBy reports whether manager owns fields of obj.
func writtenBy(obj *unstructured.Unstructured, manager string) bool {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == manager {
			return true
		}
	}
	return false
}

// owned is the release an object of a member belongs to, and whether it
// is a copy of one of its hooks.
type owned struct {
	releaseID
	hook bool
}

// inventory lists, one List per kind, the objects of kinds on m that any
// release of a Distributor applied, with the release that owns each (by
// group, kind, namespace and name).
func inventory(ctx context.Context, m release.Cluster, kinds []schema.GroupVersionKind) (map[release.ObjectRef]owned, []error) {
	req, _ := labels.NewRequirement(InventoryNameLabel, selection.Exists, nil)
	sel := labels.NewSelector().Add(*req)
	out := map[release.ObjectRef]owned{}
	var errs []error
	for _, gvk := range kinds {
		live, err := m.List(ctx, gvk, "", sel)
		if meta.IsNoMatchError(err) {
			continue // a kind the member does not serve holds nothing there
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s: %w", gvk.Kind, err))
			continue
		}
		for _, obj := range live {
			ref := release.ObjectRef{GroupVersionKind: gvk, Namespace: obj.GetNamespace(), Name: obj.GetName()}
			l := obj.GetLabels()
			out[groupKindRef(ref)] = owned{releaseID{Namespace: l[InventoryNamespaceLabel], Name: l[InventoryNameLabel]}, l[InventoryHookLabel] == "true"}
		}
	}
	return out, errs
}

func versionOf(kinds []schema.GroupVersionKind, gk schema.GroupKind) string {
	for _, k := range kinds {
		if k.GroupKind() == gk {
			return k.Version
		}
	}
	return ""
}

var namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}

// ensureNamespaces creates the namespaces of objs that a member lacks, as
// Karmada propagates namespaces to every member; a namespace Helm asked
// for (createNamespace, in pre) is created as Helm would create it, with
// its labels. They carry no inventory labels: a namespace may hold more
// than one release, so it is never pruned nor uninstalled (Helm leaves
// the namespace of createNamespace too).
func (d *Distributor) ensureNamespaces(ctx context.Context, m release.Cluster, objs []*unstructured.Unstructured, pre *preRelease) []error {
	var errs []error
	done := map[string]bool{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" || done[ns] {
			continue
		}
		done[ns] = true
		_, err := m.Get(ctx, release.ObjectRef{GroupVersionKind: namespaceGVK, Name: ns})
		if errors.Is(err, release.ErrNotFound) {
			obj := &unstructured.Unstructured{}
			if asked := pre.namespace(ns); asked != nil {
				obj = asked.DeepCopy()
			}
			obj.SetGroupVersionKind(namespaceGVK)
			obj.SetName(ns)
			_, err = m.Apply(ctx, obj, release.ApplyOptions{DiscardResult: true, FieldManager: d.fieldManager})
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("namespace %s: %w", ns, err))
		}
	}
	return errs
}

// groupKindRef drops the version: the same object is served under several.
func groupKindRef(r release.ObjectRef) release.ObjectRef {
	r.Version = ""
	return r
}

// kindsOf returns the kinds of objs once each (one version per group and
// kind), sorted, without the policy kinds, which never reach members.
func kindsOf(objs ...[]*unstructured.Unstructured) []schema.GroupVersionKind {
	seen := map[schema.GroupKind]schema.GroupVersionKind{}
	for _, list := range objs {
		for _, o := range list {
			gvk := o.GroupVersionKind()
			if policy.IsPolicyKind(o.GetAPIVersion(), o.GetKind()) {
				continue
			}
			if _, ok := seen[gvk.GroupKind()]; !ok {
				seen[gvk.GroupKind()] = gvk
			}
		}
	}
	out := make([]schema.GroupVersionKind, 0, len(seen))
	for _, gvk := range seen {
		out = append(out, gvk)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// deleteEverywhere deletes refs from every member; absent objects are
// not an error. With an owner, a member's object is deleted only if it
// carries owner's inventory labels (found with one List per kind):
// objects another release holds and objects nobody's release manages
// (left alone under conflict resolution Abort) stay as they are.
func (d *Distributor) deleteEverywhere(ctx context.Context, refs []release.ObjectRef, opts release.DeleteOptions, owner *releaseID) error {
	var kinds []schema.GroupVersionKind
	if owner != nil {
		seen := map[schema.GroupKind]bool{}
		for _, ref := range refs {
			if !seen[ref.GroupKind()] {
				seen[ref.GroupKind()] = true
				kinds = append(kinds, ref.GroupVersionKind)
			}
		}
		sort.Slice(kinds, func(i, j int) bool { return kinds[i].String() < kinds[j].String() })
	}
	return d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		var errs []error
		var owners map[release.ObjectRef]owned
		if owner != nil {
			owners, errs = inventory(ctx, d.members[i].Cluster, kinds)
		}
		for _, ref := range refs {
			if o, ok := owners[groupKindRef(ref)]; owner != nil && (!ok || o.releaseID != *owner) {
				continue
			}
			if err := d.members[i].Cluster.Delete(ctx, ref, opts); err != nil && !errors.Is(err, release.ErrNotFound) {
				errs = append(errs, fmt.Errorf("delete %s: %w", ref, err))
			}
		}
		return errors.Join(errs...)
	})
}

// manifestIndex remembers the Helm releases whose records the
// Distributor's Helm configurations read or write: their chart, and which
// manifest each has, for DetectDrift (a release's scope names it; a
// caller without a scope identity is served by manifest). Only the
// newest revision of each release is kept. Releases may share a manifest
// (one chart, release name and values in two namespaces).
type manifestIndex struct {
	mu        sync.Mutex
	byRelease map[releaseID]indexed
	byDigest  map[string]map[releaseID]bool
	seq       uint64
}

type indexed struct {
	version int
	digest  string
	chart   *chart.Chart
	seq     uint64 // when it was learned
}

// chartOf returns the chart of rel's newest record seen, or nil.
func (x *manifestIndex) chartOf(rel releaseID) *chart.Chart {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.byRelease[rel].chart
}

func (x *manifestIndex) learn(rel releaseID, version int, manifest string, c *chart.Chart) {
	digest := manifestDigest(manifest)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byRelease == nil {
		x.byRelease, x.byDigest = map[releaseID]indexed{}, map[string]map[releaseID]bool{}
	}
	old, ok := x.byRelease[rel]
	if ok && old.version > version {
		return
	}
	if ok {
		delete(x.byDigest[old.digest], rel)
		if len(x.byDigest[old.digest]) == 0 {
			delete(x.byDigest, old.digest)
		}
	}
	x.seq++
	x.byRelease[rel] = indexed{version: version, digest: digest, chart: c, seq: x.seq}
	if x.byDigest[digest] == nil {
		x.byDigest[digest] = map[releaseID]bool{}
	}
	x.byDigest[digest][rel] = true
}

func manifestDigest(manifest string) string {
	sum := sha256.Sum256([]byte(manifest))
	return hex.EncodeToString(sum[:])
}

// lookup returns the release DetectDrift works on: the one scope names,
// when it names one and a record of it was read or written; for a scope
// without a Helm release name, the release whose newest record has
// manifest (the one read or written last, when several share it).
func (x *manifestIndex) lookup(scope release.HelmScope, manifest string) (releaseID, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if scope.HelmReleaseName != "" {
		rel := releaseID{Namespace: scopeNamespace(scope), Name: scope.HelmReleaseName}
		_, ok := x.byRelease[rel]
		return rel, ok
	}
	var last releaseID
	var seq uint64
	for rel := range x.byDigest[manifestDigest(manifest)] {
		if s := x.byRelease[rel].seq; s > seq {
			last, seq = rel, s
		}
	}
	return last, seq > 0
}
