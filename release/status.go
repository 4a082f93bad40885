package release

import (
	"fmt"
	"sort"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types a Release carries, as Flux sets them.
const (
	// ConditionReady is True when the release is in sync and healthy.
	ConditionReady = "Ready"
	// ConditionReconciling is True while a reconcile is in progress.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when reconciling cannot progress without a
	// change of the spec or a reset request.
	ConditionStalled = "Stalled"
	// ConditionReleased says whether the last install or upgrade succeeded.
	ConditionReleased = "Released"
	// ConditionTestSuccess says whether the last test run succeeded.
	ConditionTestSuccess = "TestSuccess"
	// ConditionRemediated is True after a rollback or uninstall remediated
	// a failure.
	ConditionRemediated = "Remediated"
	// ConditionDrifted is True when live objects differ from the manifest.
	ConditionDrifted = "Drifted"
)

// Condition reasons, as Flux sets them.
const (
	// ReasonInstallSucceeded: a Helm install succeeded.
	ReasonInstallSucceeded = "InstallSucceeded"
	// ReasonInstallFailed: a Helm install failed.
	ReasonInstallFailed = "InstallFailed"
	// ReasonUpgradeSucceeded: a Helm upgrade succeeded.
	ReasonUpgradeSucceeded = "UpgradeSucceeded"
	// ReasonUpgradeFailed: a Helm upgrade failed.
	ReasonUpgradeFailed = "UpgradeFailed"
	// ReasonTestSucceeded: the Helm tests passed.
	ReasonTestSucceeded = "TestSucceeded"
	// ReasonTestFailed: a Helm test failed.
	ReasonTestFailed = "TestFailed"
	// ReasonRollbackSucceeded: a Helm rollback succeeded.
	ReasonRollbackSucceeded = "RollbackSucceeded"
	// ReasonRollbackFailed: a Helm rollback failed.
	ReasonRollbackFailed = "RollbackFailed"
	// ReasonUninstallSucceeded: a Helm uninstall succeeded.
	ReasonUninstallSucceeded = "UninstallSucceeded"
	// ReasonUninstallFailed: a Helm uninstall failed.
	ReasonUninstallFailed = "UninstallFailed"
	// ReasonArtifactFailed: the chart could not be fetched or loaded.
	ReasonArtifactFailed = "ArtifactFailed"
	// ReasonInitFailed: the Helm configuration could not be set up.
	ReasonInitFailed = "InitFailed"
	// ReasonGetLastReleaseFailed: Helm storage could not be read.
	ReasonGetLastReleaseFailed = "GetLastReleaseFailed"
	// ReasonValuesError: the values could not be composed.
	ReasonValuesError = "ValuesError"
	// ReasonDependencyNotReady: a dependency is not ready yet.
	ReasonDependencyNotReady = "DependencyNotReady"
	// ReasonRetriesExceeded: remediation retries are used up.
	ReasonRetriesExceeded = "RetriesExceeded"
	// ReasonMissingRollbackTarget: no previous release to roll back to.
	ReasonMissingRollbackTarget = "MissingRollbackTarget"
	// ReasonDriftDetected: live objects differ from the manifest.
	ReasonDriftDetected = "DriftDetected"
	// ReasonNoDrift: live objects match the manifest.
	ReasonNoDrift = "NoDrift"
	// ReasonProgressing: a reconcile is in progress.
	ReasonProgressing = "Progressing"
	// ReasonReconciliationSucceeded: the last reconcile succeeded.
	ReasonReconciliationSucceeded = "ReconciliationSucceeded"
	// ReasonReconciliationFailed: the last reconcile failed.
	ReasonReconciliationFailed = "ReconciliationFailed"
	// ReasonSuspended: the release is suspended.
	ReasonSuspended = "Suspended"
)

// ReleaseAction is the kind of the last attempted release action.
type ReleaseAction string

// Release actions recorded in status.lastAttemptedReleaseAction.
const (
	// ReleaseActionInstall is a Helm install.
	ReleaseActionInstall ReleaseAction = "install"
	// ReleaseActionUpgrade is a Helm upgrade.
	ReleaseActionUpgrade ReleaseAction = "upgrade"
)

// Status is Flux's HelmReleaseStatus: what the reconciler observed and did.
type Status struct {
	// ObservedGeneration is the last generation reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ObservedPostRenderersDigest is the digest of the post-renderers of
	// the last successful reconcile.
	ObservedPostRenderersDigest string `json:"observedPostRenderersDigest,omitempty"`
	// ObservedCommonMetadataDigest is the digest of the common metadata of
	// the last successful reconcile.
	ObservedCommonMetadataDigest string `json:"observedCommonMetadataDigest,omitempty"`
	// LastAttemptedGeneration is the last generation attempted.
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`
	// Conditions of the release.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// HelmChart is the namespace/name of the HelmChart used.
	HelmChart string `json:"helmChart,omitempty"`
	// StorageNamespace where the current release is stored.
	StorageNamespace string `json:"storageNamespace,omitempty"`
	// History of Helm releases up to the last successful one, newest
	// first.
	History Snapshots `json:"history,omitempty"`
	// LastAttemptedReleaseAction is install or upgrade; it picks the
	// active remediation.
	LastAttemptedReleaseAction ReleaseAction `json:"lastAttemptedReleaseAction,omitempty"`

	// +optional

	// LastAttemptedReleaseActionDuration is how long the last install or
	// upgrade took, hooks and wait included (Flux 2.9).
	LastAttemptedReleaseActionDuration *metav1.Duration `json:"lastAttemptedReleaseActionDuration,omitempty"`
	// Failures counts reconcile failures against the desired state.
	Failures int64 `json:"failures,omitempty"`
	// InstallFailures counts install failures against the desired state.
	InstallFailures int64 `json:"installFailures,omitempty"`
	// UpgradeFailures counts upgrade failures against the desired state.
	UpgradeFailures int64 `json:"upgradeFailures,omitempty"`
	// LastAttemptedRevision is the chart version of the last attempt
	// (with +digest for OCI sources).
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`
	// LastAttemptedRevisionDigest is the OCI digest of the last attempt.
	LastAttemptedRevisionDigest string `json:"lastAttemptedRevisionDigest,omitempty"`
	// LastAttemptedValuesChecksum is the SHA-1 of the values of the last
	// attempt. Deprecated: use LastAttemptedConfigDigest.
	LastAttemptedValuesChecksum string `json:"lastAttemptedValuesChecksum,omitempty"`
	// LastReleaseRevision is the revision of the last successful release.
	// Deprecated: use History.
	LastReleaseRevision int `json:"lastReleaseRevision,omitempty"`
	// LastAttemptedConfigDigest is the digest of the values of the last
	// attempt.
	LastAttemptedConfigDigest string `json:"lastAttemptedConfigDigest,omitempty"`
	// LastHandledForceAt is the last force request handled.
	LastHandledForceAt string `json:"lastHandledForceAt,omitempty"`
	// LastHandledResetAt is the last reset request handled.
	LastHandledResetAt string `json:"lastHandledResetAt,omitempty"`
	// LastHandledReconcileAt is the last reconcile request handled.
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// Inventory lists the objects the release applied.
	Inventory *ResourceInventory `json:"inventory,omitempty"`
}

// ResourceInventory lists the objects a release applied.
type ResourceInventory struct {
	// Entries of the inventory.
	Entries []ResourceRef `json:"entries"`
}

// ResourceRef locates one object of an inventory.
type ResourceRef struct {
	// ID is namespace_name_group_kind.
	ID string `json:"id"`
	// Version is the object's API version.
	Version string `json:"v"`
}

// ClearHistory forgets the history.
func (in *Status) ClearHistory() { in.History = nil }

// ClearFailures resets the failure counters.
func (in *Status) ClearFailures() {
	in.Failures = 0
	in.InstallFailures = 0
	in.UpgradeFailures = 0
}

// SetCondition adds or updates the condition of c.Type. LastTransitionTime
// changes only when the status does; callers set it from their clock (a
// zero value is filled with the current time by apimachinery).
func (in *Status) SetCondition(c metav1.Condition) {
	apimeta.SetStatusCondition(&in.Conditions, c)
}

// Mark sets the condition typ to status, with reason and message msg,
// observed at generation gen: SetCondition of that condition with
// LastTransitionTime now, which it keeps only when the status changes
// (an unchanged status keeps the time it last changed).
func (in *Status) Mark(typ string, status metav1.ConditionStatus, reason, msg string, gen int64, now metav1.Time) {
	in.SetCondition(metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen, LastTransitionTime: now})
}

