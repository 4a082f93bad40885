package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmpostrender "helm.sh/helm/v3/pkg/postrender"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// Chart is a chart ready to install: the loaded chart and the values
// files its Release lists in chart.spec.valuesFiles, read from the chart
// in list order (they replace the chart's values.yaml).
type Chart struct {
	// Chart is the loaded Helm chart.
	Chart *chart.Chart
	// ValuesFiles are the listed values files, in order.
	ValuesFiles []values.File
	// Digest identifies the chart artifact (e.g. an OCI digest); may be
	// empty for charts without one.
	Digest string
	// Verified says who signed the artifact when its source asked for
	// verification; nil otherwise.
	Verified *source.Verified
}

// ChartGetter returns the chart a Release installs. Resolvers of package
// source implement it through an adapter; tests and examples can use
// ChartGetterFunc.
type ChartGetter interface {
	GetChart(ctx context.Context, rel *release.Release) (*Chart, error)
}

// ChartGetterFunc adapts a function to ChartGetter.
type ChartGetterFunc func(ctx context.Context, rel *release.Release) (*Chart, error)

// GetChart calls f.
func (f ChartGetterFunc) GetChart(ctx context.Context, rel *release.Release) (*Chart, error) {
	return f(ctx, rel)
}

// Config is what a Reconciler needs. Charts is required.
type Config struct {
	// Charts returns the chart of a Release.
	Charts ChartGetter
	// Values reads the ConfigMaps and Secrets of spec.valuesFrom; it may
	// be nil for releases without valuesFrom.
	Values values.Reader
	// Now is the clock stamped on conditions; default time.Now.
	Now func() time.Time
	// PollInterval is how often waits re-read objects; default 1s.
	PollInterval time.Duration
	// FieldManager owns the fields drift correction writes back; default
	// "helm", the manager of Helm's own writes, so corrected fields stay
	// Helm's.
	FieldManager string
	// UninstallHealthyRelease opts in to Flux's behaviour of remediating a
	// failed upgrade by uninstalling even when the previous revision was
	// deployed and healthy. By default helmfleet rolls back to that
	// revision instead, so a broken new version never leaves nothing
	// running, and says so in the Remediated condition.
	UninstallHealthyRelease bool
	// OriginLabels adds Flux's origin labels (helm.toolkit.fluxcd.io/name
	// and /namespace) to every rendered object, as Flux always does. Off
	// by default: it runs a kustomize pass over every manifest, which
	// costs milliseconds per install or upgrade.
	OriginLabels bool
	// InsecureHelmErrorText keeps Helm's full error text for releases
	// whose values hold Secret data, where by default it is withheld (see
	// "Secret values in errors" in the package doc). The text may then
	// quote a Secret value, in any form, in every output: errors, status
	// conditions, events, logs, plans. Insecure: set it only in a trusted
	// context, such as a one-off Plan run by someone who may read the
	// Secrets, never in a controller whose status others can read.
	InsecureHelmErrorText bool
}

// Reconciler brings one Release on one cluster to its desired state with
// Helm's own actions, following Flux's helm-controller state machine. It
// owns the decisions (what to do next); the caller owns scheduling (when
// to call again, see Result.Next). It keeps no per-release state: all it
// needs is in the Release, its Status and Helm's storage. Safe for
// concurrent use on different releases.
type Reconciler struct {
	charts       ChartGetter
	values       values.Reader
	now          func() time.Time
	poll         time.Duration
	fieldManager string
	uninstallOK  bool
	originLabels bool
	// insecureErrors is Config.InsecureHelmErrorText.
	insecureErrors bool
}

