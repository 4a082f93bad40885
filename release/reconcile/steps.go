package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/helmfleet/helmfleet/release"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// observe determines the state of the release (Flux's
// DetermineReleaseState, with drift detection through package drift).
func (ru *run) observe() (*observation, error) {
	rel, d := ru.rel, ru.d
	last, err := ru.lastRecord()
	if err != nil {
		return nil, errStorage(rel, ru.cluster.Name(), err)
	}
	ru.res.Helm = last
	switch {
	case last == nil:
		return &observation{state: StateAbsent, reason: "no release in storage"}, nil
	case last.Info.Status.IsPending():
		return &observation{state: StateLocked, reason: fmt.Sprintf("release with status '%s'", last.Info.Status), last: last}, nil
	}
	cur := rel.Status.History.Latest()
	if cur == nil {
		if last.Info.Status == helmrelease.StatusUninstalled {
			return &observation{state: StateAbsent, reason: "found uninstalled release in storage", last: last}, nil
		}
		return &observation{state: StateUnmanaged, reason: "found existing release in storage", last: last}, nil
	}
	if reason := verifySnapshot(cur, last); reason != "" {
		return &observation{state: StateUnmanaged, reason: reason, last: last}, nil
	}
	switch last.Info.Status {
	case helmrelease.StatusFailed:
		return &observation{state: StateFailed, reason: "last release failed", last: last}, nil
	case helmrelease.StatusUninstalled:
		return &observation{state: StateAbsent, reason: "found uninstalled release in storage", last: last}, nil
	case helmrelease.StatusUninstalling:
		return &observation{state: StateUninstalling, reason: "an uninstall did not complete: release with status 'uninstalling'", last: last}, nil
	case helmrelease.StatusDeployed:
	default:
		return nil, fmt.Errorf("release %s: cannot determine state of helm release with status '%s'", refOf(rel), last.Info.Status)
	}
	if reason := outOfSync(last, d, rel); reason != "" {
		return &observation{state: StateOutOfSync, reason: reason, last: last}, nil
	}
	if test := rel.GetTest(); test.Enable {
		if !cur.HasBeenTested() {
			return &observation{state: StateUntested, last: last}, nil
		}
		if rem := rel.GetActiveRemediation(); rem != nil && !rem.MustIgnoreTestFailures(test.IgnoreFailures) && cur.HasTestInPhase(release.HookPhaseFailed) {
			return &observation{state: StateFailed, reason: "release has test in failed phase", last: last}, nil
		}
	}
	if rel.GetDriftDetection().GetMode() != release.DriftDetectionDisabled {
		report, err := ru.detectDrift(last)
		if err != nil {
			return nil, err
		}
		if report.Drifted() {
			ru.res.Drift = report
			return &observation{state: StateDrifted, last: last, drift: report}, nil
		}
		if ru.res.Drift == nil {
			ru.res.Drift = report
		}
		if c := ru.rel.Status.GetCondition(release.ConditionDrifted); c != nil && c.Status == metav1.ConditionTrue {
			ru.setCondition(release.ConditionDrifted, metav1.ConditionFalse, release.ReasonNoDrift, "no drift detected")
		}
	}
	return &observation{state: StateInSync, last: last}, nil
}

// outOfSync says why the deployed release differs from what is desired,
// or "" when it does not.
func outOfSync(last *helmrelease.Release, d *desired, rel *release.Release) string {
	md := d.chart.Chart.Metadata
	switch {
	case last.Chart == nil || last.Chart.Metadata == nil:
		return "release has no chart"
	case last.Chart.Metadata.Name != md.Name:
		return fmt.Sprintf("chart name changed from %s to %s", last.Chart.Metadata.Name, md.Name)
	case !sameChartVersion(last.Chart.Metadata.Version, md.Version):
		return fmt.Sprintf("chart version changed from %s to %s", last.Chart.Metadata.Version, md.Version)
	case ValuesDigestOf(last) != d.values.Digest:
		return "values changed"
	case rel.Status.ObservedGeneration == rel.Generation:
		// As Flux does, post-renderers and common metadata are compared
		// for a new generation only: they change with the spec, and the
		// observed digests are written after each successful action.
		return ""
	case rel.Status.ObservedPostRenderersDigest != postRenderersDigest(rel):
		return "post-renderers changed"
	case rel.Status.ObservedCommonMetadataDigest != commonMetadataDigest(rel):
		return "common metadata changed"
	}
	return ""
}

