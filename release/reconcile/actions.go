package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

const defaultRetryInterval = 5 * time.Minute

func valuesDigest(v map[string]any) string { return values.Digest(v) }

func (ru *run) actionErr(a Action, err error) error {
	return &ActionError{Release: refOf(ru.rel), Cluster: ru.cluster.Name(), Action: a, Err: err}
}

// released records the outcome of an install or upgrade, as Flux's
// install and upgrade actions do: the records the action wrote join the
// history; a failure counts in status.failures, and against the action's
// retries only when it wrote a release record (an action that left
// storage untouched has nothing to remediate and is simply tried again);
// a success clears the counters of a RetryOnFailure strategy and, with
// tests enabled, marks the tests as awaited. Ready is then summarized.
func (ru *run) released(a Action, wrote bool, err error) error {
	rel, st := ru.rel, &ru.rel.Status
	md := ru.d.chart.Chart.Metadata
	if wrote {
		ru.observeLatest()
		ru.markAction(a)
	}
	st.StorageNamespace = rel.GetStorageNamespace()
	okReason, failReason := release.ReasonInstallSucceeded, release.ReasonInstallFailed
	rem := rel.GetInstall().GetRemediation()
	strategy := rel.GetInstall().GetStrategy()
	if a == ActionUpgrade {
		okReason, failReason = release.ReasonUpgradeSucceeded, release.ReasonUpgradeFailed
		rem = rel.GetUpgrade().GetRemediation()
		strategy = rel.GetUpgrade().GetStrategy()
	}
	defer rel.SummarizeReady()
	if err != nil {
		// An attempt the caller cancelled is not the release's failure: it
		// takes nothing from the retries, so the next reconcile continues.
		if ru.ctx.Err() == nil {
			st.Failures++
			if wrote {
				rem.IncrementFailureCount(st)
			}
		}
		msg := fmt.Sprintf("Helm %s failed for release %s/%s with chart %s@%s: %v", a, rel.GetTargetNamespace(), rel.GetReleaseName(), md.Name, md.Version, err)
		ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, failReason, msg)
		return ru.actionErr(a, err)
	}
	msg := fmt.Sprintf("Helm %s succeeded for release %s with chart %s@%s", a, fullName(ru.res.Helm), md.Name, md.Version)
	ru.setCondition(release.ConditionReleased, metav1.ConditionTrue, okReason, msg)
	if cur := st.History.Latest(); rel.GetTest().Enable && cur != nil && !cur.HasBeenTested() {
		ru.setCondition(release.ConditionTestSuccess, metav1.ConditionUnknown, "AwaitingTests",
			fmt.Sprintf("Helm release %s with chart %s is awaiting tests", cur.FullReleaseName(), cur.VersionedChartName()))
	}
	if strategy.Name == release.ActionStrategyRetryOnFailure {
		// Failures matter only while the release is failed.
		st.ClearFailures()
	}
	st.ObservedPostRenderersDigest = postRenderersDigest(rel)
	st.ObservedCommonMetadataDigest = commonMetadataDigest(rel)
	return nil
}

// beginRelease prepares the status for an install or upgrade, as Flux
// does: it records the attempt, and drops the test and remediation
// results of what came before. It returns the latest revision in storage
// so that the outcome can tell whether the action wrote a record.
func (ru *run) beginRelease(a Action) int {
	st := &ru.rel.Status
	st.LastAttemptedReleaseAction = release.ReleaseActionInstall
	if a == ActionUpgrade {
		st.LastAttemptedReleaseAction = release.ReleaseActionUpgrade
	}
	st.RemoveCondition(release.ConditionTestSuccess)
	st.RemoveCondition(release.ConditionRemediated)
	return ru.latestVersion()
}

// latestVersion is the latest revision of the release in storage, 0 if
// none (or storage cannot be read).
func (ru *run) latestVersion() int {
	last, err := ru.lastRecord()
	if err != nil || last == nil {
		return 0
	}
	return last.Version
}

