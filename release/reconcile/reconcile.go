package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// Warnings are what the source said about the chart that the user
	// must see although it was accepted (source.Chart.Warnings: an index
	// entry without a digest, accepted unverified by a HelmRepository's
	// opt-in). Reconcile and Plan add them to their Warnings and the
	// status's SourceWarnings condition.
	Warnings []string
	// FieldWarnings name the fields of the chart's source objects that
	// are set and not acted on as Flux would (source.FieldWarnings).
	// Reconcile and Plan add them to their Warnings after the Release's
	// own (release.FieldWarnings), and the status's FieldWarnings
	// condition says them too.
	FieldWarnings []string
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
	// OverrideManagers are helm-controller's --override-manager: the
	// field managers (e.g. "kubectl-edit") whose edits drift detection
	// overrides. A live field that the release's manifest does not set
	// is drift, and its correction removes it, when one of these managers
	// owns it (alone or with FieldManager); fields other managers own are
	// theirs. Empty by default, as helm-controller's flag. Passed to
	// drift.Options.OverrideManagers; clusters that detect drift
	// themselves (release.DriftDetector) apply their own rules.
	OverrideManagers []string
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
	// Engine runs Helm's actions for every release of this Reconciler;
	// nil is HelmV3{}, Helm v3 (helm.sh/helm/v3), the default. Package
	// release/helmv4 provides the Helm v4 engine, which acts on
	// spec.install/upgrade/rollback.serverSideApply and spec.waitStrategy
	// (the v3 engine warns of them, see release.HelmV3Engine). Both read
	// and write the same release records, so a release installed by one
	// is upgraded, rolled back and uninstalled by the other.
	Engine Engine
	// EngineFor, when set, chooses the engine of one Release: a
	// migration moves releases from one engine to the other wave by wave
	// (for instance by a label on the Release). A nil result, or a nil
	// EngineFor, is Engine. It must be deterministic for a Release: the
	// engine of one reconcile is chosen once per call.
	EngineFor func(*release.Release) Engine
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
	// overrideManagers is Config.OverrideManagers.
	overrideManagers []string
	originLabels     bool
	// insecureErrors is Config.InsecureHelmErrorText.
	insecureErrors bool
	// engine is Config.Engine (HelmV3{} when nil); engineFor is
	// Config.EngineFor.
	engine    Engine
	engineFor func(*release.Release) Engine
	// crds keeps what Plan decoded of the charts' CRDs.
	crds *crdCache
}

// New returns a Reconciler for cfg.
func New(cfg Config) (*Reconciler, error) {
	if cfg.Charts == nil {
		return nil, errors.New("release: reconciler config: Charts is required")
	}
	r := &Reconciler{charts: cfg.Charts, values: cfg.Values, now: cfg.Now, poll: cfg.PollInterval,
		fieldManager: cfg.FieldManager, overrideManagers: slices.Clone(cfg.OverrideManagers), originLabels: cfg.OriginLabels,
		insecureErrors: cfg.InsecureHelmErrorText, engine: cfg.Engine, engineFor: cfg.EngineFor, crds: &crdCache{}}
	if r.engine == nil {
		r.engine = HelmV3{}
	}
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
	// Actions are the actions run, in order (Last is the last of them).
	Actions []Action
	// State is the state the last decision was taken in.
	State State
	// Next says what to do now, RequeueAfter when: NextDone with the
	// release's interval, NextRequeue with a delay (0: at once) and then
	// the error, if any, that made the work necessary, NextStalled with
	// 0 and always a *StalledError. Reconcile sets both in one place from
	// how the reconcile ended, so they agree with each other and with the
	// error it returns: a nil error never comes with NextStalled, and
	// NextDone never comes with an error.
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
	// Warnings name the fields set but not acted on as Flux would
	// (release.FieldWarnings, then those of the chart's source objects:
	// Chart.FieldWarnings), which the status's FieldWarnings
	// condition says too, and then what the reconcile did that a user
	// may not expect: a remediation that would uninstall a deployed and
	// healthy revision (upgrade.remediation.strategy uninstall, honoured
	// as Flux does).
	Warnings []string
}