// sameChartVersion reports whether the chart version of the deployed
// release is the wanted one: equal, or the wanted version with build
// metadata added (deployed 1.2.3+4, wanted 1.2.3). Flux's HelmChart
// writes its generation as build metadata into the version of a chart
// built with valuesFiles, where helmfleet keeps the repository's version:
// a release Flux installed so is the same chart, not one to upgrade. Any
// other difference, build metadata included (1.2.3+4, wanted 1.2.3+5),
// is a change, as in Flux.
func sameChartVersion(deployed, wanted string) bool {
	if deployed == wanted {
		return true
	}
	base, meta, ok := strings.Cut(deployed, "+")
	if !ok || meta == "" || base != wanted {
		return false
	}
	_, err := semver.StrictNewVersion(deployed)
	return err == nil
}

// decide picks the next action for the observed state (Flux's
// actionForState), or returns a *StalledError. force says whether a force
// request is still to be taken up; the decision says when it is.
func (ru *run) decide(obs *observation, force bool) (decision, error) {
	rel := ru.rel
	st := &rel.Status
	none := decision{action: ActionNone}
	switch obs.state {
	case StateInSync:
		if ru.activeRetry() != nil {
			st.History.TruncateIgnoringPreviousSnapshots()
		} else {
			st.History.Truncate(ru.ignoreTestFailures())
		}
		if force {
			return decision{action: ActionUpgrade, usesForce: true}, nil
		}
		ru.markReleasedInSync()
		return none, nil
	case StateLocked:
		return decision{action: ActionUnlock}, nil
	case StateAbsent:
		if rel.GetInstall().GetRemediation().RetriesExhausted(st) && !force {
			return none, ru.stalled(release.ReasonRetriesExceeded, fmt.Sprintf("cannot install release: failed %d time(s), retries exhausted", st.InstallFailures))
		}
		return decision{action: ActionInstall, usesForce: true}, nil
	case StateUnmanaged:
		st.ClearHistory()
		return decision{action: ActionUpgrade}, nil
	case StateOutOfSync:
		if rel.GetUpgrade().GetRemediation().RetriesExhausted(st) && !force {
			return none, ru.stalled(release.ReasonRetriesExceeded, fmt.Sprintf("cannot upgrade release: failed %d time(s), retries exhausted", st.UpgradeFailures))
		}
		ru.warnUninstallRemediationIfUpgradeFails(st.History.Latest())
		return decision{action: ActionUpgrade, usesForce: true}, nil
	case StateUntested:
		ru.replaceRemediated()
		return decision{action: ActionTest}, nil
	case StateDrifted:
		if rel.GetDriftDetection().GetMode() == release.DriftDetectionEnabled {
			return decision{action: ActionCorrectDrift}, nil
		}
		return none, nil
	case StateFailed:
		return ru.decideFailed(force)
	case StateUninstalling:
		return ru.decideUninstalling(obs, force)
	}
	return none, fmt.Errorf("release %s: unknown release state %s", refOf(rel), obs.state)
}

