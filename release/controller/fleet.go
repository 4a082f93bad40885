package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// Karmada policy kinds the FleetReconciler reads from the hub, as
// unstructured objects decoded by release.Decode.
var (
	PropagationPolicyGVK = schema.GroupVersionKind{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "PropagationPolicy"}
	OverridePolicyGVK    = schema.GroupVersionKind{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "OverridePolicy"}
)

// fleetRequest is the one key of the FleetReconciler: every change
// replans the whole fleet, as Fleet.Plan does.
var fleetRequest = ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: "fleet"}}

// FleetConfig is what a FleetReconciler needs. Client and Members are
// required, and exactly one of Charts and Resolver; SetupFleet fills
// Client, Cache and Events from the manager.
type FleetConfig struct {
	// Client writes the HelmReleases' status.
	Client client.Client
	// Cache lists HelmReleases and policies; default Client.
	Cache client.Reader
	// Members gives the member clusters; SecretMembers reads them from
	// kubeconfig Secrets on the hub.
	Members MemberSource
	// MemberSecretsNamespace, when set, makes a change of a Secret
	// labelled MemberLabel there replan the fleet.
	MemberSecretsNamespace string
	// Charts returns a release's chart.
	Charts reconcile.ChartGetter
	// Resolver, instead of Charts, resolves charts from the
	// HelmRepository, OCIRepository and HelmChart objects a release names
	// (read from the hub through Cache, source.toolkit.fluxcd.io/v1), as
	// Config.Resolver does; the fleet is then planned again when those
	// objects change.
	Resolver source.Resolver
	// Values reads valuesFrom on the members' behalf; default the
	// hub's ConfigMaps and Secrets through Cache.
	Values ValuesReader
	// Reconciler sets the per-member reconciler's options.
	Reconciler reconcile.Config
	// Events records Kubernetes events on HelmReleases; nil records none.
	Events events.EventRecorder
	// RetryInterval is the wait before a fleet with failed members is
	// tried again; default DefaultRetryInterval.
	RetryInterval time.Duration
	// Name is the controller's name; default "helmfleet-fleet".
	Name string
	// Metrics are the collectors; default NewMetrics(metrics.Registry).
	Metrics *Metrics
	// DefaultServiceAccount is impersonated on the members by releases
	// that name no spec.serviceAccountName (Flux's
	// --default-service-account); empty: the members' own identities.
	// A member whose cluster cannot impersonate fails such a release
	// (see "Service accounts in a fleet" in the package doc).
	DefaultServiceAccount string
	// Store keeps the fleet's inventory (what it applied on which member)
	// where a restarted or newly elected controller finds it, so that a
	// release removed from the hub while no controller ran is still
	// uninstalled from its members: fleet.NewObjectStore on the hub, say
	// (Secrets in a namespace of the operator's choosing). Default none:
	// the inventory stays in this process, and a new process does not
	// know what an earlier one installed, so it never uninstalls it.
	Store fleet.Store
	// NoCrossNamespaceRefs refuses, on every member, a HelmRelease whose
	// spec.chart.spec.sourceRef, spec.chartRef or spec.dependsOn names
	// another namespace (fleet.Config.NoCrossNamespaceRefs): nothing is
	// resolved or installed for it, and its Ready condition is False and
	// Stalled True, reason AccessDenied, naming the field and the other
	// namespace on each member. Off by default, as in Flux; a platform
	// running tenants turns it on.
	NoCrossNamespaceRefs bool
}

// FleetReconciler runs the HelmReleases and Karmada policies kept on a
// hub on the fleet's members with release/fleet: one reconcile plans and
// applies the whole fleet (dependency order across members), then writes
// each HelmRelease's Ready condition (ready on n/m members, or which are
// not and why) and observedGeneration. The per-member status stays in the
// fleet's inventory, in FleetConfig.Store when set.
type FleetReconciler struct {
	client  client.Client
	cache   client.Reader
	members MemberSource
	rec     *reconcile.Reconciler
	events  events.EventRecorder
	metrics *Metrics
	retry   time.Duration
	name    string
	secrets string
	store   fleet.Store
	noXNS   bool
	sa      string // default service account
	sources bool   // watch the source kinds: FleetConfig.Resolver is set
	log     logr.Logger

	mu       sync.Mutex
	fleet    *fleet.Fleet
	clusters []string // member names and backends of fleet
	backends []release.Cluster
}

