package release

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRemediation(t *testing.T) {
	tests := []struct {
		name          string
		rem           Remediation
		failures      int64
		exhausted     bool
		lastFailure   bool
		strategy      RemediationStrategy
		ignoreDefault bool
		ignoreTests   bool
	}{
		{name: "install zero value", rem: InstallRemediation{}, failures: 1, exhausted: true, strategy: UninstallRemediationStrategy},
		{name: "install retries left", rem: InstallRemediation{Retries: 2}, failures: 2, strategy: UninstallRemediationStrategy},
		{name: "install retries used", rem: InstallRemediation{Retries: 2}, failures: 3, exhausted: true, strategy: UninstallRemediationStrategy},
		{name: "install unlimited", rem: InstallRemediation{Retries: -1}, failures: 1000, strategy: UninstallRemediationStrategy},
		{name: "install remediate last", rem: InstallRemediation{RemediateLastFailure: valuePtr(true)}, lastFailure: true, strategy: UninstallRemediationStrategy},
		{name: "install ignore tests default", rem: InstallRemediation{}, ignoreDefault: true, ignoreTests: true, strategy: UninstallRemediationStrategy},
		{name: "install ignore tests set", rem: InstallRemediation{IgnoreTestFailures: valuePtr(false)}, ignoreDefault: true, strategy: UninstallRemediationStrategy},
		{name: "upgrade zero value", rem: UpgradeRemediation{}, failures: 1, exhausted: true, strategy: RollbackRemediationStrategy},
		{name: "upgrade retries imply remediate last", rem: UpgradeRemediation{Retries: 1}, lastFailure: true, strategy: RollbackRemediationStrategy},
		{name: "upgrade remediate last off", rem: UpgradeRemediation{Retries: 1, RemediateLastFailure: valuePtr(false)}, strategy: RollbackRemediationStrategy},
		{name: "upgrade uninstall", rem: UpgradeRemediation{Strategy: valuePtr(UninstallRemediationStrategy), Retries: -1}, failures: 5, strategy: UninstallRemediationStrategy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st Status
			for range tt.failures {
				tt.rem.IncrementFailureCount(&st)
			}
			assert.Equal(t, tt.failures, tt.rem.GetFailureCount(&st))
			assert.Equal(t, tt.failures, st.InstallFailures+st.UpgradeFailures)
			assert.Equal(t, tt.exhausted, tt.rem.RetriesExhausted(&st))
			assert.Equal(t, tt.lastFailure, tt.rem.MustRemediateLastFailure())
			assert.Equal(t, tt.strategy, tt.rem.GetStrategy())
			assert.Equal(t, tt.ignoreTests, tt.rem.MustIgnoreTestFailures(tt.ignoreDefault))
		})
	}
}