// decideFailed is the remediation decision for a failed release.
func (ru *run) decideFailed(force bool) (decision, error) {
	rel := ru.rel
	st := &rel.Status
	none, upgrade := decision{action: ActionNone}, decision{action: ActionUpgrade, usesForce: true}
	if ru.activeRetry() != nil {
		// RetryOnFailure upgrades again, like a forced upgrade with no
		// retry limit (Flux); it keeps the newest snapshots only, as it
		// never rolls back.
		st.History.TruncateIgnoringPreviousSnapshots()
		return upgrade, nil
	}
	rem := rel.GetActiveRemediation()
	if rem == nil || rem.GetFailureCount(st) <= 0 || force {
		// No failure counted against what is asked for now: the
		// conditions changed since, so try again.
		return upgrade, nil
	}
	if rem.RetriesExhausted(st) && !rem.MustRemediateLastFailure() {
		return none, ru.stalled(release.ReasonRetriesExceeded, fmt.Sprintf("failed to %s after %d attempt(s)", st.LastAttemptedReleaseAction, rem.GetFailureCount(st)))
	}
	ignore := rem.MustIgnoreTestFailures(rel.GetTest().IgnoreFailures)
	st.History.Truncate(ignore)
	prev := st.History.Previous(ignore)
	strategy := rem.GetStrategy()
	switch strategy {
	case release.RollbackRemediationStrategy:
		if prev == nil {
			return none, ru.stalled(release.ReasonMissingRollbackTarget, "no previous successful release to roll back to")
		}
		h, err := ru.cfg.Releases.Get(prev.Name, prev.Version)
		switch {
		case errors.Is(err, driver.ErrReleaseNotFound) || (err == nil && h == nil):
			// The target's record disappeared from storage: as Flux
			// does, attempt the upgrade again rather than stall.
			return decision{action: ActionUpgrade}, nil
		case err != nil:
			// Possibly transient: report it and try again later.
			return none, fmt.Errorf("release %s: verify rollback target %s: %w", refOf(rel), prev.FullReleaseName(), err)
		case releaseDigest(h) != prev.Digest:
			// The target changed under us: the safest remediation is to
			// attempt the upgrade again, as Flux does.
			return decision{action: ActionUpgrade}, nil
		}
		return decision{action: ActionRollback}, nil
	case release.UninstallRemediationStrategy:
		// Honoured as written, as Flux does: the user chose it (a chart
		// that cannot roll back), and says so loudly when it removes a
		// revision that was running well.
		ru.warnUninstallRemediation(prev)
		return decision{action: ActionUninstall}, nil
	}
	return none, fmt.Errorf("release %s: unknown remediation strategy %q", refOf(rel), strategy)
}

// decideUninstalling is the way out of a release that an uninstall left
// 'uninstalling'. As Flux does, a failed uninstall remediation that
// changed storage counts as a remediation done, so a release out of
// retries stalls (a force request or a new generation lifts it);
// otherwise the uninstall runs again to complete it, once: if it fails
// again the release stalls (afterRemediation).
func (ru *run) decideUninstalling(obs *observation, force bool) (decision, error) {
	st := &ru.rel.Status
	if rem := ru.rel.GetActiveRemediation(); rem != nil && rem.RetriesExhausted(st) && !force {
		return decision{action: ActionNone}, ru.stalled(release.ReasonRetriesExceeded, fmt.Sprintf(
			"failed to %s after %d attempt(s); the uninstall remediating the last failure did not complete and left release %s 'uninstalling'",
			st.LastAttemptedReleaseAction, rem.GetFailureCount(st), fullName(obs.last)))
	}
	return decision{action: ActionUninstall, usesForce: true, completesUninstall: true}, nil
}

// warnUninstallRemediationIfUpgradeFails warns, before an upgrade, when
// its failure would be remediated by uninstalling cur, the deployed
// revision: upgrade.remediation.strategy uninstall, with a remediation
// left after this attempt fails.
func (ru *run) warnUninstallRemediationIfUpgradeFails(cur *release.Snapshot) {
	up := ru.rel.GetUpgrade()
	rem := up.GetRemediation()
	if cur == nil || cur.Status != release.SnapshotStatusDeployed || rem.GetStrategy() != release.UninstallRemediationStrategy ||
		up.GetStrategy().Name == release.ActionStrategyRetryOnFailure {
		return
	}
	after := ru.rel.Status
	rem.IncrementFailureCount(&after)
	if rem.RetriesExhausted(&after) && !rem.MustRemediateLastFailure() {
		return
	}
	ru.warnUninstallRemediation(cur)
}

// warnUninstallRemediation adds to the Result's warnings, once, that the
// uninstall remediation removes healthy, the revision that was deployed
// and healthy (nil: none was, and there is nothing to say).
func (ru *run) warnUninstallRemediation(healthy *release.Snapshot) {
	if healthy == nil {
		return
	}
	ru.warn(uninstallRemediationWarning(ru.rel, healthy))
}

// warn adds msg to the Result's warnings, once.
func (ru *run) warn(msg string) {
	if !slices.Contains(ru.res.Warnings, msg) {
		ru.res.Warnings = append(ru.res.Warnings, msg)
	}
}

// uninstallRemediationWarning is the text of warnUninstallRemediation.
func uninstallRemediationWarning(rel *release.Release, healthy *release.Snapshot) string {
	return fmt.Sprintf("release %s: remediation would uninstall revision %d, which is deployed and healthy (%s with chart %s; upgrade.remediation.strategy: uninstall)",
		refOf(rel), healthy.Version, healthy.FullReleaseName(), healthy.VersionedChartName())
}

