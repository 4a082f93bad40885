package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// Defaults of Config.
const (
	// DefaultName is the controller's name: its logger, metrics and
	// events carry it.
	DefaultName = "helmfleet-helmrelease"
	// DefaultRetryInterval is how long a release waits before it is
	// reconciled again when a dependency is not ready or its chart or
	// values cannot be had: Flux's --requeue-dependency default.
	DefaultRetryInterval = 30 * time.Second
	// Finalizer is the finalizer that makes deleting a HelmRelease
	// uninstall its Helm release first, Flux's.
	Finalizer = "finalizers.fluxcd.io"
	// DefaultMaxConcurrentReconciles is how many releases are reconciled
	// at once: Flux's --concurrent default. A Helm install mostly waits
	// on the API server, so with a remote or busy one a few at once
	// finish sooner. On the integration harness (the API server on the
	// same 2 cores) the API server is the bound: 1 and 4 installed
	// ten-object releases at the same rate, 16 no faster, with three
	// times the heap.
	DefaultMaxConcurrentReconciles = 4
	// ReasonInvalidSpec is the Ready and Stalled reason of a HelmRelease
	// whose spec does not decode or validate.
	ReasonInvalidSpec = "InvalidSpec"
)

// Config is what a HelmReleaseReconciler needs. Exactly one of Charts and
// Resolver is required; Setup fills Client, APIReader, REST and Events
// from the manager.
type Config struct {
	// Client writes HelmReleases' status and finalizers.
	Client client.Client
	// Cache reads HelmReleases (the one being reconciled, its
	// dependencies, and indexed lists) and source objects; it must serve
	// the field indexes SetupWithManager registers. Setup uses the
	// manager's cache; default Client.
	Cache client.Reader
	// APIReader reads what is not cached: Secrets and ConfigMaps of
	// valuesFrom and kubeconfigs, and the fresh HelmRelease a status is
	// written over. Default Client.
	APIReader client.Reader
	// REST is the local cluster's config: releases without
	// spec.kubeConfig are installed there.
	REST *rest.Config
	// Events records Kubernetes events on HelmReleases; nil records none.
	Events events.EventRecorder

	// Charts returns a release's chart.
	Charts reconcile.ChartGetter
	// Resolver, instead of Charts, resolves charts from the
	// HelmRepository, OCIRepository and HelmChart objects a release names
	// (read from Client, source.toolkit.fluxcd.io/v1); releases are then
	// reconciled again when those objects change.
	Resolver source.Resolver
	// Reconciler sets the reconciler's options; its Charts and Values are
	// filled in by the controller. Its OverrideManagers is Flux's
	// --override-manager (empty by default, as there).
	Reconciler reconcile.Config

	// NewCluster builds the cluster a release is installed on; default
	// KubeCluster.
	NewCluster ClusterFunc
	// NoCrossNamespaceRefs refuses a HelmRelease whose
	// spec.chart.spec.sourceRef, spec.chartRef or spec.dependsOn names
	// another namespace (Flux's --no-cross-namespace-refs; see
	// release.Release.DenyCrossNamespaceRefs): before anything is read
	// through its references, it is marked Ready False and Stalled,
	// reason AccessDenied, with a message naming the field and the other
	// namespace, and not reconciled again until its spec changes. Off by
	// default, as in Flux; a platform running tenants turns it on.
	NoCrossNamespaceRefs bool
	// DefaultServiceAccount is impersonated by releases that name no
	// spec.serviceAccountName (Flux's --default-service-account); empty:
	// the controller's own identity.
	DefaultServiceAccount string
	// InsecureKubeconfigExec accepts exec and auth-provider credential
	// plugins in spec.kubeConfig Secrets, which run on the controller's
	// host (Flux's --insecure-kubeconfig-exec); default refused (see
	// "Kubeconfig Secrets" in the package doc).
	InsecureKubeconfigExec bool
	// InsecureKubeconfigFiles accepts kubeconfig fields that name files
	// of the controller's host (tokenFile, client-certificate,
	// client-key, certificate-authority); default refused.
	InsecureKubeconfigFiles bool
	// Shard selects the HelmReleases this instance reconciles (see
	// ShardSelector); nil: all.
	Shard labels.Selector
	// RetryInterval is the wait before a release whose dependencies are
	// not ready, or whose chart, values or kubeconfig cannot be had, is
	// tried again; default DefaultRetryInterval.
	RetryInterval time.Duration
	// Name is the controller's name; default DefaultName.
	Name string
	// AdditiveCELDependencyCheck is helm-controller's feature gate of
	// that name (default off): a dependency with a readyExpr must then
	// be Ready too; off, the readyExpr replaces the Ready check.
	AdditiveCELDependencyCheck bool
	// MaxConcurrentReconciles bounds parallel reconciles; default
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
	// Metrics are the collectors; default NewMetrics(metrics.Registry).
	Metrics *Metrics
}

