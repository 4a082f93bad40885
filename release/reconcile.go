package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
}

// ChartGetter returns the chart a Release installs. Resolvers of package
// source implement it through an adapter; tests and examples can use
// ChartGetterFunc.
type ChartGetter interface {
	GetChart(ctx context.Context, rel *Release) (*Chart, error)
}

// ChartGetterFunc adapts a function to ChartGetter.
type ChartGetterFunc func(ctx context.Context, rel *Release) (*Chart, error)

// GetChart calls f.
func (f ChartGetterFunc) GetChart(ctx context.Context, rel *Release) (*Chart, error) {
	return f(ctx, rel)
}

// ReconcilerConfig is what a Reconciler needs. Charts is required.
type ReconcilerConfig struct {
	// Charts returns the chart of a Release.
	Charts ChartGetter
	// Values reads the ConfigMaps and Secrets of spec.valuesFrom; it may
	// be nil for releases without valuesFrom.
	Values values.Reader
	// Now is the clock stamped on conditions; default time.Now.
	Now func() time.Time
}

// Reconciler brings one Release on one cluster to its desired state with
// Helm's own actions. It owns the decisions (what to do next); the caller
// owns scheduling (when to call again). It holds no per-release state: all
// it needs is in the Release, its Status and Helm's storage. Safe for
// concurrent use on different releases.
type Reconciler struct {
	charts ChartGetter
	values values.Reader
	now    func() time.Time
}

// NewReconciler returns a Reconciler for cfg.
func NewReconciler(cfg ReconcilerConfig) (*Reconciler, error) {
	if cfg.Charts == nil {
		return nil, errors.New("release: reconciler config: Charts is required")
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	return &Reconciler{charts: cfg.Charts, values: cfg.Values, now: now}, nil
}

// Action is what one reconcile did.
type Action string

const (
	// ActionNone means the release was in sync (or suspended).
	ActionNone Action = "none"
	// ActionInstall means Helm installed the release.
	ActionInstall Action = "install"
	// ActionUpgrade means Helm upgraded the release.
	ActionUpgrade Action = "upgrade"
	// ActionUninstall means Helm uninstalled the release.
	ActionUninstall Action = "uninstall"
)

// Result is the outcome of one reconcile.
type Result struct {
	// Action is what was done.
	Action Action
	// Unlocked is true when a release stuck in a pending-* state (a crash
	// mid-action) was marked failed before the action.
	Unlocked bool
	// Helm is Helm's latest release record after the action; nil when
	// there is none (never installed, or uninstalled).
	Helm *helmrelease.Release
	// Values are the composed values the release was (or is) installed
	// with, with their provenance; nil after an uninstall.
	Values *values.Result
	// Status is the Release's new status; it is also written to the
	// Release passed in.
	Status Status
	// RequeueAfter is when the caller should reconcile again:
	// spec.interval after success, 0 for "not needed".
	RequeueAfter time.Duration
}

// desired is what a reconcile computed before touching the cluster.
type desired struct {
	rel    *Release
	chart  *Chart
	values *values.Result
}

// Reconcile makes the Helm release of rel on cluster match rel: install it
// when absent, upgrade it when the chart (name or version) or the values
// changed or the last action failed, nothing when in sync. A release left
// pending by a crash is first marked failed (unlocked). rel.Status is
// updated with conditions (Ready, Released), a history snapshot and
// counters, and returned in the Result; a failed action returns both the
// Result and an error.
func (r *Reconciler) Reconcile(ctx context.Context, cluster HelmConfigurer, rel *Release) (*Result, error) {
	if rel.Spec.Suspend {
		return &Result{Action: ActionNone, Status: rel.Status}, nil
	}
	d, err := r.prepare(ctx, rel)
	if err != nil {
		return r.fail(rel, ActionNone, err)
	}
	cfg, err := cluster.HelmConfig(ctx, HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace()})
	if err != nil {
		return r.fail(rel, ActionNone, fmt.Errorf("release %s: helm configuration: %w", rel.ref(), err))
	}
	cfg.Releases.MaxHistory = rel.GetMaxHistory()

	res := &Result{Values: d.values}
	last, err := cfg.Releases.Last(rel.GetReleaseName())
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return r.fail(rel, ActionNone, fmt.Errorf("release %s: read helm storage: %w", rel.ref(), err))
	}
	if last != nil && last.Info.Status.IsPending() {
		if err := unlock(cfg, last); err != nil {
			return r.fail(rel, ActionNone, fmt.Errorf("release %s: unlock %s: %w", rel.ref(), last.Info.Status, err))
		}
		res.Unlocked = true
	}

	switch {
	case last == nil || last.Info.Status == helmrelease.StatusUninstalled:
		res.Action = ActionInstall
		res.Helm, err = r.install(ctx, cfg, d)
	case needsUpgrade(last, d):
		res.Action = ActionUpgrade
		res.Helm, err = r.upgrade(ctx, cfg, d)
	default:
		res.Action = ActionNone
		res.Helm = last
	}
	r.record(rel, d, res, err)
	res.Status = rel.Status
	if err != nil {
		return res, err
	}
	res.RequeueAfter = rel.GetRequeueAfter()
	return res, nil
}