// New returns a Reconciler for cfg.
func New(cfg Config) (*Reconciler, error) {
	if cfg.Charts == nil {
		return nil, errors.New("release: reconciler config: Charts is required")
	}
	r := &Reconciler{charts: cfg.Charts, values: cfg.Values, now: cfg.Now, poll: cfg.PollInterval,
		fieldManager: cfg.FieldManager, uninstallOK: cfg.UninstallHealthyRelease, originLabels: cfg.OriginLabels,
		insecureErrors: cfg.InsecureHelmErrorText}
	r.charts = containedCharts{r.charts}
	if r.values != nil {
		r.values = containedValues{r.values}
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.poll <= 0 {
		r.poll = time.Second
	}
	if r.fieldManager == "" {
		r.fieldManager = "helm"
	}
	return r, nil
}

// Action is one thing a reconcile did.
type Action string

const (
	// ActionNone means nothing was done: the release was in sync (or
	// suspended, or stalled).
	ActionNone Action = "none"
	// ActionInstall is a Helm install.
	ActionInstall Action = "install"
	// ActionUpgrade is a Helm upgrade.
	ActionUpgrade Action = "upgrade"
	// ActionTest is a Helm test.
	ActionTest Action = "test"
	// ActionRollback is a rollback that remediated a failure.
	ActionRollback Action = "rollback"
	// ActionUninstall is a Helm uninstall: asked for, remediating a
	// failure, or removing the release before a reinstall under a new
	// name, namespace or chart.
	ActionUninstall Action = "uninstall"
	// ActionUnlock marked a release stuck in a pending state failed.
	ActionUnlock Action = "unlock"
	// ActionCorrectDrift patched live objects back to the manifest.
	ActionCorrectDrift Action = "correct-drift"
)

// Next says what the caller should do after a reconcile.
type Next string

const (
	// NextDone: the release is as desired (or suspended); reconcile again
	// after Result.RequeueAfter (spec.interval), or when the Release
	// changes.
	NextDone Next = "done"
	// NextRequeue: more work remains (a remediation ran, or a retry is
	// due); reconcile again after Result.RequeueAfter (0: at once).
	NextRequeue Next = "requeue"
	// NextStalled: no progress is possible until the Release changes or a
	// reset is requested; the Stalled condition says why.
	NextStalled Next = "stalled"
)

// Result is the outcome of one reconcile.
type Result struct {
	// Actions are the actions run, in order.
	Actions []Action
	// Action is the last action run, ActionNone if none.
	Action Action
	// State is the state the last decision was taken in.
	State State
	// Next says what to do now; RequeueAfter says when.
	Next Next
	// RequeueAfter is when to reconcile again.
	RequeueAfter time.Duration
	// Unlocked is true when a release stuck pending was unlocked.
	Unlocked bool
	// Helm is Helm's latest release record after the reconcile; nil when
	// there is none.
	Helm *helmrelease.Release
	// Values are the composed values, with provenance; nil when they
	// could not be composed.
	Values *values.Result
	// Drift is the drift report when drift detection ran.
	Drift *drift.Report
	// Status is the Release's new status; it is also written to the
	// Release passed in.
	Status release.Status
}

// Did reports whether a was among the actions run.
func (r *Result) Did(a Action) bool {
	for _, x := range r.Actions {
		if x == a {
			return true
		}
	}
	return false
}

// StalledError reports a release on which no progress is possible until
// its spec changes or a reset is requested (annotation
// reconcile.fluxcd.io/resetAt): retries exceeded, or no rollback target.
type StalledError struct {
	// Release is namespace/name of the Release.
	Release string
	// Cluster is the cluster's name.
	Cluster string
	// Reason is RetriesExceeded or MissingRollbackTarget.
	Reason string
	// Message says what happened.
	Message string
	// Err is the failure that used up the retries (or needed the missing
	// rollback target), if any.
	Err error
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("release %s on cluster %s stalled (%s): %s", e.Release, e.Cluster, e.Reason, e.Message)
}

// Unwrap returns the failure behind the stall.
func (e *StalledError) Unwrap() error { return e.Err }

// ActionError is a Helm action that failed.
type ActionError struct {
	// Release is namespace/name of the Release.
	Release string
	// Cluster is the cluster's name.
	Cluster string
	// Action is the action that failed.
	Action Action
	// Err is Helm's error.
	Err error
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("release %s on cluster %s: helm %s failed: %v", e.Release, e.Cluster, e.Action, e.Err)
}

// Unwrap returns Helm's error.
func (e *ActionError) Unwrap() error { return e.Err }

// StageError is a failure before any Helm action: the chart could not be
// had (Reason ArtifactFailed) or the values not composed (ValuesError).
type StageError struct {
	// Release is namespace/name of the Release.
	Release string
	// Reason is the condition reason recorded in the status.
	Reason string
	// Err is the cause.
	Err error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("release %s: %s: %v", e.Release, e.Reason, e.Err)
}

// Unwrap returns the cause.
func (e *StageError) Unwrap() error { return e.Err }

// run is one reconcile in progress.
type run struct {
	r       *Reconciler
	ctx     context.Context
	cluster release.Cluster
	rel     *release.Release
	d       *desired
	cfg     *action.Configuration
	res     *Result
	done    map[actionType]bool
	force   bool
	lastErr error
	// safeRollback is the healthy revision a rollback replaces a
	// configured uninstall remediation with.
	safeRollback *release.Snapshot
	// lists, when set, is shared by the drift checks of several releases.
	lists liveCache
	// stores caches Helm's storage reads of this run, by storage
	// namespace.
	stores map[string]*storageCache
}

// actionType groups actions as Flux does: each type runs at most once per
// reconcile, and a remediation ends it.
type actionType int

const (
	typeRelease actionType = iota
	typeTest
	typeRemediate
	typeUnlock
	typeDrift
)

func typeOf(a Action) actionType {
	switch a {
	case ActionTest:
		return typeTest
	case ActionRollback, ActionUninstall:
		return typeRemediate
	case ActionUnlock:
		return typeUnlock
	case ActionCorrectDrift:
		return typeDrift
	default:
		return typeRelease
	}
}

// Reconcile makes the Helm release of rel on cluster match rel, one step
// of Flux's state machine after another, each action type at most once,
// stopping after a remediation:
//
//	Absent → install; Locked → unlock, then go on; Unmanaged → upgrade;
//	OutOfSync → upgrade; Untested → test; Failed → remediate (rollback or
//	uninstall, while retries remain; RetryOnFailure upgrades again after
//	its interval); Drifted → correct (mode enabled) or report (warn);
//	InSync → nothing.
//
// A change of release name, target namespace, storage namespace or chart
// name uninstalls the old release first (a chart-name change upgrades in
// place with upgrade.chartNameChangeStrategy InPlaceUpdate). Failure
// counters reset when the generation, chart version or values digest
// change, or on a reset request.
//
// rel.Status gets Flux's conditions (Ready, Reconciling, Stalled,
// Released, TestSuccess, Remediated, Drifted), history snapshots and
// counters; the Result says what was done and what to do next. The error
// is nil when the release ends ready (or suspended), and when a reconcile
// only remediated a failure met by an earlier one and asks to be run
// again (Next requeue, as Flux requeues); a stalled release returns a
// *StalledError, a failed action an *ActionError.
//
// Cancellation: ctx is observed by every call Helm makes into the cluster
// and by every wait, so a cancelled reconcile returns promptly after Helm
// has recorded the interrupted action as failed — nothing is left pending
// and no goroutine outlives the call. Helm's template rendering and the
// writes already sent are not interrupted. A process killed mid-action
// can leave a release pending; the next reconcile unlocks it.
func (r *Reconciler) Reconcile(ctx context.Context, cluster release.Cluster, rel *release.Release) (*Result, error) {
	res := &Result{Action: ActionNone, Next: NextDone}
	if rel.Spec.Suspend {
		res.Status = rel.Status
		return res, nil
	}
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: res, done: map[actionType]bool{}}
	err := ru.reconcile()
	if v, ok := rel.GetAnnotations()[release.ReconcileRequestAnnotation]; ok {
		rel.Status.LastHandledReconcileAt = v
	}
	res.Status = rel.Status
	return res, err
}