// MarkTrue sets the condition typ True (see Mark).
func (in *Status) MarkTrue(typ, reason, msg string, gen int64, now metav1.Time) {
	in.Mark(typ, metav1.ConditionTrue, reason, msg, gen, now)
}

// MarkFalse sets the condition typ False (see Mark).
func (in *Status) MarkFalse(typ, reason, msg string, gen int64, now metav1.Time) {
	in.Mark(typ, metav1.ConditionFalse, reason, msg, gen, now)
}

// MarkUnknown sets the condition typ Unknown (see Mark).
func (in *Status) MarkUnknown(typ, reason, msg string, gen int64, now metav1.Time) {
	in.Mark(typ, metav1.ConditionUnknown, reason, msg, gen, now)
}

// GetCondition returns the condition of type t, or nil.
func (in *Status) GetCondition(t string) *metav1.Condition {
	return apimeta.FindStatusCondition(in.Conditions, t)
}

// RemoveCondition removes the condition of type t.
func (in *Status) RemoveCondition(t string) {
	apimeta.RemoveStatusCondition(&in.Conditions, t)
}

// IsConditionTrue reports whether the condition of type t is True.
func (in *Status) IsConditionTrue(t string) bool {
	return apimeta.IsStatusConditionTrue(in.Conditions, t)
}