// Uninstall removes the Helm release of rel from cluster with
// spec.uninstall's settings. A release that is already absent is not an
// error. A suspended release is left alone, as Flux leaves it.
func (r *Reconciler) Uninstall(ctx context.Context, cluster HelmConfigurer, rel *Release) (*Result, error) {
	if rel.Spec.Suspend {
		return &Result{Action: ActionNone, Status: rel.Status}, nil
	}
	cfg, err := cluster.HelmConfig(ctx, HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace()})
	if err != nil {
		return r.fail(rel, ActionUninstall, fmt.Errorf("release %s: helm configuration: %w", rel.ref(), err))
	}
	spec := rel.GetUninstall()
	u := action.NewUninstall(cfg)
	u.KeepHistory = spec.KeepHistory
	u.DisableHooks = spec.DisableHooks
	u.Wait = !spec.DisableWait
	u.Timeout = actionTimeout(spec.Timeout, rel)
	u.DeletionPropagation = spec.GetDeletionPropagation()
	_, err = u.Run(rel.GetReleaseName())
	if errors.Is(err, driver.ErrReleaseNotFound) {
		err = nil
	}
	now := metav1.NewTime(r.now())
	res := &Result{Action: ActionUninstall}
	if err != nil {
		err = fmt.Errorf("release %s: helm uninstall: %w", rel.ref(), err)
		rel.Status.SetCondition(metav1.Condition{Type: ConditionReleased, Status: metav1.ConditionFalse, Reason: ReasonUninstallFailed, Message: err.Error(), ObservedGeneration: rel.Generation, LastTransitionTime: now})
		rel.Status.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonUninstallFailed, Message: err.Error(), ObservedGeneration: rel.Generation, LastTransitionTime: now})
		res.Status = rel.Status
		return res, err
	}
	msg := fmt.Sprintf("Helm uninstall succeeded for release %s/%s", rel.GetStorageNamespace(), rel.GetReleaseName())
	rel.Status.SetCondition(metav1.Condition{Type: ConditionReleased, Status: metav1.ConditionFalse, Reason: ReasonUninstallSucceeded, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
	rel.Status.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonUninstallSucceeded, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
	if latest := rel.Status.History.Latest(); latest != nil && !spec.KeepHistory {
		rel.Status.ClearHistory()
	} else if latest != nil {
		latest.Status = SnapshotStatusUninstalled
		latest.Deleted = now
	}
	res.Status = rel.Status
	return res, nil
}

// prepare fetches the chart and composes the values.
func (r *Reconciler) prepare(ctx context.Context, rel *Release) (*desired, error) {
	ch, err := r.charts.GetChart(ctx, rel)
	if err != nil {
		return nil, &StageError{Release: rel.ref(), Reason: ReasonArtifactFailed, Err: err}
	}
	if ch == nil || ch.Chart == nil || ch.Chart.Metadata == nil {
		return nil, &StageError{Release: rel.ref(), Reason: ReasonArtifactFailed, Err: errors.New("chart getter returned no chart")}
	}
	req := values.Request{
		Release:   rel.ref(),
		Namespace: rel.Namespace,
		Files:     ch.ValuesFiles,
		Inline:    rel.Spec.Values,
	}
	for _, ref := range rel.Spec.ValuesFrom {
		req.From = append(req.From, values.Reference{
			Kind: values.Kind(ref.Kind), Name: ref.Name, ValuesKey: ref.ValuesKey,
			TargetPath: ref.TargetPath, Optional: ref.Optional,
		})
	}
	reader := r.values
	if reader == nil {
		if len(req.From) > 0 {
			return nil, &StageError{Release: rel.ref(), Reason: ReasonValuesError, Err: errors.New("spec.valuesFrom is set but the reconciler has no values reader (ReconcilerConfig.Values)")}
		}
		reader = noReader{}
	}
	vals, err := values.Compose(ctx, reader, req)
	if err != nil {
		return nil, &StageError{Release: rel.ref(), Reason: ReasonValuesError, Err: err}
	}
	return &desired{rel: rel, chart: ch, values: vals}, nil
}

// noReader is the values reader of a reconciler without one; Compose
// never calls it for requests without valuesFrom.
type noReader struct{}

func (noReader) Read(context.Context, values.Kind, string, string) (map[string][]byte, error) {
	return nil, values.ErrNotFound
}

// needsUpgrade reports whether the stored release differs from what is
// desired: another chart name or version, other values, or a last action
// that did not end deployed.
func needsUpgrade(last *helmrelease.Release, d *desired) bool {
	if last.Info.Status != helmrelease.StatusDeployed {
		return true
	}
	md := d.chart.Chart.Metadata
	if last.Chart == nil || last.Chart.Metadata == nil || last.Chart.Metadata.Name != md.Name || last.Chart.Metadata.Version != md.Version {
		return true
	}
	return values.Digest(last.Config) != d.values.Digest
}

// unlock marks a release stuck in pending-install/upgrade/rollback as
// failed, so that Helm accepts the next action, as Flux does.
func unlock(cfg *action.Configuration, last *helmrelease.Release) error {
	was := last.Info.Status
	last.SetStatus(helmrelease.StatusFailed, fmt.Sprintf("Release unlocked from stale '%s' state", was))
	return cfg.Releases.Update(last)
}

func (r *Reconciler) install(ctx context.Context, cfg *action.Configuration, d *desired) (*helmrelease.Release, error) {
	rel := d.rel
	spec := rel.GetInstall()
	i := action.NewInstall(cfg)
	i.ReleaseName = rel.GetReleaseName()
	i.Namespace = rel.GetTargetNamespace()
	i.Timeout = actionTimeout(spec.Timeout, rel)
	i.Wait = !spec.DisableWait
	i.WaitForJobs = !spec.DisableWaitForJobs
	i.DisableHooks = spec.DisableHooks
	i.DisableOpenAPIValidation = spec.DisableOpenAPIValidation
	i.SkipSchemaValidation = spec.DisableSchemaValidation
	i.Replace = spec.Replace
	i.CreateNamespace = spec.CreateNamespace
	// Helm creates the chart's crds/ on install unless told to skip them;
	// CreateReplace of existing CRDs is the full reconciler's job.
	i.SkipCRDs = spec.SkipCRDs || spec.CRDs == Skip
	return i.RunWithContext(ctx, d.chart.Chart, d.values.Values)
}

func (r *Reconciler) upgrade(ctx context.Context, cfg *action.Configuration, d *desired) (*helmrelease.Release, error) {
	rel := d.rel
	spec := rel.GetUpgrade()
	u := action.NewUpgrade(cfg)
	u.Namespace = rel.GetTargetNamespace()
	u.Timeout = actionTimeout(spec.Timeout, rel)
	u.Wait = !spec.DisableWait
	u.WaitForJobs = !spec.DisableWaitForJobs
	u.DisableHooks = spec.DisableHooks
	u.DisableOpenAPIValidation = spec.DisableOpenAPIValidation
	u.SkipSchemaValidation = spec.DisableSchemaValidation
	u.Force = spec.Force
	u.CleanupOnFail = spec.CleanupOnFail
	u.MaxHistory = rel.GetMaxHistory()
	u.ResetValues = !spec.PreserveValues
	u.ReuseValues = spec.PreserveValues
	return u.RunWithContext(ctx, rel.GetReleaseName(), d.chart.Chart, d.values.Values)
}

// actionTimeout is the action's own timeout, else spec.timeout.
func actionTimeout(t *metav1.Duration, rel *Release) time.Duration {
	if t != nil {
		return t.Duration
	}
	return rel.GetTimeout().Duration
}

// record writes the outcome of an install or upgrade into rel.Status.
func (r *Reconciler) record(rel *Release, d *desired, res *Result, actionErr error) {
	now := metav1.NewTime(r.now())
	st := &rel.Status
	md := d.chart.Chart.Metadata
	st.ObservedGeneration = rel.Generation
	st.LastAttemptedGeneration = rel.Generation
	st.StorageNamespace = rel.GetStorageNamespace()
	st.LastAttemptedRevision = md.Version
	st.LastAttemptedRevisionDigest = d.chart.Digest
	st.LastAttemptedConfigDigest = d.values.Digest
	if res.Helm != nil {
		st.History = upsertSnapshot(st.History, snapshotOf(res.Helm, d.chart.Digest))
	}
	if res.Action == ActionNone {
		msg := fmt.Sprintf("Helm release %s is in sync with chart %s@%s", fullName(res.Helm), md.Name, md.Version)
		st.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReconciliationSucceeded, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
		return
	}
	if res.Action == ActionInstall {
		st.LastAttemptedReleaseAction = ReleaseActionInstall
	} else {
		st.LastAttemptedReleaseAction = ReleaseActionUpgrade
	}
	verb, okReason, failReason := "install", ReasonInstallSucceeded, ReasonInstallFailed
	if res.Action == ActionUpgrade {
		verb, okReason, failReason = "upgrade", ReasonUpgradeSucceeded, ReasonUpgradeFailed
	}
	if actionErr != nil {
		st.Failures++
		if res.Action == ActionInstall {
			st.InstallFailures++
		} else {
			st.UpgradeFailures++
		}
		msg := fmt.Sprintf("Helm %s failed for release %s/%s with chart %s@%s: %v", verb, rel.GetStorageNamespace(), rel.GetReleaseName(), md.Name, md.Version, actionErr)
		st.SetCondition(metav1.Condition{Type: ConditionReleased, Status: metav1.ConditionFalse, Reason: failReason, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
		st.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: failReason, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
		return
	}
	msg := fmt.Sprintf("Helm %s succeeded for release %s with chart %s@%s", verb, fullName(res.Helm), md.Name, md.Version)
	st.SetCondition(metav1.Condition{Type: ConditionReleased, Status: metav1.ConditionTrue, Reason: okReason, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
	st.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: okReason, Message: msg, ObservedGeneration: rel.Generation, LastTransitionTime: now})
}

// fail records an error that stopped the reconcile before Helm ran.
func (r *Reconciler) fail(rel *Release, a Action, err error) (*Result, error) {
	reason := ReasonReconciliationFailed
	var se *StageError
	if errors.As(err, &se) {
		reason = se.Reason
	}
	rel.Status.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: err.Error(), ObservedGeneration: rel.Generation, LastTransitionTime: metav1.NewTime(r.now())})
	return &Result{Action: a, Status: rel.Status}, err
}

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

func (in *Release) ref() string { return in.Namespace + "/" + in.Name }

func fullName(h *helmrelease.Release) string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s.v%d", h.Namespace, h.Name, h.Version)
}