func (ru *run) reconcile() error {
	rel, res := ru.rel, ru.res
	d, err := ru.r.prepare(ru.ctx, rel)
	ru.markSourceVerified(d, err)
	if err != nil {
		res.Next = NextRequeue
		ru.markReady(metav1.ConditionFalse, stageReason(err), err.Error())
		return err
	}
	ru.d, res.Values = d, d.values
	ru.handleRequests()
	ru.resetFailuresOnChange()
	rel.Status.LastAttemptedGeneration = rel.Generation
	rel.Status.LastAttemptedRevision = d.chart.Chart.Metadata.Version
	rel.Status.LastAttemptedRevisionDigest = d.chart.Digest
	rel.Status.LastAttemptedConfigDigest = d.values.Digest

	if err := ru.handleTargetChange(); err != nil {
		return err
	}
	if ru.cfg, err = ru.helmConfig(rel.GetStorageNamespace(), rel.GetTargetNamespace()); err != nil {
		res.Next = NextRequeue
		ru.markReady(metav1.ConditionFalse, release.ReasonInitFailed, err.Error())
		return err
	}
	if err := ru.checkKubeVersion(); err != nil {
		res.Next = NextRequeue
		ru.markReady(metav1.ConditionFalse, release.ReasonInitFailed, err.Error())
		return err
	}
	for {
		if err := ru.ctx.Err(); err != nil {
			res.Next = NextRequeue
			return fmt.Errorf("release %s on cluster %s: reconcile cancelled after %v: %w", refOf(rel), ru.cluster.Name(), res.Actions, err)
		}
		obs, err := ru.observe()
		if err != nil {
			res.Next = NextRequeue
			ru.markReady(metav1.ConditionFalse, release.ReasonStateError, err.Error())
			return err
		}
		res.State = obs.state
		next, err := ru.decide(obs)
		if err != nil {
			return ru.stall(err)
		}
		if next == ActionNone {
			return ru.finish(obs)
		}
		if ru.done[typeOf(next)] {
			// Flux's rule: an action type runs once per reconcile. With
			// RetryOnFailure the next attempt waits for its interval.
			if retry := ru.activeRetry(); retry != nil && typeOf(next) == typeRelease {
				ru.res.Next, ru.res.RequeueAfter = NextRequeue, retryAfter(retry)
				ru.setCondition(release.ConditionReconciling, metav1.ConditionTrue, "ProgressingWithRetry", fmt.Sprintf("retrying after %s", ru.res.RequeueAfter))
				return ru.lastErr
			}
			return ru.requeue()
		}
		err = ru.act(next, obs)
		ru.done[typeOf(next)] = true
		res.Actions = append(res.Actions, next)
		res.Action = next
		if typeOf(next) == typeRemediate {
			return ru.afterRemediation(err)
		}
		if err != nil {
			ru.lastErr = err
			if stop, retErr := ru.afterFailure(next, err); stop {
				return retErr
			}
		}
	}
}