func (ru *run) install() error {
	rel := ru.rel
	spec := rel.GetInstall()
	o := InstallOptions{WaitOptions: ru.waitOptions(spec.GetTimeout(rel.GetTimeout()).Duration, spec.DisableWait, spec.DisableWaitForJobs),
		ReleaseName: rel.GetReleaseName(), Namespace: rel.GetTargetNamespace(),
		DisableHooks: spec.DisableHooks, DisableOpenAPIValidation: spec.DisableOpenAPIValidation,
		SkipSchemaValidation: spec.DisableSchemaValidation, Replace: spec.Replace, CreateNamespace: spec.CreateNamespace,
		PostRenderer: ru.d.post, PostRenderStrategy: rel.Spec.PostRenderStrategy, ServerSideApply: spec.ServerSideApply,
		TakeOwnership: !spec.DisableTakeOwnership}
	before := ru.beginRelease(ActionInstall)
	// An install starts a new history: nothing before it is a rollback
	// target (Flux).
	rel.Status.ClearHistory()
	switch spec.GetCRDsPolicy() {
	case release.Skip:
		o.SkipCRDs = true
	case release.CreateReplace:
		// Helm only creates; helmfleet creates or replaces them first.
		o.SkipCRDs = true
		if err := ru.applyCRDs(true); err != nil {
			return ru.released(ActionInstall, false, err)
		}
	}
	err := ru.engine().Install(ru.ctx, ru.cfg, ru.d.chart.Chart, ru.d.values.Values, o)
	return ru.released(ActionInstall, ru.latestVersion() > before, ru.helmErr("install", err))
}

func (ru *run) upgrade() error {
	rel := ru.rel
	spec := rel.GetUpgrade()
	o := UpgradeOptions{WaitOptions: ru.waitOptions(spec.GetTimeout(rel.GetTimeout()).Duration, spec.DisableWait, spec.DisableWaitForJobs),
		Namespace: rel.GetTargetNamespace(), DisableHooks: spec.DisableHooks, DisableOpenAPIValidation: spec.DisableOpenAPIValidation,
		SkipSchemaValidation: spec.DisableSchemaValidation, Force: spec.Force, CleanupOnFail: spec.CleanupOnFail,
		MaxHistory: rel.GetMaxHistory(), ResetValues: !spec.PreserveValues, ReuseValues: spec.PreserveValues,
		PostRenderer: ru.d.post, PostRenderStrategy: rel.Spec.PostRenderStrategy, ServerSideApply: spec.ServerSideApply,
		TakeOwnership: !spec.DisableTakeOwnership}
	before := ru.beginRelease(ActionUpgrade)
	// Helm never touches CRDs on upgrade; Flux (and helmfleet) create
	// missing ones (Create) or also replace existing ones (CreateReplace).
	if policy := spec.GetCRDsPolicy(); policy != release.Skip {
		if err := ru.applyCRDs(policy == release.CreateReplace); err != nil {
			return ru.released(ActionUpgrade, false, err)
		}
	}
	err := ru.engine().Upgrade(ru.ctx, ru.cfg, rel.GetReleaseName(), ru.d.chart.Chart, ru.d.values.Values, o)
	return ru.released(ActionUpgrade, ru.latestVersion() > before, ru.helmErr("upgrade", err))
}

// applyCRDs creates the chart's CRDs that are missing and, with replace,
// replaces the existing ones. It writes through Helm's kube client, so a
// cluster that spreads objects over members (a Distributor) spreads the
// CRDs too.
func (ru *run) applyCRDs(replace bool) error {
	kc := ru.cfg.KubeClient
	// Only the CRDs of enabled subcharts: Helm's install drops the
	// disabled dependencies (conditions and tags) before it reads the
	// CRDs, and so does this, with Helm's own function, which Helm's
	// action runs on the same chart right after.
	if err := chartutil.ProcessDependenciesWithMerge(ru.d.chart.Chart, ru.d.values.Values); err != nil {
		return fmt.Errorf("crds: dependencies: %w", ru.helmErr("crds", err))
	}
	for _, crd := range ru.d.chart.Chart.CRDObjects() {
		rl, err := kc.Build(bytes.NewReader(crd.File.Data), false)
		if err != nil {
			return fmt.Errorf("crds: %s: %w", crd.Filename, err)
		}
		for _, info := range rl {
			one := kube.ResourceList{info}
			_, err := kc.Create(one)
			switch {
			case err == nil:
			case apierrors.IsAlreadyExists(err) && replace:
				if _, err := kc.Update(one, one, true); err != nil {
					return fmt.Errorf("crds: %s: replace %s: %w", crd.Filename, info.Name, err)
				}
			case apierrors.IsAlreadyExists(err):
			default:
				return fmt.Errorf("crds: %s: create %s: %w", crd.Filename, info.Name, err)
			}
		}
	}
	return nil
}