// HelmReleaseReconciler reconciles Flux HelmReleases where they live,
// each on the local cluster or the remote cluster of its
// spec.kubeConfig, with reconcile.Reconciler, and writes Flux's conditions
// back through the status subresource.
type HelmReleaseReconciler struct {
	client    client.Client
	cache     client.Reader
	apiReader client.Reader
	events    events.EventRecorder
	rec       *reconcile.Reconciler
	targets   *targets
	metrics   *Metrics
	shard     labels.Selector
	retry     time.Duration
	name      string
	parallel  int
	sources   bool
	noCrossNS bool
	// additiveCEL is Config.AdditiveCELDependencyCheck.
	additiveCEL bool
	log         logr.Logger // of the watches' map functions
}

// New returns the reconciler of cfg.
func New(cfg Config) (*HelmReleaseReconciler, error) {
	switch {
	case cfg.Client == nil:
		return nil, errors.New("controller: Config.Client is required")
	}
	if cfg.APIReader == nil {
		cfg.APIReader = cfg.Client
	}
	if cfg.Cache == nil {
		cfg.Cache = cfg.Client
	}
	charts, err := chartGetter("Config", cfg.Charts, cfg.Resolver, cfg.Cache)
	if err != nil {
		return nil, err
	}
	rc := cfg.Reconciler
	rc.Charts = charts
	rc.Values = ValuesReader{Reader: cfg.APIReader}
	rec, err := reconcile.New(rc)
	if err != nil {
		return nil, err
	}
	r := &HelmReleaseReconciler{
		client: cfg.Client, cache: cfg.Cache, apiReader: cfg.APIReader, events: cfg.Events, rec: rec,
		targets: newTargets(cfg.APIReader, cfg.REST, cfg.NewCluster, cfg.DefaultServiceAccount,
			kube.KubeconfigOptions{AllowExec: cfg.InsecureKubeconfigExec, AllowFiles: cfg.InsecureKubeconfigFiles}),
		metrics: cfg.Metrics, shard: cfg.Shard, retry: cfg.RetryInterval, name: cfg.Name,
		parallel: cfg.MaxConcurrentReconciles, sources: cfg.Resolver != nil, noCrossNS: cfg.NoCrossNamespaceRefs, log: logr.Discard(),
		additiveCEL: cfg.AdditiveCELDependencyCheck,
	}
	if r.metrics == nil {
		if r.metrics, err = NewMetrics(crmetrics.Registry); err != nil {
			return nil, fmt.Errorf("controller: metrics: %w", err)
		}
	}
	if r.retry <= 0 {
		r.retry = DefaultRetryInterval
	}
	if r.name == "" {
		r.name = DefaultName
	}
	if r.parallel <= 0 {
		r.parallel = DefaultMaxConcurrentReconciles
	}
	return r, nil
}