// Last returns the last action run, ActionNone if none ran.
func (r *Result) Last() Action {
	if len(r.Actions) == 0 {
		return ActionNone
	}
	return r.Actions[len(r.Actions)-1]
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
	return fmt.Sprintf("release %s on cluster %s: %s", e.Release, e.Cluster, e.detail())
}

// detail is the error without the release and cluster, for messages
// that already name them (a StalledError's, a condition's).
func (e *ActionError) detail() string {
	return fmt.Sprintf("helm %s failed: %v", e.Action, e.Err)
}

// withinRelease is err's text for a message that already names rel's
// release and cluster: an ActionError of the same release and cluster
// loses its "release … on cluster …" prefix, anything else is err.Error().
func withinRelease(err error, release, cluster string) string {
	var ae *ActionError
	if errors.As(err, &ae) && ae.Release == release && ae.Cluster == cluster && err == error(ae) {
		return ae.detail()
	}
	return err.Error()
}

// Unwrap returns Helm's error.
func (e *ActionError) Unwrap() error { return e.Err }

// Sentinels of an OwnershipError (Flux's names): why Uninstall refused.
var (
	// ErrNoLatest: the status history has no snapshot, so nothing shows
	// that the Release installed the Helm release storage holds.
	ErrNoLatest = errors.New("no latest snapshot in the status history")
	// ErrReleaseMismatch: Helm's latest record of the release is not the
	// status history's latest snapshot.
	ErrReleaseMismatch = errors.New("the latest Helm release is not the status history's latest snapshot")
)

// OwnershipError is an Uninstall refused because the Release's status
// does not show that it installed the Helm release its spec names: the
// Helm release is left as it is. It wraps ErrNoLatest or
// ErrReleaseMismatch.
type OwnershipError struct {
	// Release is namespace/name of the Release.
	Release string
	// Cluster is the cluster's name.
	Cluster string
	// HelmRelease is the Helm release's name, StorageNamespace where
	// Helm keeps its records.
	HelmRelease, StorageNamespace string
	// Latest is Helm's latest record of the release
	// (namespace/name.vN).
	Latest string
	// Recorded is the status history's latest snapshot
	// (namespace/name.vN); empty when there is none.
	Recorded string
	// Reason says what mismatched.
	Reason string
	// Err is ErrNoLatest or ErrReleaseMismatch.
	Err error
}

func (e *OwnershipError) Error() string {
	return fmt.Sprintf("release %s on cluster %s: will not uninstall Helm release %s (storage namespace %s): %s: %s",
		e.Release, e.Cluster, e.HelmRelease, e.StorageNamespace, e.Reason, e.Err)
}

// Unwrap returns ErrNoLatest or ErrReleaseMismatch.
func (e *OwnershipError) Unwrap() error { return e.Err }

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
	// lists, when set, is shared by the drift checks of several releases.
	lists liveCache
	// stores caches Helm's storage reads of this run, by storage
	// namespace.
	stores map[string]*storageCache
	// judge is the Release's spec.healthCheckExprs compiled for the
	// waits (nil: none), once judged is set.
	judge  release.Judge
	judged bool
	// eng is the run's engine, once engine chose it.
	eng Engine
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

// decision is what decide chose for the observed state: the action, and
// what that action needs to know about how it was chosen. It is made by
// decide and read by the action; nothing else carries it.
type decision struct {
	// action is the action to run, ActionNone for none.
	action Action
	// usesForce is true when the decision takes up a force request
	// (ForceRequestAnnotation): the request counts once per reconcile.
	usesForce bool
	// completesUninstall is true for an uninstall run again to complete
	// one that left the release 'uninstalling'.
	completesUninstall bool
}

// step is how one action runs: its Flux action type and its code. stepOf
// is the one place that knows every action: adding an action means one
// constant and one case there.
type step struct {
	typ actionType
	run func(ru *run, dec decision, obs *observation) error
}