func (ru *run) test() error {
	rel, st := ru.rel, &ru.rel.Status
	spec := rel.GetTest()
	o := TestOptions{Namespace: rel.GetTargetNamespace(), Timeout: spec.GetTimeout(rel.GetTimeout()).Duration, Filters: testFilters(spec.Filters)}
	defer rel.SummarizeReady()
	err := ru.helmErr("test", ru.engine().Test(ru.ctx, ru.cfg, rel.GetReleaseName(), o))
	ru.observeLatest()
	cur := st.History.Latest()
	if err != nil {
		name := fullName(ru.res.Helm)
		if cur != nil {
			name = cur.FullReleaseName() + " with chart " + cur.VersionedChartName()
		}
		msg := fmt.Sprintf("Helm test failed for release %s: %v", name, err)
		ru.setCondition(release.ConditionTestSuccess, metav1.ConditionFalse, release.ReasonTestFailed, msg)
		if ru.ctx.Err() != nil {
			// A cancelled test is not a failure of the release.
			return ru.actionErr(ActionTest, err)
		}
		st.Failures++
		if !cur.HasBeenTested() {
			// No result was recorded: the tests are run again, and the
			// failure counts against no retries (Flux).
			return ru.actionErr(ActionTest, err)
		}
		ignore := spec.IgnoreFailures
		if rem := rel.GetActiveRemediation(); rem != nil {
			ignore = rem.MustIgnoreTestFailures(ignore)
			if !ignore {
				rem.IncrementFailureCount(st)
			}
		}
		if ignore {
			return nil
		}
		return ru.actionErr(ActionTest, err)
	}
	if cur == nil {
		return ru.actionErr(ActionTest, errors.New("no release recorded in the status history to take the results of"))
	}
	if cur.TestHooks == nil {
		// A chart without tests (or all filtered out) has been tested.
		cur.SetTestHooks(map[string]*release.TestHookStatus{})
	}
	hooks := "no test hooks"
	if n := len(cur.GetTestHooks()); n > 0 {
		hooks = fmt.Sprintf("%d test hook(s) completed successfully", n)
	}
	ru.setCondition(release.ConditionTestSuccess, metav1.ConditionTrue, release.ReasonTestSucceeded,
		fmt.Sprintf("Helm test succeeded for release %s with chart %s: %s", cur.FullReleaseName(), cur.VersionedChartName(), hooks))
	return nil
}

func (ru *run) rollback() error {
	rel, st := ru.rel, &ru.rel.Status
	prev := st.History.Previous(ru.ignoreTestFailures())
	spec := rel.GetRollback()
	o := RollbackOptions{WaitOptions: ru.waitOptions(spec.GetTimeout(rel.GetTimeout()).Duration, spec.DisableWait, spec.DisableWaitForJobs),
		Version: prev.Version, DisableHooks: spec.DisableHooks, Recreate: spec.Recreate, Force: spec.Force,
		CleanupOnFail: spec.CleanupOnFail, MaxHistory: rel.GetMaxHistory(), ServerSideApply: spec.ServerSideApply}
	defer rel.SummarizeReady()
	before := ru.latestVersion()
	err := ru.helmErr("rollback", ru.engine().Rollback(ru.ctx, ru.cfg, rel.GetReleaseName(), o))
	ru.observeLatest()
	if cur := st.History.Latest(); cur != nil && cur.Version > before {
		ru.markAction(ActionRollback)
	}
	if err != nil {
		msg := fmt.Sprintf("Helm rollback to previous release %s with chart %s failed: %v", prev.FullReleaseName(), prev.VersionedChartName(), err)
		st.Failures++
		ru.setCondition(release.ConditionRemediated, metav1.ConditionFalse, release.ReasonRollbackFailed, msg)
		return ru.actionErr(ActionRollback, err)
	}
	msg := fmt.Sprintf("Helm rollback to previous release %s with chart %s succeeded", prev.FullReleaseName(), prev.VersionedChartName())
	ru.setCondition(release.ConditionRemediated, metav1.ConditionTrue, release.ReasonRollbackSucceeded, msg)
	return nil
}