func (ru *run) ignoreTestFailures() bool {
	ignore := ru.rel.GetTest().IgnoreFailures
	if rem := ru.rel.GetActiveRemediation(); rem != nil {
		ignore = rem.MustIgnoreTestFailures(ignore)
	}
	return ignore
}

// activeRetry is the RetryOnFailure strategy of the last attempted
// install or upgrade, nil when that action remediates on failure (or
// nothing was attempted yet): Flux's GetActiveRetry.
func (ru *run) activeRetry() *release.ActionStrategy {
	if ru.rel.Status.LastAttemptedReleaseAction == "" {
		return nil
	}
	if s := ru.strategy(); s.Name == release.ActionStrategyRetryOnFailure {
		return &s
	}
	return nil
}

// retryAfter is the interval of a RetryOnFailure strategy.
func retryAfter(s *release.ActionStrategy) time.Duration {
	if s.RetryInterval != nil && s.RetryInterval.Duration > 0 {
		return s.RetryInterval.Duration
	}
	return defaultRetryInterval
}

// markReleasedInSync sets Released (and Ready, in finish) to reflect a
// release found in sync, as Flux does: a Released condition left False by
// an install or upgrade that failed before (then fixed by a retry or by
// hand) turns True, and a Remediated condition gives way to Released
// when the remediated revision is what is asked for now.
func (ru *run) markReleasedInSync() {
	ru.replaceRemediated()
	st := &ru.rel.Status
	c := st.GetCondition(release.ConditionReleased)
	if c == nil || c.Status == metav1.ConditionTrue {
		return
	}
	cur := st.History.Latest()
	if cur == nil {
		return
	}
	switch c.Reason {
	case release.ReasonInstallFailed:
		ru.setCondition(release.ConditionReleased, metav1.ConditionTrue, release.ReasonInstallSucceeded,
			fmt.Sprintf("Helm install succeeded for release %s with chart %s", cur.FullReleaseName(), cur.VersionedChartName()))
	case release.ReasonUpgradeFailed:
		ru.setCondition(release.ConditionReleased, metav1.ConditionTrue, release.ReasonUpgradeSucceeded,
			fmt.Sprintf("Helm upgrade succeeded for release %s with chart %s", cur.FullReleaseName(), cur.VersionedChartName()))
	}
}

// replaceRemediated turns a True Remediated condition into Released
// True/UpgradeSucceeded: the remediated revision matches the desired
// state, so it stands as the release (Flux's replaceCondition).
func (ru *run) replaceRemediated() {
	st := &ru.rel.Status
	c := st.GetCondition(release.ConditionRemediated)
	if c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	st.RemoveCondition(release.ConditionRemediated)
	if cur := st.History.Latest(); cur != nil {
		ru.setCondition(release.ConditionReleased, metav1.ConditionTrue, release.ReasonUpgradeSucceeded,
			fmt.Sprintf("Helm upgrade succeeded for release %s with chart %s", cur.FullReleaseName(), cur.VersionedChartName()))
	}
}

// strategy is the install or upgrade strategy of the last attempt.
func (ru *run) strategy() release.ActionStrategy {
	if ru.rel.Status.LastAttemptedReleaseAction == release.ReleaseActionInstall {
		return ru.rel.GetInstall().GetStrategy()
	}
	return ru.rel.GetUpgrade().GetStrategy()
}

func (ru *run) stalled(reason, msg string) *StalledError {
	return &StalledError{Release: refOf(ru.rel), Cluster: ru.cluster.Name(), Reason: reason, Message: msg}
}

// afterFailure decides whether a failed install, upgrade, test or unlock
// ends the reconcile: RetryOnFailure waits for its interval; otherwise the
// loop goes on to remediation.
func (ru *run) afterFailure(a Action, err error) (outcome, bool) {
	if retry := ru.activeRetry(); retry != nil && (a == ActionInstall || a == ActionUpgrade) {
		// RetryOnFailure has no retry limit: Flux upgrades again after
		// the interval however often it failed.
		return ru.retryLater(retry, err), true
	}
	if a == ActionUnlock || a == ActionCorrectDrift {
		return again(0, err), true
	}
	return outcome{}, false
}