// Setup builds the reconciler of cfg over mgr (its client, API reader,
// REST config and event recorder, where cfg leaves them unset) and
// registers it with SetupWithManager: the few lines a platform team's
// main needs.
func Setup(ctx context.Context, mgr ctrl.Manager, cfg Config) (*HelmReleaseReconciler, error) {
	if err := managerSchemeError(mgr, cfg.Resolver != nil); err != nil {
		return nil, err
	}
	if cfg.Client == nil {
		cfg.Client = mgr.GetClient()
	}
	if cfg.APIReader == nil {
		cfg.APIReader = mgr.GetAPIReader()
	}
	if cfg.Cache == nil {
		cfg.Cache = mgr.GetCache()
	}
	if cfg.REST == nil {
		cfg.REST = mgr.GetConfig()
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Events == nil {
		cfg.Events = mgr.GetEventRecorder(cfg.Name)
	}
	r, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return r, r.SetupWithManager(ctx, mgr)
}

// SetupWithManager registers the field indexes and the controller with
// mgr. Releases are reconciled when they change (generation, labels or
// annotations such as reconcile.fluxcd.io/requestedAt), when a ConfigMap
// or Secret they read (valuesFrom, kubeConfig) changes, when a release
// they depend on becomes ready, and, with Config.Resolver, when their
// HelmRepository, OCIRepository or HelmChart changes: no polling beyond
// spec.interval.
func (r *HelmReleaseReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	r.log = mgr.GetLogger().WithName(r.name)
	idx := mgr.GetFieldIndexer()
	for field, fn := range Indexers() {
		if err := idx.IndexField(ctx, &release.Release{}, field, fn); err != nil {
			return fmt.Errorf("controller: index HelmReleases by %s: %w", field, err)
		}
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(r.name).
		For(&release.Release{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}),
			ShardPredicate(r.shard))).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.mapIndex(IndexConfigMaps, nameKey))).
		WatchesMetadata(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.mapIndex(IndexSecrets, nameKey))).
		Watches(&release.Release{}, handler.EnqueueRequestsFromMapFunc(r.mapDependents),
			builder.WithPredicates(becameReady{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.parallel})
	if r.sources {
		for field, fn := range HelmChartIndexers() {
			if err := idx.IndexField(ctx, &source.HelmChart{}, field, fn); err != nil {
				return fmt.Errorf("controller: index HelmCharts by %s: %w", field, err)
			}
		}
		changed := builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))
		b = b.Watches(&source.HelmRepository{}, handler.EnqueueRequestsFromMapFunc(r.mapHelmRepository), changed)
		for _, obj := range []client.Object{&source.OCIRepository{}, &source.HelmChart{}} {
			b = b.Watches(obj, handler.EnqueueRequestsFromMapFunc(r.mapIndex(IndexSources, sourceKeyOf)), changed)
		}
	}
	return b.Complete(r)
}

// inShard reports whether this instance reconciles obj.
func (r *HelmReleaseReconciler) inShard(obj client.Object) bool {
	return r.shard == nil || r.shard.Matches(labels.Set(obj.GetLabels()))
}