func (ru *run) uninstallRemediation() error {
	rel := ru.rel
	name := fullName(ru.res.Helm)
	err := ru.uninstall(ru.cfg, rel.GetReleaseName())
	if err == nil {
		err = ru.uninstallRecorded()
	}
	ru.observeLatest()
	if err != nil {
		msg := fmt.Sprintf("Helm uninstall of release %s failed: %v", name, err)
		rel.Status.Failures++
		ru.setCondition(release.ConditionRemediated, metav1.ConditionFalse, release.ReasonUninstallFailed, msg)
		return ru.actionErr(ActionUninstall, err)
	}
	if cur := rel.Status.History.Latest(); cur != nil && !rel.GetUninstall().KeepHistory {
		cur.Status = release.SnapshotStatusUninstalled
	}
	ru.setCondition(release.ConditionRemediated, metav1.ConditionTrue, release.ReasonUninstallSucceeded, fmt.Sprintf("Helm uninstall of release %s succeeded", name))
	return nil
}

// errNoStorageUpdate is an uninstall that Helm reported done while the
// release record says otherwise: Helm only logs a failed write of the
// uninstalled status (Flux's ErrNoStorageUpdate).
var errNoStorageUpdate = errors.New("uninstall completed, but the release record in storage was not updated")

// uninstallRecorded checks, after an uninstall that kept the history,
// that storage records the release as uninstalled.
func (ru *run) uninstallRecorded() error {
	if !ru.rel.GetUninstall().KeepHistory {
		return nil
	}
	last, err := ru.lastRecord()
	if err != nil || last == nil || last.Info == nil {
		return err
	}
	if last.Info.Status != helmrelease.StatusUninstalled {
		return fmt.Errorf("%w: %s is %s", errNoStorageUpdate, fullName(last), last.Info.Status)
	}
	return nil
}

// uninstall runs Helm's uninstall of name with spec.uninstall's settings;
// an absent release is not an error.
func (ru *run) uninstall(cfg *action.Configuration, name string) error {
	err := ru.helmUninstall(cfg, name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	return ru.helmErr("uninstall", err)
}

// helmUninstall runs Helm's uninstall of name with spec.uninstall's
// settings and returns Helm's error as it is (callers that do not
// withhold it only match it).
func (ru *run) helmUninstall(cfg *action.Configuration, name string) error {
	spec := ru.rel.GetUninstall()
	o := UninstallOptions{WaitOptions: ru.waitOptions(spec.GetTimeout(ru.rel.GetTimeout()).Duration, spec.DisableWait, true),
		KeepHistory: spec.KeepHistory, DisableHooks: spec.DisableHooks, DeletionPropagation: spec.GetDeletionPropagation()}
	return ru.engine().Uninstall(ru.ctx, cfg, name, o)
}

func (ru *run) unlock(last *helmrelease.Release) error {
	defer ru.rel.SummarizeReady()
	was := last.Info.Status
	last.SetStatus(helmrelease.StatusFailed, fmt.Sprintf("Release unlocked from stale '%s' state", was))
	if err := ru.cfg.Releases.Update(last); err != nil {
		ru.rel.Status.Failures++
		ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonPendingRelease,
			fmt.Sprintf("Unlock of Helm release %s from stale '%s' state failed: %v", fullName(last), was, err))
		return ru.actionErr(ActionUnlock, fmt.Errorf("unlock %s: %w", fullName(last), err))
	}
	ru.res.Unlocked = true
	ru.res.Helm = last
	// As Flux does, the history only records the unlock of a revision it
	// already observed; a pending release made by someone else stays out
	// of it, so the next state is Unmanaged and the release is adopted.
	for i, s := range ru.rel.Status.History {
		if s.Name == last.Name && s.Namespace == last.Namespace && s.Version == last.Version {
			snap := snapshotOf(last, s.OCIDigest)
			if snap.TestHooks == nil {
				snap.TestHooks = s.TestHooks
			}
			ru.rel.Status.History[i] = snap
		}
	}
	ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonPendingRelease,
		fmt.Sprintf("Unlocked Helm release %s from stale '%s' state", fullName(last), was))
	return nil
}