// desired is what a reconcile computed before touching the cluster.
type desired struct {
	rel    *release.Release
	chart  *Chart
	values *values.Result
	post   helmpostrender.PostRenderer
}

// valuesRefs is rel's valuesFrom as values references.
func valuesRefs(rel *release.Release) []values.Reference {
	var out []values.Reference
	for _, ref := range rel.Spec.ValuesFrom {
		out = append(out, values.Reference{
			Kind: values.Kind(ref.Kind), Name: ref.Name, ValuesKey: ref.ValuesKey,
			TargetPath: ref.TargetPath, Literal: ref.Literal, Optional: ref.Optional,
		})
	}
	return out
}

// prepare fetches the chart and composes the values.
func (r *Reconciler) prepare(ctx context.Context, rel *release.Release) (*desired, error) {
	ch, err := r.charts.GetChart(ctx, rel)
	if err != nil {
		return nil, &StageError{Release: refOf(rel), Reason: release.ReasonArtifactFailed, Err: err}
	}
	if ch == nil || ch.Chart == nil || ch.Chart.Metadata == nil {
		return nil, &StageError{Release: refOf(rel), Reason: release.ReasonArtifactFailed, Err: errors.New("chart getter returned no chart")}
	}
	if err := checkVerified(rel, ch); err != nil {
		return nil, &StageError{Release: refOf(rel), Reason: release.ReasonArtifactFailed, Err: err}
	}
	req := values.Request{
		Release:   refOf(rel),
		Namespace: rel.Namespace,
		Files:     ch.ValuesFiles,
		Inline:    inlineValues(rel.Spec.Values),
	}
	req.SecretInline, _ = secretFields(rel)
	req.From = valuesRefs(rel)
	reader := r.values
	if reader == nil {
		if len(req.From) > 0 {
			return nil, &StageError{Release: refOf(rel), Reason: release.ReasonValuesError, Err: errors.New("spec.valuesFrom is set but the reconciler has no values reader (reconcile.Config.Values)")}
		}
		reader = noReader{}
	}
	vals, err := values.Compose(ctx, reader, req)
	if err != nil {
		return nil, &StageError{Release: refOf(rel), Reason: release.ReasonValuesError, Err: err}
	}
	post, err := postRendererOf(rel, r.originLabels)
	if err != nil {
		return nil, &StageError{Release: refOf(rel), Reason: release.ReasonPostRendererError, Err: err}
	}
	return &desired{rel: rel, chart: ch, values: vals, post: post}, nil
}