func TestAccessorDefaults(t *testing.T) {
	r := &Release{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}}
	assert.Equal(t, "ns", r.GetTargetNamespace())
	assert.Equal(t, "ns", r.GetReleaseNamespace())
	assert.Equal(t, "ns", r.GetStorageNamespace())
	assert.Equal(t, 5, r.GetMaxHistory())
	assert.Equal(t, 5*time.Minute, r.GetTimeout().Duration)
	assert.True(t, r.UsePersistentClient())
	assert.Equal(t, DriftDetectionDisabled, r.GetDriftDetection().GetMode())
	assert.False(t, r.GetDriftDetection().MustDetectChanges())
	assert.Equal(t, Create, r.GetInstall().GetCRDsPolicy())
	assert.Equal(t, Create, r.GetUpgrade().GetCRDsPolicy())
	assert.Equal(t, ActionStrategy{Name: ActionStrategyRemediateOnFailure}, r.GetInstall().GetStrategy())
	assert.Equal(t, ActionStrategy{Name: ActionStrategyRemediateOnFailure}, r.GetUpgrade().GetStrategy())
	assert.Equal(t, ChartNameChangeReinstall, r.GetUpgrade().GetChartNameChangeStrategy())
	assert.Equal(t, "background", r.GetUninstall().GetDeletionPropagation())
	assert.Equal(t, time.Minute, r.GetTest().GetTimeout(metav1.Duration{Duration: time.Minute}).Duration)
	assert.Equal(t, time.Minute, r.GetRollback().GetTimeout(metav1.Duration{Duration: time.Minute}).Duration)
	assert.Nil(t, r.GetActiveRemediation())
	assert.Equal(t, "ns-a", r.GetHelmChartName())
	assert.Equal(t, "values.yaml", ValuesReference{}.GetValuesKey())

	r.Spec.TargetNamespace, r.Spec.StorageNamespace, r.Spec.MaxHistory = "t", "s", valuePtr(0)
	r.Spec.Install = &Install{Timeout: dur(time.Second), Strategy: &InstallStrategy{Name: ActionStrategyRetryOnFailure, RetryInterval: dur(time.Minute)}}
	r.Spec.DriftDetection = &DriftDetection{Mode: DriftDetectionWarn}
	r.Status.LastAttemptedReleaseAction = ReleaseActionInstall
	assert.Equal(t, "t", r.GetTargetNamespace())
	assert.Equal(t, "s", r.GetStorageNamespace())
	assert.Equal(t, 0, r.GetMaxHistory(), "0 is unlimited, not unset")
	assert.Equal(t, time.Second, r.GetInstall().GetTimeout(r.GetTimeout()).Duration)
	assert.Equal(t, ActionStrategy{Name: ActionStrategyRetryOnFailure, RetryInterval: dur(time.Minute)}, r.GetInstall().GetStrategy())
	assert.True(t, r.GetDriftDetection().MustDetectChanges())
	assert.Equal(t, InstallRemediation{}, r.GetActiveRemediation())
	r.Status.LastAttemptedReleaseAction = ReleaseActionUpgrade
	assert.Equal(t, UpgradeRemediation{}, r.GetActiveRemediation())
}

func TestConditions(t *testing.T) {
	r := &Release{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	assert.False(t, r.IsReady())
	at := metav1.NewTime(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	r.Status.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonInstallSucceeded, LastTransitionTime: at})
	assert.False(t, r.IsReady(), "observedGeneration lags")
	r.Status.ObservedGeneration = 2
	assert.True(t, r.IsReady())
	assert.Equal(t, ReasonInstallSucceeded, r.Status.GetCondition(ConditionReady).Reason)

	later := metav1.NewTime(at.Add(time.Hour))
	r.Status.SetCondition(metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonUpgradeSucceeded, LastTransitionTime: later})
	assert.Equal(t, at, r.Status.GetCondition(ConditionReady).LastTransitionTime, "no transition without a status change")
	assert.Equal(t, ReasonUpgradeSucceeded, r.Status.GetCondition(ConditionReady).Reason)

	r.Status.RemoveCondition(ConditionReady)
	assert.Nil(t, r.Status.GetCondition(ConditionReady))
	assert.False(t, r.Status.IsConditionTrue(ConditionReady))

	r.Status.Failures, r.Status.InstallFailures, r.Status.UpgradeFailures = 1, 2, 3
	r.Status.ClearFailures()
	assert.Zero(t, r.Status.Failures+r.Status.InstallFailures+r.Status.UpgradeFailures)
	r.Status.History = Snapshots{{}}
	r.Status.ClearHistory()
	assert.Nil(t, r.Status.History)
}