// NewFleet returns the fleet reconciler of cfg.
func NewFleet(cfg FleetConfig) (*FleetReconciler, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("controller: FleetConfig.Client is required")
	case cfg.Members == nil:
		return nil, errors.New("controller: FleetConfig.Members is required")
	}
	if cfg.Cache == nil {
		cfg.Cache = cfg.Client
	}
	charts, err := chartGetter("FleetConfig", cfg.Charts, cfg.Resolver, cfg.Cache)
	if err != nil {
		return nil, err
	}
	rc := cfg.Reconciler
	rc.Charts = charts
	rc.Values = cfg.Values
	if cfg.Values.Reader == nil {
		rc.Values = ValuesReader{Reader: cfg.Cache}
	}
	rec, err := reconcile.New(rc)
	if err != nil {
		return nil, err
	}
	r := &FleetReconciler{client: cfg.Client, cache: cfg.Cache, members: cfg.Members, rec: rec, events: cfg.Events,
		metrics: cfg.Metrics, retry: cfg.RetryInterval, name: cfg.Name, secrets: cfg.MemberSecretsNamespace, store: cfg.Store,
		noXNS: cfg.NoCrossNamespaceRefs, sa: cfg.DefaultServiceAccount, sources: cfg.Resolver != nil, log: logr.Discard()}
	if r.metrics == nil {
		if r.metrics, err = NewMetrics(crmetrics.Registry); err != nil {
			return nil, fmt.Errorf("controller: metrics: %w", err)
		}
	}
	if r.retry <= 0 {
		r.retry = DefaultRetryInterval
	}
	if r.name == "" {
		r.name = "helmfleet-fleet"
	}
	return r, nil
}

// SetupFleet builds the fleet reconciler of cfg over mgr and registers
// it.
func SetupFleet(ctx context.Context, mgr ctrl.Manager, cfg FleetConfig) (*FleetReconciler, error) {
	if err := managerSchemeError(mgr, cfg.Resolver != nil); err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		cfg.Client = mgr.GetClient()
	}
	if cfg.Cache == nil {
		cfg.Cache = mgr.GetCache()
	}
	if cfg.Values.Reader == nil {
		cfg.Values = ValuesReader{Reader: mgr.GetAPIReader()}
	}
	if cfg.Name == "" {
		cfg.Name = "helmfleet-fleet"
	}
	if cfg.Events == nil {
		cfg.Events = mgr.GetEventRecorder(cfg.Name)
	}
	r, err := NewFleet(cfg)
	if err != nil {
		return nil, err
	}
	return r, r.SetupWithManager(ctx, mgr)
}

// SetupWithManager watches HelmReleases, the Karmada policies, the
// member Secrets and, with FleetConfig.Resolver, the HelmRepositories,
// OCIRepositories and HelmCharts on the hub; every change replans the
// fleet.
func (r *FleetReconciler) SetupWithManager(_ context.Context, mgr ctrl.Manager) error {
	r.log = mgr.GetLogger().WithName(r.name)
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrlreconcile.Request {
		return []ctrlreconcile.Request{fleetRequest}
	})
	changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))
	b := ctrl.NewControllerManagedBy(mgr).Named(r.name).
		Watches(&release.Release{}, all, changed).
		Watches(unstructuredOf(PropagationPolicyGVK), all, changed).
		Watches(unstructuredOf(OverridePolicyGVK), all, changed)
	if r.sources {
		for _, obj := range []client.Object{&source.HelmRepository{}, &source.OCIRepository{}, &source.HelmChart{}} {
			b = b.Watches(obj, all, changed)
		}
	}
	if r.secrets != "" {
		ns := r.secrets
		b = b.WatchesMetadata(&corev1.Secret{}, all, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			_, member := o.GetLabels()[MemberLabel]
			return member && o.GetNamespace() == ns
		})))
	}
	return b.Complete(r)
}