func stageReason(err error) string {
	var se *StageError
	if errors.As(err, &se) {
		return se.Reason
	}
	return release.ReasonReconciliationFailed
}

// noReader is the values reader of a reconciler without one; Compose
// never calls it for requests without valuesFrom.
type noReader struct{}

func (noReader) Read(context.Context, values.Kind, string, string) (map[string][]byte, error) {
	return nil, values.ErrNotFound
}

// helmConfig returns Helm's configuration for one scope, with the kube
// client wrapped to observe ctx and to wait with kstatus.
func (ru *run) helmConfig(storageNS, targetNS string) (*action.Configuration, error) {
	cfg, err := ru.cluster.HelmConfig(ru.ctx, release.HelmScope{StorageNamespace: storageNS, Namespace: targetNS, ReleaseNamespace: ru.rel.Namespace, ReleaseObjectName: ru.rel.Name, HelmReleaseName: ru.rel.GetReleaseName()})
	if err != nil {
		return nil, fmt.Errorf("release %s on cluster %s: helm configuration: %w", refOf(ru.rel), ru.cluster.Name(), err)
	}
	cfg.KubeClient = &contextClient{Interface: cfg.KubeClient, ctx: ru.ctx, reader: ru.cluster, poll: ru.r.poll, cluster: ru.cluster.Name()}
	cfg.Releases.MaxHistory = ru.rel.GetMaxHistory()
	if cfg.Releases.Driver != nil {
		cfg.Releases.Driver = &cachingDriver{Driver: cfg.Releases.Driver, c: ru.cachedStorage(storageNS)}
	}
	return cfg, nil
}

// handleRequests handles the reset and force annotations.
func (ru *run) handleRequests() {
	st := &ru.rel.Status
	if handleRequest(ru.rel, release.ResetRequestAnnotation, &st.LastHandledResetAt) {
		st.ClearFailures()
		st.RemoveCondition(release.ConditionStalled)
	}
	ru.force = handleRequest(ru.rel, release.ForceRequestAnnotation, &st.LastHandledForceAt)
}

// handleRequest reports whether the request in annotation is to be
// handled now, and records it as handled (Flux's HandleAnnotationRequest):
// its value must equal the reconcile request token, which must not have
// been handled yet, and differ from the last request handled. The value is
// recorded even when it does not count, so that one value is looked at
// once.
func handleRequest(rel *release.Release, annotation string, lastHandled *string) bool {
	ann := rel.GetAnnotations()
	req, ok := ann[annotation]
	if !ok {
		return false
	}
	prev := *lastHandled
	*lastHandled = req
	token, ok := ann[release.ReconcileRequestAnnotation]
	return ok && req == token && token != rel.Status.LastHandledReconcileAt && req != prev
}

// resetFailuresOnChange clears the failure counters when what failed is
// no longer what is asked for: another generation, chart version or
// values, as Flux does.
func (ru *run) resetFailuresOnChange() {
	st := &ru.rel.Status
	if st.LastAttemptedGeneration == 0 && st.LastAttemptedRevision == "" {
		return
	}
	if st.LastAttemptedGeneration != ru.rel.Generation ||
		st.LastAttemptedRevision != ru.d.chart.Chart.Metadata.Version ||
		st.LastAttemptedConfigDigest != ru.d.values.Digest {
		st.ClearFailures()
		st.RemoveCondition(release.ConditionStalled)
	}
}

// checkKubeVersion refuses, before any action, a chart whose kubeVersion
// the cluster does not satisfy, with an error that names the chart, its
// constraint and the cluster's version (Helm's own says neither chart nor
// cluster). Charts without a constraint cost nothing.
func (ru *run) checkKubeVersion() error {
	c := ru.d.chart.Chart
	if c.Metadata == nil || c.Metadata.KubeVersion == "" {
		return nil
	}
	caps, _, err := capabilitiesOf(ru.ctx, ru.cluster, ru.cfg)
	if err != nil {
		return fmt.Errorf("release %s on cluster %s: %w", refOf(ru.rel), ru.cluster.Name(), err)
	}
	if err := checkKubeVersion(c, caps, ru.cluster.Name()); err != nil {
		return fmt.Errorf("release %s on cluster %s: %w", refOf(ru.rel), ru.cluster.Name(), err)
	}
	return nil
}