func stepOf(a Action) (step, bool) {
	switch a {
	case ActionInstall:
		return step{typeRelease, func(ru *run, _ decision, _ *observation) error { return ru.install() }}, true
	case ActionUpgrade:
		return step{typeRelease, func(ru *run, _ decision, _ *observation) error { return ru.upgrade() }}, true
	case ActionTest:
		return step{typeTest, func(ru *run, _ decision, _ *observation) error { return ru.test() }}, true
	case ActionRollback:
		return step{typeRemediate, func(ru *run, _ decision, _ *observation) error { return ru.rollback() }}, true
	case ActionUninstall:
		return step{typeRemediate, func(ru *run, _ decision, _ *observation) error { return ru.uninstallRemediation() }}, true
	case ActionUnlock:
		return step{typeUnlock, func(ru *run, _ decision, obs *observation) error { return ru.unlock(obs.last) }}, true
	case ActionCorrectDrift:
		return step{typeDrift, func(ru *run, _ decision, obs *observation) error { return ru.correctDrift(obs.drift) }}, true
	}
	return step{}, false
}

// outcome is how a reconcile ends: what the caller does next, when, and
// the error Reconcile returns. Every exit of the reconcile returns one,
// made by done, again or stalledOutcome, and Reconcile copies it into the
// Result in one place.
type outcome struct {
	next  Next
	after time.Duration
	err   error
}

// done ends a reconcile with the release as desired; after is its
// interval.
func done(after time.Duration) outcome { return outcome{next: NextDone, after: after} }

// again ends a reconcile with work left: after a delay (0: at once),
// returning err, the failure that made the work necessary, if any.
func again(after time.Duration, err error) outcome {
	return outcome{next: NextRequeue, after: after, err: err}
}

// stalledOutcome ends a reconcile on which no progress is possible.
func stalledOutcome(se *StalledError) outcome { return outcome{next: NextStalled, err: se} }

// Reconcile makes the Helm release of rel on cluster match rel, one step
// of Flux's state machine after another, each action type at most once,
// stopping after a remediation:
//
//	Absent → install; Locked → unlock, then go on; Unmanaged → upgrade;
//	OutOfSync → upgrade; Untested → test; Failed → remediate (rollback or
//	uninstall, while retries remain; RetryOnFailure upgrades again after
//	its interval); Uninstalling (an uninstall left the release
//	'uninstalling') → stalled once retries are used up, else uninstall
//	again, then stalled if that fails too; Drifted → correct (mode
//	enabled) or report (warn); InSync → nothing.
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
	res := &Result{Next: NextDone}
	if rel.Spec.Suspend {
		res.Status = rel.Status
		return res, nil
	}
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: res}
	res.Warnings = ru.fieldWarnings()
	ru.markFieldWarnings(res.Warnings)
	out := ru.reconcile()
	res.Next, res.RequeueAfter = out.next, out.after
	if v, ok := rel.GetAnnotations()[release.ReconcileRequestAnnotation]; ok {
		rel.Status.LastHandledReconcileAt = v
	}
	res.Status = rel.Status
	return res, out.err
}