func unstructuredOf(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// fleetFor returns the Fleet of members, the same one while the members
// are the same; a new one otherwise, carrying the inventory over (with a
// store, the new Fleet loads it from there).
func (r *FleetReconciler) fleetFor(members []release.Member) (*fleet.Fleet, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, len(members))
	backends := make([]release.Cluster, len(members))
	for i, m := range members {
		names[i], backends[i] = m.Facts.Name, m.Cluster
	}
	same := r.fleet != nil && len(names) == len(r.clusters)
	for i := 0; same && i < len(names); i++ {
		same = names[i] == r.clusters[i] && backends[i] == r.backends[i]
	}
	if same {
		return r.fleet, nil
	}
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: r.rec, Store: r.store, NoCrossNamespaceRefs: r.noXNS, DefaultServiceAccount: r.sa})
	if err != nil {
		return nil, err
	}
	if r.fleet != nil && r.store == nil {
		if err := f.Restore(r.fleet.Inventory()); err != nil {
			return nil, err
		}
	}
	r.fleet, r.clusters, r.backends = f, names, backends
	return f, nil
}

// Reconcile plans and applies the fleet, and writes each HelmRelease's
// summary status. It requeues after the shortest spec.interval, or after
// the retry interval while a member fails.
func (r *FleetReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	defer func() { r.metrics.observe("Fleet", time.Since(start)) }()
	log := ctrl.LoggerFrom(ctx)

	members, err := r.members.Members(ctx)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("fleet members: %w", err)
	}
	fl, err := r.fleetFor(members)
	if err != nil {
		return ctrl.Result{}, err
	}
	var list release.ReleaseList
	if err := r.cache.List(ctx, &list); err != nil {
		return ctrl.Result{}, err
	}
	in := fleet.Inputs{}
	objs := map[string]*release.Release{}
	for i := range list.Items {
		obj := &list.Items[i]
		if obj.DeletionTimestamp != nil {
			continue // its members' copies are garbage-collected
		}
		rel, err := prepare(obj)
		if err != nil {
			r.writeFleetStatus(ctx, obj, metav1.ConditionFalse, ReasonInvalidSpec, err.Error())
			continue
		}
		in.Releases = append(in.Releases, rel)
		objs[rel.Namespace+"/"+rel.Name] = obj
	}
	if in.Policies, err = r.policies(ctx); err != nil {
		return ctrl.Result{}, err
	}
	plan, err := fl.Plan(ctx, in)
	if err != nil {
		return ctrl.Result{}, err
	}
	// A member where the release failed before it could be planned (an
	// override that fails there) is one of its failed members.
	failedOn := map[string][]*fleet.MemberError{}
	for _, e := range plan.PlacementErrors() {
		log.Info("placement", "error", e.Error())
		if me, ok := errors.AsType[*fleet.MemberError](e); ok && !me.Key.IsKustomization() {
			ref := me.Key.Namespace + "/" + me.Key.Name
			failedOn[ref] = append(failedOn[ref], me)
		}
	}
	rep, applyErr := fl.Apply(ctx, plan, fleet.ApplyOptions{})
	if rep == nil {
		return ctrl.Result{}, applyErr
	}
	byRel := map[string][]fleet.ItemReport{}
	for _, it := range rep.Items {
		byRel[it.Key.Namespace+"/"+it.Key.Name] = append(byRel[it.Key.Namespace+"/"+it.Key.Name], it)
		r.metrics.countActions(it.Key.Cluster, it.Actions)
	}
	// A member a release left is garbage-collected there (the plan
	// uninstalls it): it is no longer one of the release's members.
	removal := plan.Removed
	requeue, failed := time.Duration(0), false
	for _, rel := range in.Releases {
		ref := rel.Namespace + "/" + rel.Name
		items := byRel[ref]
		status, reason, msg := summarize(items, failedOn[ref], removal)
		placed := len(failedOn[ref])
		for _, it := range items {
			if !removal(it.Key) {
				placed++
			}
		}
		if placed == 0 {
			status, reason, msg = metav1.ConditionFalse, "NotPlaced", "no member gets this release: no propagation policy places it"
			for _, e := range plan.PlacementErrors() {
				if strings.Contains(e.Error(), ref) {
					msg = e.Error()
				}
			}
		}
		if status != metav1.ConditionTrue {
			failed = true
		}
		r.writeFleetStatus(ctx, objs[ref], status, reason, msg)
		if iv := rel.Spec.Interval.Duration; iv > 0 && (requeue == 0 || iv < requeue) {
			requeue = iv
		}
	}
	if failed && (requeue == 0 || r.retry < requeue) {
		requeue = r.retry
	}
	if applyErr != nil {
		log.Error(applyErr, "fleet apply")
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// summarize is a release's Ready condition over its members: the items
// applied and the members where it failed before it could be (failed);
// its reason is AccessDenied when a member refused the release's
// references. An item removal says is the uninstall from a member the
// release left: not one of its members, it is named only when it
// failed, and then the release is not Ready.
func summarize(items []fleet.ItemReport, failed []*fleet.MemberError, removal func(fleet.Key) bool) (metav1.ConditionStatus, string, string) {
	var ready, notReady, leaving []string
	for _, e := range failed {
		notReady = append(notReady, e.Key.Cluster+": "+firstLine(e.Err.Error()))
	}
	total := len(failed)
	reason := release.ReasonReconciliationFailed
	for _, it := range items {
		if removal(it.Key) {
			if it.State != depgraph.Succeeded {
				why := it.State.String()
				if it.Err != nil {
					why = firstLine(it.Err.Error())
				}
				leaving = append(leaving, it.Key.Cluster+" (no longer placed there; uninstall): "+why)
			}
			continue
		}
		total++
		if _, ok := errors.AsType[*release.AccessDeniedError](it.Err); ok {
			reason = release.ReasonAccessDenied
		}
		if it.State == depgraph.Succeeded {
			ready = append(ready, it.Key.Cluster)
		} else {
			why := it.State.String()
			if it.Err != nil {
				why = firstLine(it.Err.Error())
			}
			notReady = append(notReady, it.Key.Cluster+": "+why)
		}
	}
	sort.Strings(ready)
	sort.Strings(notReady)
	sort.Strings(leaving)
	notReady = append(notReady, leaving...)
	if len(notReady) == 0 {
		return metav1.ConditionTrue, release.ReasonReconciliationSucceeded,
			fmt.Sprintf("ready on %d/%d members: %s", len(ready), total, strings.Join(ready, ", "))
	}
	return metav1.ConditionFalse, reason,
		fmt.Sprintf("ready on %d/%d members; %s", len(ready), total, strings.Join(notReady, "; "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// policies reads the Karmada policies on the hub and decodes them with
// release.Decode.
func (r *FleetReconciler) policies(ctx context.Context) (policy.Set, error) {
	var buf bytes.Buffer
	for _, gvk := range []schema.GroupVersionKind{PropagationPolicyGVK, OverridePolicyGVK} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.cache.List(ctx, list); err != nil {
			return policy.Set{}, fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			u := list.Items[i].DeepCopy()
			delete(u.Object, "status")
			data, err := json.Marshal(u.Object)
			if err != nil {
				return policy.Set{}, err
			}
			buf.WriteString("---\n")
			buf.Write(data)
			buf.WriteString("\n")
		}
	}
	objs, err := release.Decode(&buf)
	if err != nil {
		return policy.Set{}, err
	}
	return objs.Policies, nil
}

// writeFleetStatus writes a HelmRelease's fleet-wide Ready condition, and
// Stalled beside it when a member refused its references (AccessDenied):
// that does not change until the spec does.
func (r *FleetReconciler) writeFleetStatus(ctx context.Context, obj *release.Release, status metav1.ConditionStatus, reason, msg string) {
	st := obj.Status
	old := st.GetCondition(release.ConditionReady)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != msg || st.ObservedGeneration != obj.Generation
	st.Mark(release.ConditionReady, status, reason, msg, obj.Generation, metav1.Now())
	if reason == release.ReasonAccessDenied {
		st.MarkTrue(release.ConditionStalled, reason, msg, obj.Generation, metav1.Now())
	} else {
		changed = changed || st.GetCondition(release.ConditionStalled) != nil
		st.RemoveCondition(release.ConditionStalled)
	}
	st.RemoveCondition(release.ConditionReconciling)
	st.ObservedGeneration = obj.Generation
	r.metrics.recordConditions(release.Kind, obj.Namespace, obj.Name, &st)
	if !changed {
		return
	}
	fresh := obj.DeepCopy()
	fresh.Status = st
	if err := r.client.Status().Update(ctx, fresh); err != nil {
		r.log.Error(err, "write status", "release", obj.Namespace+"/"+obj.Name)
		return
	}
	if r.events != nil {
		typ := corev1.EventTypeNormal
		if status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		r.events.Eventf(obj, nil, typ, reason, "Reconcile", "%s", msg)
	}
}