// handleTargetChange uninstalls the release recorded in the history when
// the Release now names another release name, target namespace, storage
// namespace or chart (Flux's rule), so the next step installs afresh.
func (ru *run) handleTargetChange() error {
	rel, st := ru.rel, &ru.rel.Status
	cur := st.History.Latest()
	if cur == nil {
		return nil
	}
	oldStorage := st.StorageNamespace
	if oldStorage == "" {
		oldStorage = rel.GetStorageNamespace()
	}
	// In Flux's order (ReleaseTargetChanged), so that the message names
	// what Flux's reason names: a new target namespace also changes the
	// default release name, and it is the namespace that changed.
	var why string
	switch {
	case oldStorage != rel.GetStorageNamespace():
		why = fmt.Sprintf("storage namespace changed from %s to %s", oldStorage, rel.GetStorageNamespace())
	case cur.Namespace != rel.GetTargetNamespace():
		why = fmt.Sprintf("target namespace changed from %s to %s", cur.Namespace, rel.GetTargetNamespace())
	case cur.Name != rel.GetReleaseName():
		why = fmt.Sprintf("release name changed from %s to %s", cur.Name, rel.GetReleaseName())
	case cur.ChartName != ru.d.chart.Chart.Metadata.Name && rel.GetUpgrade().GetChartNameChangeStrategy() != release.ChartNameChangeInPlaceUpdate:
		why = fmt.Sprintf("chart changed from %s to %s", cur.ChartName, ru.d.chart.Chart.Metadata.Name)
	default:
		return nil
	}
	cfg, err := ru.helmConfig(ru.scopeOf(oldStorage, cur.Namespace, cur.Name))
	if err == nil {
		err = ru.uninstall(cfg, cur.Name)
	}
	ru.res.Actions = append(ru.res.Actions, ActionUninstall)
	if err != nil {
		msg := fmt.Sprintf("%s: Helm uninstall of %s failed: %v", why, cur.FullReleaseName(), err)
		ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallFailed, msg)
		ru.markReady(metav1.ConditionFalse, release.ReasonUninstallFailed, msg)
		return ru.actionErr(ActionUninstall, err)
	}
	st.ClearHistory()
	st.ClearFailures()
	st.StorageNamespace = rel.GetStorageNamespace()
	ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallSucceeded, fmt.Sprintf("%s: uninstalled %s", why, cur.FullReleaseName()))
	return nil
}

// detectDrift compares the manifest of last with the live objects, one
// List per kind and namespace.
func (ru *run) detectDrift(last *helmrelease.Release) (*drift.Report, error) {
	report, err := ru.driftReport(last)
	if err != nil {
		return nil, err
	}
	if report.Drifted() {
		ru.setCondition(release.ConditionDrifted, metav1.ConditionTrue, release.ReasonDriftDetected,
			fmt.Sprintf("Cluster state of release %s has drifted from the desired state:\n%s", fullName(last), report.String()))
	}
	return report, nil
}

func (ru *run) driftReport(last *helmrelease.Release) (*drift.Report, error) {
	report, err := ru.detectReport(last)
	if err == nil {
		// What the report shows people (a status condition, the caller's
		// print) never holds a value that came from a Secret.
		ru.secretMask().report(report)
	}
	return report, err
}