// IsReady reports whether the Release is ready in Flux's dependsOn sense:
// the Ready condition is True and status.observedGeneration equals
// metadata.generation.
func (in *Release) IsReady() bool {
	return in.Status.IsConditionTrue(ConditionReady) && in.Status.ObservedGeneration == in.Generation
}

// Helm release statuses a Snapshot records (Helm's release.Status values).
const (
	// SnapshotStatusDeployed is a release that is live.
	SnapshotStatusDeployed = "deployed"
	// SnapshotStatusSuperseded is a release replaced by a newer one.
	SnapshotStatusSuperseded = "superseded"
	// SnapshotStatusFailed is a release whose action failed.
	SnapshotStatusFailed = "failed"
	// SnapshotStatusUninstalled is a release uninstalled with history kept.
	SnapshotStatusUninstalled = "uninstalled"
)

// Helm hook phases a TestHookStatus records.
const (
	// HookPhaseSucceeded is a test hook that passed.
	HookPhaseSucceeded = "Succeeded"
	// HookPhaseFailed is a test hook that failed.
	HookPhaseFailed = "Failed"
	// HookPhaseRunning is a test hook still running.
	HookPhaseRunning = "Running"
)

// Snapshots is a release history, newest first.
type Snapshots []*Snapshot

// defaultMaxHistory is how many snapshots Truncate keeps when none of
// the older ones is a rollback target, as Flux does.
const defaultMaxHistory = 5

// SortByVersion sorts the snapshots newest (highest Helm revision) first.
func (in Snapshots) SortByVersion() {
	sort.SliceStable(in, func(i, j int) bool { return in[i].Version > in[j].Version })
}

// Latest returns the newest snapshot, or nil.
func (in Snapshots) Latest() *Snapshot {
	if len(in) == 0 {
		return nil
	}
	in.SortByVersion()
	return in[0]
}

// Previous returns the newest snapshot after the latest one that was
// deployed or superseded and, unless ignoreTests, has no failed test: the
// rollback target. It returns nil when there is none.
func (in Snapshots) Previous(ignoreTests bool) *Snapshot {
	in.SortByVersion()
	for _, s := range in[min(1, len(in)):] {
		if s.healthyTarget(ignoreTests) {
			return s
		}
	}
	return nil
}

// Truncate drops every snapshot older than the rollback target (see
// Previous), keeping the history up to the last successful release. When
// no older snapshot is a rollback target (every one failed), it keeps the
// newest 5, as Flux does, so a release that keeps failing does not grow
// its status without bound.
func (in *Snapshots) Truncate(ignoreTests bool) {
	h := *in
	h.SortByVersion()
	for i := 1; i < len(h); i++ {
		if h[i].healthyTarget(ignoreTests) {
			*in = h[:i+1]
			return
		}
	}
	in.TruncateIgnoringPreviousSnapshots()
}