// Reconcile reconciles the HelmRelease req names. The result maps the
// release's Result: done → requeue after spec.interval; requeue → after
// its RequeueAfter; stalled → ctrlreconcile.TerminalError (no retry until the
// release changes), as is a spec that fails validation or, with
// Config.NoCrossNamespaceRefs, references another namespace; a
// dependency not ready, or a chart, values or kubeconfig that cannot be
// had → requeue after the retry interval; a failed Helm action → the
// error, retried with the controller's backoff.
func (r *HelmReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	start := time.Now()
	defer func() { r.metrics.observe(release.Kind, time.Since(start)) }()
	log := ctrl.LoggerFrom(ctx)

	obj := &release.Release{}
	if err := r.cache.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.targets.forget(req.String())
			r.metrics.deleted(release.Kind, req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !r.inShard(obj) {
		return ctrl.Result{}, nil
	}
	if obj.GetDeletionTimestamp() != nil {
		return r.finalize(ctx, obj)
	}

	rel, err := prepare(obj)
	if err != nil {
		log.Error(err, "invalid HelmRelease")
		return ctrl.Result{}, r.stall(ctx, obj, ReasonInvalidSpec, err)
	}
	if rel.Spec.Suspend {
		log.V(1).Info("reconciliation is suspended")
		return ctrl.Result{}, nil
	}
	if r.noCrossNS {
		// Before the finalizer and the dependencies: nothing is read
		// through a refused reference, nor shown of what it names.
		if err := rel.DenyCrossNamespaceRefs(); err != nil {
			log.Error(err, "cross-namespace reference refused")
			return ctrl.Result{}, r.stall(ctx, obj, release.ReasonAccessDenied, err)
		}
	}
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		patch := client.MergeFrom(obj.DeepCopy())
		controllerutil.AddFinalizer(obj, Finalizer)
		if err := r.client.Patch(ctx, obj, patch); err != nil {
			return ctrl.Result{}, fmt.Errorf("add finalizer to HelmRelease %s: %w", req, err)
		}
	}

	if msg := r.dependencyNotReady(ctx, rel); msg != "" {
		log.Info("dependencies not ready", "message", msg, "retryAfter", r.retry)
		rel.Status.MarkFalse(release.ConditionReady, release.ReasonDependencyNotReady, msg, rel.Generation, metav1.Now())
		return ctrl.Result{RequeueAfter: r.retry}, r.publish(ctx, obj, rel)
	}

	cluster, err := r.targets.cluster(ctx, rel)
	if err != nil {
		log.Error(err, "target cluster", "retryAfter", r.retry)
		rel.Status.MarkFalse(release.ConditionReady, release.ReasonInitFailed, err.Error(), rel.Generation, metav1.Now())
		r.event(obj, corev1.EventTypeWarning, release.ReasonInitFailed, "Reconcile", err.Error())
		return ctrl.Result{RequeueAfter: r.retry}, r.publish(ctx, obj, rel)
	}
	log = log.WithValues("cluster", cluster.Name())

	if rel.Status.ObservedGeneration != rel.Generation {
		// Flux marks the work in progress first, so kstatus and
		// `flux get` show InProgress while Helm runs.
		rel.Status.MarkTrue(release.ConditionReconciling, release.ReasonProgressing,
			fmt.Sprintf("reconciling generation %d", rel.Generation), rel.Generation, metav1.Now())
		if err := r.writeStatus(ctx, obj, rel.Status); err != nil {
			return ctrl.Result{}, err
		}
	}

	res, recErr := r.rec.Reconcile(ctx, cluster, rel)
	r.metrics.countActions(cluster.Name(), res.Actions)
	if err := r.publish(ctx, obj, rel); err != nil {
		return ctrl.Result{}, errors.Join(recErr, err)
	}
	r.recordEvent(obj, res, recErr)
	return r.result(log, res, recErr)
}

// stall marks obj Ready False and Stalled with reason and err's message,
// for a spec that will not reconcile until it changes, and returns err
// as a ctrlreconcile.TerminalError.
func (r *HelmReleaseReconciler) stall(ctx context.Context, obj *release.Release, reason string, err error) error {
	st := obj.Status
	msg := err.Error()
	now := metav1.Now()
	st.MarkTrue(release.ConditionStalled, reason, msg, obj.Generation, now)
	st.MarkFalse(release.ConditionReady, reason, msg, obj.Generation, now)
	st.RemoveCondition(release.ConditionReconciling)
	st.ObservedGeneration = obj.Generation
	r.metrics.recordConditions(release.Kind, obj.Namespace, obj.Name, &st)
	r.event(obj, corev1.EventTypeWarning, reason, "Reconcile", msg)
	return errors.Join(ctrlreconcile.TerminalError(err), r.writeStatus(ctx, obj, st))
}