// detectReport compares the release's manifest with the live objects.
func (ru *run) detectReport(last *helmrelease.Release) (*drift.Report, error) {
	dd := ru.rel.GetDriftDetection()
	rules := make([]drift.IgnoreRule, 0, len(dd.Ignore))
	for _, ig := range dd.Ignore {
		r := drift.IgnoreRule{Paths: ig.Paths}
		if ig.Target != nil {
			t := ig.Target
			r.Target = &drift.Selector{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name,
				Namespace: t.Namespace, LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		rules = append(rules, r)
	}
	if dd, ok := ru.cluster.(release.DriftDetector); ok {
		report, err := dd.DetectDrift(ru.ctx, ru.scopeOf(ru.rel.GetStorageNamespace(), last.Namespace, last.Name), last.Manifest, rules, drift.Mode(ru.rel.GetDriftDetection().GetMode()))
		if err != nil {
			return nil, fmt.Errorf("release %s: drift: %w", refOf(ru.rel), ru.helmErr("drift", err))
		}
		return report, nil
	}
	// As helm-controller v1.6 configures its Diff: desired objects carry
	// the ownership metadata Helm writes (so removing it is drift), the
	// field managers of --override-manager (Config.OverrideManagers,
	// empty by default) are overridden, and the changes are rationalized
	// (jsondiff.Rationalize(true): a map whose every key changed is one
	// replace of it).
	cfg, err := drift.Compile(rules, drift.Options{Mode: drift.Mode(dd.GetMode()),
		HelmRelease: &drift.HelmRelease{Name: last.Name, Namespace: last.Namespace}, FieldManager: ru.r.fieldManager,
		OverrideManagers: ru.r.overrideManagers, Rationalize: true})
	if err != nil {
		return nil, fmt.Errorf("release %s: spec.driftDetection: %w", refOf(ru.rel), err)
	}
	desired, err := objectsOf(ru.cfg.KubeClient, last.Manifest)
	if err != nil {
		return nil, fmt.Errorf("release %s: drift: read manifest of %s: %w", refOf(ru.rel), fullName(last), ru.helmErr("drift", err))
	}
	lists := ru.lists
	if lists == nil {
		lists = liveCache{}
	}
	var live []*unstructured.Unstructured
	for _, obj := range desired {
		k := listKey{obj.GroupVersionKind(), obj.GetNamespace()}
		byName, ok := lists[k]
		if !ok {
			items, err := ru.cluster.List(ru.ctx, k.gvk, k.ns, nil)
			if err != nil {
				return nil, fmt.Errorf("release %s: drift: list %s in %q: %w", refOf(ru.rel), k.gvk.Kind, k.ns, ru.helmErr("drift", err))
			}
			byName = make(map[string]*unstructured.Unstructured, len(items))
			for _, it := range items {
				byName[it.GetName()] = it
			}
			lists[k] = byName
		}
		if l, ok := byName[obj.GetName()]; ok {
			live = append(live, l)
		}
	}
	report, err := drift.Detect(desired, live, cfg)
	if err != nil {
		return nil, fmt.Errorf("release %s: drift: %w", refOf(ru.rel), ru.helmErr("drift", err))
	}
	return report, nil
}

// listKey names one List request: a kind in a namespace.
type listKey struct {
	gvk schema.GroupVersionKind
	ns  string
}

// liveCache keeps the objects of each List made, by name, so that drift
// checks of several releases on one cluster list each kind once.
type liveCache map[listKey]map[string]*unstructured.Unstructured

// correctDrift creates missing objects and patches modified ones back,
// leaving ignored paths alone.
func (ru *run) correctDrift(report *drift.Report) error {
	if dd, ok := ru.cluster.(release.DriftDetector); ok {
		if err := ru.helmErr("drift correction", dd.CorrectDrift(ru.ctx, report, ru.r.fieldManager)); err != nil {
			msg := fmt.Sprintf("drift correction of %s failed: %v", fullName(ru.res.Helm), err)
			ru.setCondition(release.ConditionDrifted, metav1.ConditionTrue, release.ReasonDriftDetected, msg)
			ru.markReady(metav1.ConditionFalse, release.ReasonDriftDetected, msg)
			return ru.actionErr(ActionCorrectDrift, err)
		}
		ru.setCondition(release.ConditionDrifted, metav1.ConditionFalse, release.ReasonNoDrift, fmt.Sprintf("corrected drift of %s", fullName(ru.res.Helm)))
		return nil
	}
	patcher, ok := ru.cluster.(release.Patcher)
	var errs []error
	fixed := 0
	for _, c := range report.Corrections() {
		switch c.Action {
		case drift.ActionCreate:
			if _, err := ru.cluster.Apply(ru.ctx, c.Create, release.ApplyOptions{FieldManager: ru.r.fieldManager, Force: true}); err != nil {
				errs = append(errs, fmt.Errorf("create %s: %w", c.Object, err))
				continue
			}
		case drift.ActionPatch:
			if !ok {
				errs = append(errs, fmt.Errorf("patch %s: cluster %s cannot apply JSON patches (no Patch method)", c.Object, ru.cluster.Name()))
				continue
			}
			data, err := json.Marshal(c.Patch)
			if err != nil {
				errs = append(errs, fmt.Errorf("patch %s: %w", c.Object, err))
				continue
			}
			ref := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: c.Object.Group, Version: c.Object.Version, Kind: c.Object.Kind}, Namespace: c.Object.Namespace, Name: c.Object.Name}
			if _, err := patcher.Patch(ru.ctx, ref, data, release.PatchOptions{FieldManager: ru.r.fieldManager}); err != nil {
				errs = append(errs, fmt.Errorf("patch %s: %w", c.Object, err))
				continue
			}
		default:
			continue
		}
		fixed++
	}
	// An object's writes may be refused with a message that quotes it.
	if err := ru.helmErr("drift correction", errors.Join(errs...)); err != nil {
		msg := fmt.Sprintf("drift correction of %s: %d object(s) corrected, %d failed: %v", fullName(ru.res.Helm), fixed, len(errs), err)
		ru.setCondition(release.ConditionDrifted, metav1.ConditionTrue, release.ReasonDriftDetected, msg)
		ru.markReady(metav1.ConditionFalse, release.ReasonDriftDetected, msg)
		return ru.actionErr(ActionCorrectDrift, err)
	}
	ru.setCondition(release.ConditionDrifted, metav1.ConditionFalse, release.ReasonNoDrift, fmt.Sprintf("corrected drift of %d object(s) of %s", fixed, fullName(ru.res.Helm)))
	return nil
}