// TruncateIgnoringPreviousSnapshots keeps the newest 5 snapshots whatever
// their status: the history of a release with the RetryOnFailure
// strategy, which never rolls back and so needs no rollback target.
func (in *Snapshots) TruncateIgnoringPreviousSnapshots() {
	in.SortByVersion()
	if len(*in) > defaultMaxHistory {
		*in = (*in)[:defaultMaxHistory]
	}
}

func (in *Snapshot) healthyTarget(ignoreTests bool) bool {
	if in.Status != SnapshotStatusDeployed && in.Status != SnapshotStatusSuperseded {
		return false
	}
	return ignoreTests || !in.HasTestInPhase(HookPhaseFailed)
}

// SnapshotAPIVersion is the format of the snapshots helmfleet writes: the
// way their Digest is computed (releaseDigest), distinct from Flux's
// snapshot formats (apiVersion v2, and none for its legacy ones).
const SnapshotAPIVersion = "helmfleet.io/v1"

// Snapshot records one Helm release revision.
type Snapshot struct {
	// APIVersion of the snapshot format: SnapshotAPIVersion for those
	// helmfleet writes. The Digest of a snapshot in any other format, or
	// none (Flux's legacy snapshots), is not checked.
	APIVersion string `json:"apiVersion,omitempty"`
	// Digest of the Helm release object.
	Digest string `json:"digest"`
	// Name of the Helm release.
	Name string `json:"name"`
	// Namespace of the Helm release.
	Namespace string `json:"namespace"`
	// Version is the Helm revision.
	Version int `json:"version"`
	// Status is the Helm release status (deployed, failed, …).
	Status string `json:"status"`
	// ChartName of the release's chart.
	ChartName string `json:"chartName"`
	// ChartVersion of the release's chart.
	ChartVersion string `json:"chartVersion"`
	// AppVersion of the release's chart.
	AppVersion string `json:"appVersion,omitempty"`
	// ConfigDigest is the digest of the release's values.
	ConfigDigest string `json:"configDigest"`
	// FirstDeployed is when the release was first deployed.
	FirstDeployed metav1.Time `json:"firstDeployed"`
	// LastDeployed is when this revision was deployed.
	LastDeployed metav1.Time `json:"lastDeployed"`
	// Deleted is when the release was uninstalled.
	Deleted metav1.Time `json:"deleted,omitempty"`
	// TestHooks are the test hooks run for this revision, by name; nil
	// until tests ran.
	TestHooks *map[string]*TestHookStatus `json:"testHooks,omitempty"`
	// OCIDigest is the digest of the OCI chart artifact.
	OCIDigest string `json:"ociDigest,omitempty"`
	// Action is the action that wrote this revision: install, upgrade
	// or rollback (Flux 2.9).
	Action string `json:"action,omitempty"`
}

// FullReleaseName returns namespace/name.vVersion, as Helm prints it.
func (in *Snapshot) FullReleaseName() string {
	return fmt.Sprintf("%s/%s.v%d", in.Namespace, in.Name, in.Version)
}

// VersionedChartName returns chartName@chartVersion.
func (in *Snapshot) VersionedChartName() string {
	return in.ChartName + "@" + in.ChartVersion
}

// HasBeenTested reports whether the tests of this revision ran to a
// result, as Flux decides it: an empty map counts (no test selected), a
// failed hook counts (the run failed), and otherwise every hook must have
// succeeded. A run with a hook still running, not started or in an
// unknown phase has not been tested yet.
func (in *Snapshot) HasBeenTested() bool {
	if in == nil || in.TestHooks == nil {
		return false
	}
	hooks := *in.TestHooks
	if len(hooks) == 0 || in.HasTestInPhase(HookPhaseFailed) {
		return true
	}
	for _, h := range hooks {
		if h == nil || h.Phase != HookPhaseSucceeded {
			return false
		}
	}
	return true
}