// result maps a release Result and error onto the controller's. Next
// says how the reconcile ended (reconcile.Result keeps it, RequeueAfter
// and the error in agreement): stalled is terminal, done comes back after
// the interval, and requeue comes back at once, after its delay, or, for
// a chart or values that could not be had, after the controller's retry
// interval.
func (r *HelmReleaseReconciler) result(log logr.Logger, res *reconcile.Result, err error) (ctrl.Result, error) {
	switch res.Next {
	case reconcile.NextStalled:
		return ctrl.Result{}, ctrlreconcile.TerminalError(err)
	case reconcile.NextDone:
		log.V(1).Info("reconciled", "actions", res.Actions, "next", res.Next, "requeueAfter", res.RequeueAfter)
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
	}
	var stage *reconcile.StageError
	switch {
	case err == nil && res.RequeueAfter <= 0:
		return ctrl.Result{RequeueAfter: immediately}, nil
	case err == nil:
		log.V(1).Info("reconciled", "actions", res.Actions, "next", res.Next, "requeueAfter", res.RequeueAfter)
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
	case errors.As(err, &stage):
		// Values and charts come from objects that may yet appear (and
		// whose change is watched): retry after the interval, not at once.
		log.Error(err, "reconcile failed", "retryAfter", r.retry)
		return ctrl.Result{RequeueAfter: r.retry}, nil
	case res.RequeueAfter > 0:
		log.Error(err, "reconcile failed", "retryAfter", res.RequeueAfter)
		return ctrl.Result{RequeueAfter: res.RequeueAfter}, nil
	default:
		return ctrl.Result{}, err
	}
}

// immediately is the RequeueAfter of a release with more work to do at
// once (Next requeue with no delay): the queue's next turn, without the
// error backoff.
const immediately = time.Millisecond

// dependencyNotReady returns why a dependency of rel is not ready, or "":
// as helm-controller, a dependency with a readyExpr is ready when the
// expression holds (and, with additiveCEL, when it is Ready too).
func (r *HelmReleaseReconciler) dependencyNotReady(ctx context.Context, rel *release.Release) string {
	for i, d := range rel.Spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = rel.Namespace
		}
		dep := &release.Release{}
		if err := r.cache.Get(ctx, client.ObjectKey{Namespace: ns, Name: d.Name}, dep); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("dependency '%s/%s' is not ready: not found", ns, d.Name)
			}
			return fmt.Sprintf("dependency '%s/%s' is not ready: %v", ns, d.Name, err)
		}
		if d.ReadyExpr != "" {
			ok, err := release.DependencyReady(ctx, fmt.Sprintf("spec.dependsOn[%d].readyExpr", i), d.ReadyExpr, rel, dep)
			if err != nil {
				return fmt.Sprintf("dependency '%s/%s' is not ready: %v", ns, d.Name, err)
			}
			if !ok {
				return fmt.Sprintf("dependency '%s/%s' is not ready according to readyExpr eval", ns, d.Name)
			}
			if !r.additiveCEL {
				continue
			}
		}
		if !dep.IsReady() {
			return fmt.Sprintf("dependency '%s/%s' is not ready", ns, d.Name)
		}
	}
	return ""
}

// writeStatus writes st as the status of the HelmRelease obj names, through
// the status subresource, over the newest version of the object (so a
// spec changed meanwhile is kept and its new generation stays
// unobserved). It tries obj's own version first, one request, which is
// the newest unless something else wrote the object since it was read
// (the finalizer patch and an earlier status write leave obj at the
// version they wrote); on a conflict it reads the object afresh. obj
// takes the version written.
func (r *HelmReleaseReconciler) writeStatus(ctx context.Context, obj *release.Release, st release.Status) error {
	cur := obj.DeepCopy()
	cur.Status = *st.DeepCopy()
	err := r.client.Status().Update(ctx, cur)
	if apierrors.IsConflict(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur = &release.Release{}
			if err := r.apiReader.Get(ctx, client.ObjectKeyFromObject(obj), cur); err != nil {
				return err
			}
			cur.Status = *st.DeepCopy()
			return r.client.Status().Update(ctx, cur)
		})
	}
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("HelmRelease %s/%s: write status: %w", obj.Namespace, obj.Name, err)
	}
	if err == nil {
		obj.ResourceVersion = cur.ResourceVersion
	}
	return nil
}

// publish records the conditions of rel, the release obj was prepared
// into, in the metrics and writes its status over obj (see writeStatus):
// the last step of every reconcile that gets as far as rel.
func (r *HelmReleaseReconciler) publish(ctx context.Context, obj, rel *release.Release) error {
	r.metrics.recordConditions(release.Kind, rel.Namespace, rel.Name, &rel.Status)
	return r.writeStatus(ctx, obj, rel.Status)
}