func TestSnapshots(t *testing.T) {
	failedTest := map[string]*TestHookStatus{"t": {Phase: HookPhaseFailed}}
	passedTest := map[string]*TestHookStatus{"t": {Phase: HookPhaseSucceeded}}
	snap := func(v int, status string, hooks map[string]*TestHookStatus) *Snapshot {
		s := &Snapshot{Name: "r", Namespace: "ns", Version: v, Status: status, ChartName: "c", ChartVersion: "1.0.0"}
		if hooks != nil {
			s.SetTestHooks(hooks)
		}
		return s
	}
	h := Snapshots{
		snap(5, SnapshotStatusFailed, nil),
		snap(4, SnapshotStatusSuperseded, failedTest),
		snap(3, SnapshotStatusFailed, nil),
		snap(2, SnapshotStatusSuperseded, passedTest),
		snap(1, SnapshotStatusSuperseded, nil),
	}
	assert.Equal(t, 5, h.Latest().Version)
	assert.Equal(t, 2, h.Previous(false).Version, "skips failed releases and failed tests")
	assert.Equal(t, 4, h.Previous(true).Version, "ignoring tests")
	assert.Nil(t, Snapshots{}.Latest())
	assert.Nil(t, Snapshots{}.Previous(false))
	assert.Nil(t, Snapshots{h[0]}.Previous(true))

	truncated := append(Snapshots(nil), h...)
	truncated.Truncate(false)
	assert.Len(t, truncated, 4, "kept up to the rollback target")
	truncated = append(Snapshots(nil), h...)
	truncated.Truncate(true)
	assert.Len(t, truncated, 2)

	s := h[1]
	require.True(t, s.HasBeenTested())
	assert.True(t, s.HasTestInPhase(HookPhaseFailed))
	assert.False(t, h[0].HasBeenTested())
	assert.Nil(t, h[0].GetTestHooks())
	assert.Equal(t, "ns/r.v4", s.FullReleaseName())
	assert.Equal(t, "c@1.0.0", s.VersionedChartName())
}

func TestDeepCopy(t *testing.T) {
	objs, err := decodeFile(t, "allfields.yaml")
	require.NoError(t, err)
	r := objs.Releases[0]
	c := r.DeepCopy()
	require.Equal(t, r, c)

	c.Labels["x"] = "y"
	c.Spec.Values["image"].(map[string]any)["tag"] = "changed"
	c.Spec.Values["ingress"].(map[string]any)["hosts"].([]any)[0] = "changed"
	c.Spec.Install.Remediation.Retries = 99
	*c.Spec.MaxHistory = 1
	c.Spec.DriftDetection.Ignore[0].Paths[0] = "/changed"
	(*c.Status.History[0].TestHooks)["podinfo-jwt-test"].Phase = "changed"
	c.Status.Conditions[0].Reason = "changed"

	again, err := decodeFile(t, "allfields.yaml")
	require.NoError(t, err)
	assert.Equal(t, again.Releases[0], r, "the original is untouched")
	assert.Nil(t, (*Release)(nil).DeepCopy())
}

// Mark and its shorthands set a condition for a generation and keep the
// time of its last transition while its status stays the same, as Flux's
// conditions.MarkTrue/MarkFalse do: kstatus and alerts read that time.
func TestStatusMark(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	t2 := metav1.NewTime(t0.Add(2 * time.Minute))
	var st Status
	st.MarkFalse(ConditionReady, ReasonInstallFailed, "boom", 1, t0)
	st.MarkFalse(ConditionReady, ReasonUpgradeFailed, "boom again", 2, t1)
	assert.Equal(t, []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionFalse, Reason: ReasonUpgradeFailed,
		Message: "boom again", ObservedGeneration: 2, LastTransitionTime: t0}}, st.Conditions, "same status: the transition time stays")

	st.MarkTrue(ConditionReady, ReasonUpgradeSucceeded, "ok", 2, t2)
	st.MarkUnknown(ConditionReconciling, ReasonProgressing, "working", 3, t2)
	st.Mark(ConditionStalled, metav1.ConditionFalse, ReasonRetriesExceeded, "", 3, t1)
	assert.Equal(t, []metav1.Condition{
		{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonUpgradeSucceeded, Message: "ok", ObservedGeneration: 2, LastTransitionTime: t2},
		{Type: ConditionReconciling, Status: metav1.ConditionUnknown, Reason: ReasonProgressing, Message: "working", ObservedGeneration: 3, LastTransitionTime: t2},
		{Type: ConditionStalled, Status: metav1.ConditionFalse, Reason: ReasonRetriesExceeded, ObservedGeneration: 3, LastTransitionTime: t1},
	}, st.Conditions)
}