// retryLater ends the reconcile until retry's interval has passed,
// returning lastErr, the failure retried.
func (ru *run) retryLater(retry *release.ActionStrategy, lastErr error) outcome {
	after := retryAfter(retry)
	ru.setCondition(release.ConditionReconciling, metav1.ConditionTrue, "ProgressingWithRetry", fmt.Sprintf("retrying after %s", after))
	return again(after, lastErr)
}

// afterRemediation ends the reconcile after a rollback or uninstall that
// remediated a failure (err: the remediation's own failure; lastErr: the
// failure it remediated, if this reconcile met it).
func (ru *run) afterRemediation(dec decision, err, lastErr error) outcome {
	if err != nil {
		ru.markReady(metav1.ConditionFalse, ru.conditionReason(release.ConditionRemediated), err.Error())
		if dec.action != ActionUninstall || !leftUninstalling(ru.res.Helm) {
			// Storage is as it was: nothing was remediated, try again.
			return again(0, err)
		}
		return ru.afterIncompleteUninstall(dec, err, lastErr)
	}
	// After an uninstall remediation of an upgrade, Flux always comes
	// back to install again, even out of retries.
	if ru.res.Last() == ActionUninstall && ru.rel.Status.LastAttemptedReleaseAction == release.ReleaseActionUpgrade {
		return ru.requeue(lastErr)
	}
	if rem := ru.rel.GetActiveRemediation(); rem != nil && rem.RetriesExhausted(&ru.rel.Status) {
		return ru.stall(ru.stalled(release.ReasonRetriesExceeded, fmt.Sprintf("failed to %s after %d attempt(s)", ru.rel.Status.LastAttemptedReleaseAction, rem.GetFailureCount(&ru.rel.Status))), lastErr)
	}
	return ru.requeue(lastErr)
}

// afterIncompleteUninstall ends the reconcile after an uninstall
// remediation that failed after it changed storage, leaving the release
// 'uninstalling' (err: its failure). Flux counts it as a remediation
// done: out of retries, the release stalls. An uninstall that was itself
// completing an earlier one stalls too: Helm installs nothing over the
// release, and running it again at once would fail the same way.
func (ru *run) afterIncompleteUninstall(dec decision, err, lastErr error) outcome {
	st := &ru.rel.Status
	name := fullName(ru.res.Helm)
	if dec.completesUninstall {
		return ru.stall(ru.stalled(release.ReasonUninstallFailed, fmt.Sprintf(
			"uninstall of release %s failed again and left it 'uninstalling': %v; fix the cause, then change the spec or request a force to run it again",
			name, err)), nil)
	}
	if rem := ru.rel.GetActiveRemediation(); rem != nil && rem.RetriesExhausted(st) {
		se := ru.stalled(release.ReasonRetriesExceeded, fmt.Sprintf(
			"failed to %s after %d attempt(s); the uninstall remediating it failed and left release %s 'uninstalling': %v",
			st.LastAttemptedReleaseAction, rem.GetFailureCount(st), name, err))
		if lastErr == nil {
			se.Err = err
		}
		return ru.stall(se, lastErr)
	}
	ru.progressing()
	return again(0, err)
}

// leftUninstalling says whether h, the record an uninstall left, says
// the uninstall began and did not complete.
func leftUninstalling(h *helmrelease.Release) bool {
	return h != nil && h.Info != nil && h.Info.Status == helmrelease.StatusUninstalling
}

// requeue ends the reconcile with more work to do, at once; it returns
// lastErr, the failure that made the work necessary, if any.
func (ru *run) requeue(lastErr error) outcome {
	ru.progressing()
	return again(0, lastErr)
}

// progressing marks the release Reconciling, as Flux does when it must
// come back to finish (a remediation ran, a retry is due).
func (ru *run) progressing() {
	msg := "more actions to run"
	if c := ru.rel.Status.GetCondition(release.ConditionReady); c != nil && c.Message != "" {
		msg = c.Message
	}
	ru.setCondition(release.ConditionReconciling, metav1.ConditionTrue, "ProgressingWithRetry", msg)
}