// finalize uninstalls the Helm release of a HelmRelease being deleted
// (unless suspended, as Flux) and removes the finalizer.
func (r *HelmReleaseReconciler) finalize(ctx context.Context, obj *release.Release) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, Finalizer) {
		return ctrl.Result{}, nil
	}
	log := ctrl.LoggerFrom(ctx)
	rel, err := prepare(obj)
	switch {
	case err != nil:
		// Nothing to know the Helm release by: let the object go.
		log.Error(err, "deleting an invalid HelmRelease without uninstalling")
		r.event(obj, corev1.EventTypeWarning, ReasonInvalidSpec, "Uninstall", "deleted without uninstalling: "+err.Error())
	case rel.Spec.Suspend:
		log.Info("deleting a suspended HelmRelease without uninstalling")
	default:
		cluster, err := r.targets.cluster(ctx, rel)
		if err != nil {
			return ctrl.Result{RequeueAfter: r.retry}, err
		}
		res, err := r.rec.Uninstall(ctx, cluster, rel)
		r.metrics.countActions(cluster.Name(), res.Actions)
		if errors.Is(err, reconcile.ErrNoLatest) {
			// As Flux: nothing shows this HelmRelease installed the Helm
			// release of that name, so it is deleted without touching it.
			log.Info("deleting a HelmRelease without uninstalling", "reason", err.Error())
			r.event(obj, corev1.EventTypeWarning, release.ReasonUninstallFailed, "Uninstall", "deleted without uninstalling: "+err.Error())
			break
		}
		if err != nil {
			r.event(obj, corev1.EventTypeWarning, release.ReasonUninstallFailed, "Uninstall", err.Error())
			return ctrl.Result{}, err
		}
		r.event(obj, corev1.EventTypeNormal, release.ReasonUninstallSucceeded, "Uninstall",
			fmt.Sprintf("Helm uninstall of %s/%s succeeded", rel.GetStorageNamespace(), rel.GetReleaseName()))
	}
	patch := client.MergeFrom(obj.DeepCopy())
	controllerutil.RemoveFinalizer(obj, Finalizer)
	if err := r.client.Patch(ctx, obj, patch); err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, err
	}
	r.targets.forget(obj.Namespace + "/" + obj.Name)
	r.metrics.deleted(release.Kind, obj.Namespace, obj.Name)
	return ctrl.Result{}, nil
}

// recordEvent emits one event for a reconcile that did something or
// failed, with the Ready condition's reason as Flux's events carry it
// (InstallSucceeded, UpgradeFailed, …). A reconcile that found the
// release in sync emits nothing.
func (r *HelmReleaseReconciler) recordEvent(obj *release.Release, res *reconcile.Result, err error) {
	ready := res.Status.GetCondition(release.ConditionReady)
	if ready == nil || (err == nil && len(res.Actions) == 0) {
		return
	}
	typ := corev1.EventTypeNormal
	if err != nil || ready.Status != metav1.ConditionTrue {
		typ = corev1.EventTypeWarning
	}
	r.event(obj, typ, ready.Reason, string(res.Last()), ready.Message)
	if len(res.Actions) == 0 {
		return
	}
	// What the reconcile warned of beyond the spec's own field warnings
	// (the FieldWarnings condition holds those): an uninstall remediation
	// that would remove a healthy revision, a chart accepted unverified.
	fields := release.FieldWarnings(obj)
	for _, w := range res.Warnings {
		if !slices.Contains(fields, w) {
			r.event(obj, corev1.EventTypeWarning, EventReasonWarning, string(res.Last()), w)
		}
	}
}

// EventReasonWarning is the reason of the Warning events that carry a
// reconcile's warnings (reconcile.Result.Warnings) when it acted, other
// than the field warnings the FieldWarnings condition keeps: for one, a
// remediation that would uninstall the deployed and healthy revision.
const EventReasonWarning = "ReconcileWarning"

func (r *HelmReleaseReconciler) event(obj *release.Release, typ, reason, action, msg string) {
	if r.events == nil {
		return
	}
	if action == "" || action == string(reconcile.ActionNone) {
		action = "Reconcile"
	}
	r.events.Eventf(obj, nil, typ, reason, action, "%s", msg)
}