// Uninstall removes the Helm release of rel from cluster with
// spec.uninstall's settings, as Flux uninstalls a HelmRelease being
// deleted: a release that is already absent, or already uninstalled with
// its history kept, is not an error (the Released condition says it was
// not this call that removed it); an uninstall that Helm reports done but
// that storage does not record is one. The history keeps the release's
// snapshot, marked uninstalled. A suspended release is left alone, as
// Flux leaves it.
//
// As in Flux, Uninstall removes only a Helm release that rel's status
// history shows it installed: deleting a Release must never remove a Helm
// release someone else installed under the same name. Without a latest
// snapshot in the history it refuses with an *OwnershipError wrapping
// ErrNoLatest (unless storage holds no record of the release at all:
// there is nothing to remove then), and when Helm's latest record of the
// release is not the history's latest snapshot (name, namespace and
// revision; for helmfleet's snapshots the digest too) with one wrapping
// ErrReleaseMismatch, marking Released and Ready False (UninstallFailed)
// and counting a failure. Nothing is removed in either case; Flux's
// controller deletes a HelmRelease without uninstalling on ErrNoLatest
// and retries on ErrReleaseMismatch. A caller that lost the status (a
// fleet's member) passes the history it recorded itself.
func (r *Reconciler) Uninstall(ctx context.Context, cluster release.Cluster, rel *release.Release) (*Result, error) {
	res := &Result{Next: NextDone}
	if rel.Spec.Suspend {
		res.Status = rel.Status
		return res, nil
	}
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: res}
	// Ready is summarized from Released before the status is returned.
	defer func() { rel.SummarizeReady(); res.Status = rel.Status }()
	name := rel.GetTargetNamespace() + "/" + rel.GetReleaseName()
	cfg, err := ru.helmConfig(ru.scopeOf(rel.GetStorageNamespace(), rel.GetTargetNamespace(), rel.GetReleaseName()))
	if err == nil {
		ru.cfg = cfg
		err = ru.checkOwnership()
		if oe := (*OwnershipError)(nil); errors.As(err, &oe) {
			return ru.refuseUninstall(oe)
		}
	}
	if err == nil {
		res.Actions = []Action{ActionUninstall}
		err = ru.helmUninstall(cfg, rel.GetReleaseName())
		switch {
		case errors.Is(err, driver.ErrReleaseNotFound):
			msg := fmt.Sprintf("Helm release %s was not found, assuming it is uninstalled", name)
			ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallSucceeded, msg)
			return res, nil
		case err != nil && rel.GetUninstall().KeepHistory && strings.Contains(err.Error(), "is already deleted"):
			msg := fmt.Sprintf("Helm release %s was already uninstalled", name)
			ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallSucceeded, msg)
			return res, nil
		case err == nil:
			err = ru.uninstallRecorded()
		default:
			err = ru.helmErr("uninstall", err)
		}
		ru.observeUninstalled(err == nil)
	}
	if err != nil {
		err = ru.actionErr(ActionUninstall, err)
		rel.Status.Failures++
		ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallFailed, err.Error())
		res.Next = NextRequeue
		return res, err
	}
	msg := fmt.Sprintf("Helm uninstall succeeded for release %s", name)
	if cur := rel.Status.History.Latest(); cur != nil {
		msg = fmt.Sprintf("Helm uninstall succeeded for release %s with chart %s", cur.FullReleaseName(), cur.VersionedChartName())
	}
	rel.Status.Inventory = nil
	ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallSucceeded, msg)
	return res, nil
}