// stall ends the reconcile on a decision's error: a *StalledError stalls
// it (lastErr, the failure that used up the retries, joins its message);
// any other error fails it, to be tried again.
func (ru *run) stall(err, lastErr error) outcome {
	var se *StalledError
	if !errors.As(err, &se) {
		ru.markReady(metav1.ConditionFalse, release.ReasonReconciliationFailed, err.Error())
		return again(0, err)
	}
	msg := se.Message
	if lastErr != nil {
		if se.Err == nil {
			se.Err = lastErr
		}
		// The stall already names the release and the cluster: the
		// failure behind it is said without them again.
		if last := withinRelease(lastErr, se.Release, se.Cluster); !strings.Contains(msg, last) {
			msg += ": " + last
			se.Message = msg
		}
	}
	ru.setCondition(release.ConditionStalled, metav1.ConditionTrue, se.Reason, msg)
	ru.rel.Status.RemoveCondition(release.ConditionReconciling)
	// As Flux does, Ready keeps saying what failed (InstallFailed,
	// TestFailed, RollbackSucceeded, …) and Stalled says why nothing more
	// is tried; a Ready that would still claim success is made False.
	if c := ru.rel.Status.GetCondition(release.ConditionReady); c == nil || c.Status == metav1.ConditionTrue {
		ru.markReady(metav1.ConditionFalse, se.Reason, msg)
	}
	return stalledOutcome(se)
}

// finish ends a reconcile that has nothing left to do: the release is
// ready (in sync, or drifted in warn mode), unless lastErr, an action's
// failure in this reconcile, left it in another state.
func (ru *run) finish(obs *observation, lastErr error) outcome {
	st := &ru.rel.Status
	st.ObservedGeneration = ru.rel.Generation
	st.ObservedPostRenderersDigest = postRenderersDigest(ru.rel)
	st.ObservedCommonMetadataDigest = commonMetadataDigest(ru.rel)
	st.StorageNamespace = ru.rel.GetStorageNamespace()
	st.RemoveCondition(release.ConditionReconciling)
	st.RemoveCondition(release.ConditionStalled)
	if c := st.GetCondition(release.ConditionRemediated); c != nil && c.Status == metav1.ConditionTrue {
		// In sync with what is asked for after a remediation: the
		// remediated revision matches the desired state.
		st.RemoveCondition(release.ConditionRemediated)
	}
	if lastErr != nil && obs.state != StateInSync && obs.state != StateDrifted {
		return again(0, lastErr)
	}
	reason, msg := release.ReasonReconciliationSucceeded, "release is in sync"
	if c := st.GetCondition(release.ConditionReleased); c != nil && c.Status == metav1.ConditionTrue {
		reason, msg = c.Reason, c.Message
	}
	if c := st.GetCondition(release.ConditionTestSuccess); c != nil && c.Status == metav1.ConditionTrue && ru.res.Did(ActionTest) {
		reason, msg = c.Reason, c.Message
	}
	if obs.state == StateDrifted {
		msg = fmt.Sprintf("%s; drift detected (mode warn): %d object(s) differ", msg, ru.res.Drift.Count("Modified")+ru.res.Drift.Count("Missing"))
	}
	ru.markReady(metav1.ConditionTrue, reason, msg)
	return done(ru.rel.GetRequeueAfter())
}

// markReady sets the Release's Ready condition, for its generation, now.
func (ru *run) markReady(status metav1.ConditionStatus, reason, msg string) {
	ru.setCondition(release.ConditionReady, status, reason, msg)
}

// setCondition sets the Release's condition typ, for its generation, now.
// markFieldWarnings sets the FieldWarnings condition to the warnings,
// one a line, or removes it when there is none.
func (ru *run) markFieldWarnings(w []string) {
	if len(w) == 0 {
		ru.rel.Status.RemoveCondition(release.ConditionFieldWarnings)
		return
	}
	ru.setCondition(release.ConditionFieldWarnings, metav1.ConditionTrue, release.ReasonNotActedOn, strings.Join(w, "\n"))
}

func (ru *run) setCondition(typ string, status metav1.ConditionStatus, reason, msg string) {
	ru.rel.Status.Mark(typ, status, reason, msg, ru.rel.Generation, metav1.NewTime(ru.r.now()))
}

func (ru *run) conditionReason(typ string) string {
	if c := ru.rel.Status.GetCondition(typ); c != nil {
		return c.Reason
	}
	return release.ReasonReconciliationFailed
}