func (ru *run) reconcile() outcome {
	rel, res := ru.rel, ru.res
	d, err := ru.r.prepare(ru.ctx, rel)
	ru.markSourceFieldWarnings(d, err)
	ru.markSourceVerified(d, err)
	ru.markSourceWarnings(d, err)
	if err != nil {
		ru.markReady(metav1.ConditionFalse, stageReason(err), err.Error())
		return again(0, err)
	}
	ru.d, res.Values = d, d.values
	force := ru.handleRequests()
	ru.resetFailuresOnChange()
	rel.Status.LastAttemptedGeneration = rel.Generation
	rel.Status.LastAttemptedRevision = d.chart.Chart.Metadata.Version
	rel.Status.LastAttemptedRevisionDigest = d.chart.Digest
	rel.Status.LastAttemptedConfigDigest = d.values.Digest

	if err := ru.handleTargetChange(); err != nil {
		return again(0, err)
	}
	if ru.cfg, err = ru.helmConfig(ru.scopeOf(rel.GetStorageNamespace(), rel.GetTargetNamespace(), rel.GetReleaseName())); err != nil {
		ru.markReady(metav1.ConditionFalse, release.ReasonInitFailed, err.Error())
		return again(0, err)
	}
	if err := ru.checkKubeVersion(); err != nil {
		ru.markReady(metav1.ConditionFalse, release.ReasonInitFailed, err.Error())
		return again(0, err)
	}
	ran := map[actionType]bool{}
	var lastErr error // the failure of the last action that failed
	for {
		if err := ru.ctx.Err(); err != nil {
			return again(0, fmt.Errorf("release %s on cluster %s: reconcile cancelled after %v: %w", refOf(rel), ru.cluster.Name(), res.Actions, err))
		}
		obs, err := ru.observe()
		if err != nil {
			ru.markReady(metav1.ConditionFalse, release.ReasonStateError, err.Error())
			return again(0, err)
		}
		res.State = obs.state
		dec, err := ru.decide(obs, force)
		if err != nil {
			return ru.stall(err, lastErr)
		}
		force = force && !dec.usesForce
		if dec.action == ActionNone {
			return ru.finish(obs, lastErr)
		}
		st, ok := stepOf(dec.action)
		if !ok {
			return again(0, fmt.Errorf("release %s: unknown action %s", refOf(rel), dec.action))
		}
		if ran[st.typ] {
			// Flux's rule: an action type runs once per reconcile. With
			// RetryOnFailure the next attempt waits for its interval.
			if retry := ru.activeRetry(); retry != nil && st.typ == typeRelease {
				return ru.retryLater(retry, lastErr)
			}
			return ru.requeue(lastErr)
		}
		start := ru.r.now()
		err = st.run(ru, dec, obs)
		if st.typ == typeRelease {
			rel.Status.LastAttemptedReleaseActionDuration = &metav1.Duration{Duration: ru.r.now().Sub(start)}
		}
		ran[st.typ] = true
		res.Actions = append(res.Actions, dec.action)
		if st.typ == typeRemediate {
			return ru.afterRemediation(dec, err, lastErr)
		}
		if err != nil {
			lastErr = err
			if out, stop := ru.afterFailure(dec.action, err); stop {
				return out
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
	if req.InlineCredits, err = values.CreditsOf(rel.Annotations); err != nil {
		return nil, &StageError{Release: refOf(rel), Reason: release.ReasonValuesError, Err: err}
	}
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
func (ru *run) helmConfig(scope release.HelmScope) (*action.Configuration, error) {
	cfg, err := ru.cluster.HelmConfig(ru.ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("release %s on cluster %s: helm configuration: %w", refOf(ru.rel), ru.cluster.Name(), err)
	}
	judge, err := ru.healthJudge()
	if err != nil {
		return nil, err
	}
	cfg.KubeClient = &contextClient{Interface: cfg.KubeClient, ctx: ru.ctx, reader: ru.cluster, poll: ru.r.poll, cluster: ru.cluster.Name(), judge: judge}
	cfg.Releases.MaxHistory = ru.rel.GetMaxHistory()
	if cfg.Releases.Driver != nil {
		cfg.Releases.Driver = &cachingDriver{Driver: cfg.Releases.Driver, c: ru.cachedStorage(scope.StorageNamespace)}
	}
	return cfg, nil
}

// healthJudge compiles the Release's spec.healthCheckExprs, once per run,
// into the judge of its waits.
func (ru *run) healthJudge() (release.Judge, error) {
	if !ru.judged {
		judge, err := release.HealthJudge(ru.rel.Spec.HealthCheckExprs)
		if err != nil {
			return nil, &StageError{Release: refOf(ru.rel), Reason: release.ReasonReconciliationFailed, Err: err}
		}
		ru.judge, ru.judged = judge, true
	}
	return ru.judge, nil
}

// scopeOf is the scope of Helm release name, its records in storageNS
// and its objects in targetNS, worked on for this run's Release.
func (ru *run) scopeOf(storageNS, targetNS, name string) release.HelmScope {
	return release.HelmScope{StorageNamespace: storageNS, Namespace: targetNS,
		ReleaseNamespace: ru.rel.Namespace, ReleaseObjectName: ru.rel.Name, HelmReleaseName: name}
}

// handleRequests handles the reset and force annotations; it reports
// whether a force request is to be taken up by this reconcile.
func (ru *run) handleRequests() (force bool) {
	st := &ru.rel.Status
	if handleRequest(ru.rel, release.ResetRequestAnnotation, &st.LastHandledResetAt) {
		st.ClearFailures()
		st.RemoveCondition(release.ConditionStalled)
	}
	return handleRequest(ru.rel, release.ForceRequestAnnotation, &st.LastHandledForceAt)
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