// checkOwnership returns why rel may not uninstall the Helm release its
// spec names (an *OwnershipError), or nil when its status history's
// latest snapshot is Helm's latest record of it, or storage holds no
// record to remove.
func (ru *run) checkOwnership() error {
	rel := ru.rel
	oe := &OwnershipError{Release: refOf(rel), Cluster: ru.cluster.Name(), HelmRelease: rel.GetReleaseName(), StorageNamespace: rel.GetStorageNamespace()}
	last, err := ru.lastRecord()
	if err != nil {
		return errStorage(rel, ru.cluster.Name(), err)
	}
	cur := rel.Status.History.Latest()
	if cur != nil {
		oe.Recorded = cur.FullReleaseName()
	}
	if last == nil {
		// Nothing to remove, and nothing removed: Helm reports it
		// not found.
		return nil
	}
	oe.Latest = fullName(last)
	if cur == nil {
		oe.Err, oe.Reason = ErrNoLatest, fmt.Sprintf("the status history records no release, and storage holds %s", oe.Latest)
		return oe
	}
	if reason := verifySnapshot(cur, last); reason != "" {
		oe.Err, oe.Reason = ErrReleaseMismatch, reason
		return oe
	}
	return nil
}

// refuseUninstall ends an Uninstall that checkOwnership refused: nothing
// was run. A mismatch is a failed uninstall (Released and Ready False,
// UninstallFailed, one more failure), as Flux records its
// ErrReleaseMismatch; a missing snapshot changes no condition, as Flux's
// ErrNoLatest.
func (ru *run) refuseUninstall(err *OwnershipError) (*Result, error) {
	ru.res.Next = NextRequeue
	if errors.Is(err, ErrNoLatest) {
		return ru.res, err
	}
	ru.rel.Status.Failures++
	ru.setCondition(release.ConditionReleased, metav1.ConditionFalse, release.ReasonUninstallFailed, err.Error())
	return ru.res, err
}

// observeUninstalled updates the snapshot of the revision an uninstall
// touched: from its record when storage kept it, else (purged) marked
// uninstalled when the uninstall succeeded.
func (ru *run) observeUninstalled(ok bool) {
	st := &ru.rel.Status
	last, err := ru.lastRecord()
	if err != nil {
		return
	}
	if last != nil {
		ru.res.Helm = last
		for i, s := range st.History {
			if s.Name == last.Name && s.Namespace == last.Namespace && s.Version == last.Version {
				snap := snapshotOf(last, s.OCIDigest)
				if snap.TestHooks == nil {
					snap.TestHooks = s.TestHooks
				}
				st.History[i] = snap
			}
		}
		return
	}
	if cur := st.History.Latest(); ok && cur != nil && cur.Name == ru.rel.GetReleaseName() {
		if cur.Status != release.SnapshotStatusUninstalled {
			cur.Deleted = metav1.NewTime(ru.r.now())
		}
		cur.Status = release.SnapshotStatusUninstalled
	}
}