// snapshotOf turns Helm's release record into a history snapshot.
func snapshotOf(h *helmrelease.Release, ociDigest string) *Snapshot {
	s := &Snapshot{
		Name: h.Name, Namespace: h.Namespace, Version: h.Version,
		Status:       h.Info.Status.String(),
		ConfigDigest: values.Digest(h.Config),
		OCIDigest:    ociDigest,
	}
	if h.Chart != nil && h.Chart.Metadata != nil {
		s.ChartName, s.ChartVersion, s.AppVersion = h.Chart.Metadata.Name, h.Chart.Metadata.Version, h.Chart.Metadata.AppVersion
	}
	if h.Info != nil {
		s.FirstDeployed = metav1.NewTime(h.Info.FirstDeployed.Time)
		s.LastDeployed = metav1.NewTime(h.Info.LastDeployed.Time)
		if !h.Info.Deleted.IsZero() {
			s.Deleted = metav1.NewTime(h.Info.Deleted.Time)
		}
	}
	if data, err := json.Marshal(h); err == nil {
		sum := sha256.Sum256(data)
		s.Digest = "sha256:" + hex.EncodeToString(sum[:])
	}
	return s
}

// upsertSnapshot puts s at the head of the history, replacing the
// snapshot of the same Helm revision, and marks older deployed ones
// superseded.
func upsertSnapshot(h Snapshots, s *Snapshot) Snapshots {
	out := Snapshots{s}
	for _, old := range h {
		if old.Name == s.Name && old.Namespace == s.Namespace && old.Version == s.Version {
			continue
		}
		if old.Status == SnapshotStatusDeployed && s.Status == SnapshotStatusDeployed {
			old.Status = SnapshotStatusSuperseded
		}
		out = append(out, old)
	}
	return out
}