// observeLatest records Helm's latest release of name in the history;
// after an uninstall that purged it, the Result has no Helm release.
func (ru *run) observeLatest() {
	last, err := ru.lastRecord()
	if err != nil {
		return
	}
	if last == nil {
		ru.res.Helm = nil
		return
	}
	ru.res.Helm = last
	ru.rel.Status.History = upsertSnapshot(ru.rel.Status.History, snapshotOf(last, ru.d.chart.Digest))
}

// markAction records a as the action that wrote the latest snapshot
// (status.history[].action, Flux 2.9).
func (ru *run) markAction(a Action) {
	if cur := ru.rel.Status.History.Latest(); cur != nil {
		cur.Action = string(a)
	}
}

// snapshotOf turns Helm's release record into a history snapshot.
func snapshotOf(h *helmrelease.Release, ociDigest string) *release.Snapshot {
	s := &release.Snapshot{
		APIVersion: release.SnapshotAPIVersion,
		Name:       h.Name, Namespace: h.Namespace, Version: h.Version,
		ConfigDigest: ValuesDigestOf(h),
		OCIDigest:    ociDigest,
		Digest:       releaseDigest(h),
	}
	if h.Chart != nil && h.Chart.Metadata != nil {
		s.ChartName, s.ChartVersion, s.AppVersion = h.Chart.Metadata.Name, h.Chart.Metadata.Version, h.Chart.Metadata.AppVersion
	}
	if h.Info != nil {
		s.Status = h.Info.Status.String()
		s.FirstDeployed = metav1.NewTime(h.Info.FirstDeployed.Time)
		s.LastDeployed = metav1.NewTime(h.Info.LastDeployed.Time)
		if !h.Info.Deleted.IsZero() {
			s.Deleted = metav1.NewTime(h.Info.Deleted.Time)
		}
	}
	var tests map[string]*release.TestHookStatus
	for _, hk := range h.Hooks {
		if !isTestHook(hk) || hk.LastRun.StartedAt.IsZero() {
			continue
		}
		if tests == nil {
			tests = map[string]*release.TestHookStatus{}
		}
		tests[hk.Name] = &release.TestHookStatus{
			LastStarted:   metav1.NewTime(hk.LastRun.StartedAt.Time),
			LastCompleted: metav1.NewTime(hk.LastRun.CompletedAt.Time),
			Phase:         hk.LastRun.Phase.String(),
		}
	}
	if tests != nil {
		s.SetTestHooks(tests)
	}
	return s
}

func isTestHook(h *helmrelease.Hook) bool {
	for _, e := range h.Events {
		if e == helmrelease.HookTest {
			return true
		}
	}
	return false
}

// upsertSnapshot puts s at the head of the history, replacing the
// snapshot of the same Helm revision, and marks older deployed ones
// superseded. Test results of a revision survive a re-observation that
// sees none (Helm keeps them only on the record).
func upsertSnapshot(h release.Snapshots, s *release.Snapshot) release.Snapshots {
	out := release.Snapshots{s}
	for _, old := range h {
		if old.Name == s.Name && old.Namespace == s.Namespace && old.Version == s.Version {
			if s.TestHooks == nil && old.TestHooks != nil {
				s.TestHooks = old.TestHooks
			}
			if s.Action == "" {
				s.Action = old.Action
			}
			continue
		}
		if old.Status == release.SnapshotStatusDeployed && s.Status == release.SnapshotStatusDeployed {
			old.Status = release.SnapshotStatusSuperseded
		}
		out = append(out, old)
	}
	return out
}

// ValuesDigestOf returns the digest of the values a Helm release was
// installed with, comparable with values.Result.Digest.
func ValuesDigestOf(h *helmrelease.Release) string {
	return valuesDigest(h.Config)
}

func fullName(h *helmrelease.Release) string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf("%s/%s.v%d", h.Namespace, h.Name, h.Version)
}

func refOf(rel *release.Release) string { return rel.Namespace + "/" + rel.Name }

// testFilters turns spec.test.filters into Helm's test filters.
func testFilters(filters []release.Filter) map[string][]string {
	out := map[string][]string{}
	for _, f := range filters {
		if f.Exclude {
			out["!name"] = append(out["!name"], f.Name)
		} else {
			out["name"] = append(out["name"], f.Name)
		}
	}
	return out
}