// GetTestHooks returns the test hooks, or nil.
func (in *Snapshot) GetTestHooks() map[string]*TestHookStatus {
	if in.TestHooks == nil {
		return nil
	}
	return *in.TestHooks
}

// SetTestHooks records the test hooks run for this revision.
func (in *Snapshot) SetTestHooks(hooks map[string]*TestHookStatus) {
	in.TestHooks = &hooks
}

// HasTestInPhase reports whether a test hook is in phase.
func (in *Snapshot) HasTestInPhase(phase string) bool {
	for _, h := range in.GetTestHooks() {
		if h != nil && h.Phase == phase {
			return true
		}
	}
	return false
}

// TestHookStatus records one run of a test hook.
type TestHookStatus struct {
	// LastStarted is when the hook started.
	LastStarted metav1.Time `json:"lastStarted,omitempty"`
	// LastCompleted is when the hook completed.
	LastCompleted metav1.Time `json:"lastCompleted,omitempty"`
	// Phase is the hook's phase (Succeeded, Failed, …).
	Phase string `json:"phase,omitempty"`
}

// SummarizeReady sets the Ready condition from the Remediated,
// TestSuccess and Released conditions, as Flux's helm-controller does
// after every action: the newest of them by observed generation, in that
// order of priority, gives Ready its status, reason and message (for the
// release's current generation), except that a remediation, even a
// successful one, makes Ready False. TestSuccess counts only while tests
// are enabled and their failures not ignored, and is removed when tests
// are disabled. A Ready True removes any Stalled condition. A status
// without conditions is left alone.
func (in *Release) SummarizeReady() {
	order := []string{ConditionRemediated, ConditionReleased}
	if t := in.GetTest(); t.Enable && !t.IgnoreFailures {
		order = []string{ConditionRemediated, ConditionTestSuccess, ConditionReleased}
	}
	if !in.GetTest().Enable {
		in.Status.RemoveCondition(ConditionTestSuccess)
	}
	if len(in.Status.Conditions) == 0 {
		return
	}
	pos := func(typ string) (int, bool) {
		for i, t := range order {
			if t == typ {
				return i, true
			}
		}
		return 0, false
	}
	// Flux sorts with this very comparison, which is no strict order:
	// conditions of different generations keep their relative order
	// unless the newer one also has the higher priority. A stable sort of
	// a copy picks the same first condition without reordering the
	// status.
	conds := append([]metav1.Condition(nil), in.Status.Conditions...)
	sort.SliceStable(conds, func(i, j int) bool {
		ip, ok := pos(conds[i].Type)
		if !ok {
			return false
		}
		jp, ok := pos(conds[j].Type)
		if !ok {
			return true
		}
		return conds[i].ObservedGeneration >= conds[j].ObservedGeneration && ip < jp
	})
	first := conds[0]
	status := first.Status
	if first.Type == ConditionRemediated {
		status = metav1.ConditionFalse
	}
	if status == metav1.ConditionTrue {
		in.Status.RemoveCondition(ConditionStalled)
	}
	in.Status.Mark(ConditionReady, status, first.Reason, first.Message, in.Generation, first.LastTransitionTime)
}

// Condition reasons helmfleet adds to Flux's.
const (
	// ReasonPendingRelease: a release stuck pending was unlocked.
	ReasonPendingRelease = "PendingRelease"
	// ReasonStateError: the state of the release could not be read.
	ReasonStateError = "StateError"
	// ReasonPostRendererError: spec.postRenderers or commonMetadata
	// cannot be built.
	ReasonPostRendererError = "PostRendererError"
)

// ConditionSourceVerified says whether the chart passed the signature
// verification its source asks for (spec.chart.spec.verify, or the
// spec.verify of the OCIRepository or HelmChart of spec.chartRef); Flux's
// source-controller sets it on the HelmChart or OCIRepository. It is
// absent when no verification is asked for.
const ConditionSourceVerified = "SourceVerified"

// Reasons of ConditionSourceVerified, as Flux sets them.
const (
	// ReasonVerificationSucceeded: the chart's signature verified.
	ReasonVerificationSucceeded = "Succeeded"
	// ReasonVerificationError: the chart was refused, unverified.
	ReasonVerificationError = "VerificationError"
)
