package reconcile_test

import (
	"github.com/helmfleet/helmfleet/internal/fixture"
	"strings"

	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// health scripts an in-memory cluster: kinds listed are not ready (or
// failed), everything else is ready.
type health struct {
	notReady map[string]string
	failed   map[string]string
}

func (h *health) fn(u *unstructured.Unstructured) memory.Health {
	if msg, ok := h.failed[u.GetKind()]; ok {
		return memory.Health{Failed: true, Message: msg}
	}
	if msg, ok := h.notReady[u.GetKind()]; ok {
		return memory.Health{Message: msg}
	}
	return memory.Health{Ready: true}
}

func newHealthyCluster(h *health) *memory.Cluster {
	return memory.New("member1", memory.WithHealth(h.fn))
}

func cond(rel *release.Release, typ string) string {
	c := rel.Status.GetCondition(typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func TestRetriesExhaustedThenSpecChanges(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "image pull back-off"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}

	// Retries 0 (the default) and remediateLastFailure false: the failed
	// install stays as it is and the release stalls, loudly.
	res, err := rec.Reconcile(ctx, c, rel)
	var stalled *reconcile.StalledError
	require.ErrorAs(t, err, &stalled)
	assert.Equal(t, release.ReasonRetriesExceeded, stalled.Reason)
	assert.Contains(t, err.Error(), "image pull back-off")
	// The stall names the release and the cluster once, not again for
	// the failed install behind it; the failure is still there, whole.
	assert.Equal(t, 1, strings.Count(err.Error(), "release apps/podinfo on cluster member1"), err.Error())
	assert.Contains(t, err.Error(), "helm install failed: ")
	var failed *reconcile.ActionError
	require.ErrorAs(t, err, &failed, "the failed install is still in the chain")
	assert.Equal(t, reconcile.ActionInstall, failed.Action)
	assert.Equal(t, reconcile.NextStalled, res.Next)
	assert.Equal(t, "True/RetriesExceeded", cond(rel, release.ConditionStalled))
	// As in Flux, Ready keeps saying what failed; Stalled says why
	// nothing more is tried.
	assert.Equal(t, "False/InstallFailed", cond(rel, release.ConditionReady))
	assert.Contains(t, rel.Status.GetCondition(release.ConditionReady).Message, "image pull back-off")
	assert.Equal(t, []string{"6.5.0 failed"}, history(t, c))
	assert.Contains(t, c.Summary(), "Deployment apps/podinfo", "no remediation: the failed install's objects stay")

	// Reconciling again changes nothing.
	res, err = rec.Reconcile(ctx, c, rel)
	require.ErrorAs(t, err, &stalled)
	assert.Empty(t, res.Actions)
	assert.Equal(t, []string{"6.5.0 failed"}, history(t, c))

	// The spec changes (a fixed image): counters reset, the failed
	// release is upgraded and becomes ready.
	h.notReady = nil
	rel.Spec.Values = map[string]any{"replicaCount": 2, "image": map[string]any{"tag": "6.5.0-fixed"}}
	rel.Generation = 2
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Equal(t, int64(0), rel.Status.InstallFailures)
	assert.Empty(t, cond(rel, release.ConditionStalled))
	assert.Equal(t, "True/UpgradeSucceeded", cond(rel, release.ConditionReady))
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.0 deployed"}, history(t, c))
}

func TestResetRequestClearsStall(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "pending"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	_, err := rec.Reconcile(ctx, c, rel)
	var stalled *reconcile.StalledError
	require.ErrorAs(t, err, &stalled)

	h.notReady = nil
	// As in Flux, the reset token counts only when it repeats the
	// reconcile request's (what `flux reconcile hr --reset` writes).
	rel.Annotations = map[string]string{release.ReconcileRequestAnnotation: "2026-12-02T12:00:00Z", release.ResetRequestAnnotation: "2026-12-02T12:00:00Z"}
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Equal(t, "2026-12-02T12:00:00Z", rel.Status.LastHandledResetAt)
}

func TestUpgradeHookFailsThenRollback(t *testing.T) {
	ctx := context.Background()
	h := &health{}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: time.Second}
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 1}}
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []string{"1 install"}, actions(rel), "status.history[].action")

	// The new version's pre-upgrade migration Job fails.
	h.failed = map[string]string{"Job": "migration: relation exists"}
	rel.Spec.Chart.Spec.Version = "6.5.1"
	rel.Spec.Values = map[string]any{"replicaCount": 3, "hooks": map[string]any{"preUpgrade": true}}
	rel.Generation = 2
	res, err := rec.Reconcile(ctx, c, rel)
	var ae *reconcile.ActionError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, reconcile.ActionUpgrade, ae.Action)
	assert.Contains(t, err.Error(), "migration: relation exists")
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionRollback}, res.Actions)
	assert.Equal(t, reconcile.NextRequeue, res.Next)
	assert.Equal(t, "True/RollbackSucceeded", cond(rel, release.ConditionRemediated))
	assert.Equal(t, "False/UpgradeFailed", cond(rel, release.ConditionReleased))
	assert.Equal(t, "True/ProgressingWithRetry", cond(rel, release.ConditionReconciling))
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.1 failed", "6.5.0 deployed"}, history(t, c))
	assert.Equal(t, int64(2), fixture.Replicas(t, c), "the rollback restored revision 1's objects")
	assert.Equal(t, []string{"3 rollback", "2 upgrade", "1 install"}, actions(rel), "status.history[].action")

	// The second attempt fails too: retries are exhausted after the
	// rollback, and the release stalls on the good revision.
	res, err = rec.Reconcile(ctx, c, rel)
	var stalled *reconcile.StalledError
	require.ErrorAs(t, err, &stalled)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionRollback}, res.Actions)
	assert.Equal(t, reconcile.NextStalled, res.Next)
	assert.Equal(t, int64(2), rel.Status.UpgradeFailures)
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.1 failed", "6.5.0 superseded", "6.5.1 failed", "6.5.0 deployed"}, history(t, c))
	assert.Equal(t, int64(2), fixture.Replicas(t, c))
}

// TestUninstallRemediationIsHonouredLoudly: upgrade.remediation.strategy
// uninstall uninstalls a failed upgrade as Flux does, even when the
// previous revision was deployed and healthy, and both Plan (before the
// upgrade) and the Result (when it remediates) say so.
func TestUninstallRemediationIsHonouredLoudly(t *testing.T) {
	ctx := context.Background()
	h := &health{}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 2, Strategy: ptr(release.UninstallRemediationStrategy)}}
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	c.SetHealth(fixture.BrokenVersion("6.5.1"))
	rel.Spec.Chart.Spec.Version = "6.5.1"
	rel.Generation = 2
	const warning = "release apps/podinfo: remediation would uninstall revision 1, which is deployed and healthy (apps/podinfo.v1 with chart podinfo@6.5.0; upgrade.remediation.strategy: uninstall)"
	plan := rec.Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Equal(t, reconcile.ActionUpgrade, plan.Action)
	assert.Contains(t, plan.Warnings, warning, "Plan says before the upgrade what its failure would remove")

	res, err := rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionUninstall}, res.Actions)
	assert.Equal(t, "True/UninstallSucceeded", cond(rel, release.ConditionRemediated))
	assert.Equal(t, []string{warning}, res.Warnings, "said once, though both the upgrade and the remediation were decided")
	assert.Empty(t, c.Summary(), "the configured uninstall removed the release, as in Flux")
	assert.Nil(t, rel.Status.GetCondition(release.ConditionFieldWarnings), "not a field warning")
}

func TestFailingTestIsRemediated(t *testing.T) {
	ctx := context.Background()
	h := &health{}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: time.Second}
	rel.Spec.Test = &release.Test{Enable: true}
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 3}}

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionTest}, res.Actions)
	assert.Equal(t, "True/TestSucceeded", cond(rel, release.ConditionTestSuccess))
	assert.Equal(t, "True/TestSucceeded", cond(rel, release.ConditionReady))
	require.NotNil(t, rel.Status.History.Latest().TestHooks)
	assert.Equal(t, "Succeeded", rel.Status.History.Latest().GetTestHooks()["podinfo-test-connection"].Phase)

	// In sync and tested: nothing to do.
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions)

	// The upgrade succeeds but its test fails: rolled back.
	h.failed = map[string]string{"Pod": "connection refused"}
	rel.Spec.Values = map[string]any{"replicaCount": 4}
	rel.Generation = 2
	res, err = rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection refused")
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionTest, reconcile.ActionRollback}, res.Actions)
	assert.Equal(t, "False/TestFailed", cond(rel, release.ConditionTestSuccess))
	assert.Equal(t, "True/RollbackSucceeded", cond(rel, release.ConditionRemediated))
	assert.Equal(t, int64(2), fixture.Replicas(t, c))

	// Ignored test failures do not remediate.
	rel.Spec.Test.IgnoreFailures = true
	rel.Generation = 3
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionTest}, res.Actions)
	assert.Equal(t, "False/TestFailed", cond(rel, release.ConditionTestSuccess))
	assert.Equal(t, metav1.ConditionTrue, rel.Status.GetCondition(release.ConditionReady).Status)
	assert.Equal(t, int64(4), fixture.Replicas(t, c))
}

func TestTestFilters(t *testing.T) {
	ctx := context.Background()
	c := newHealthyCluster(&health{failed: map[string]string{"Pod": "should not run"}})
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Test = &release.Test{Enable: true, Filters: []release.Filter{{Name: "podinfo-test-connection", Exclude: true}}}
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err, "the only (failing) test is excluded")
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionTest}, res.Actions)
	assert.Empty(t, rel.Status.History.Latest().GetTestHooks())
}

// TestRollbackTargetGoneFromStorage: Flux v1.6.3 (atomic_release.go,
// actionForState) attempts the upgrade again when the rollback target's
// record has disappeared from Helm's storage (ErrReleaseDisappeared); it
// stalls with MissingRollbackTarget only when the history has no target
// at all. helmfleet stalled in both cases before.
func TestRollbackTargetGoneFromStorage(t *testing.T) {
	ctx := context.Background()
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 2}}
	var c *memory.Cluster
	// The new revision (5 replicas) never becomes ready, and while Helm
	// waits for it, revision 1 — the rollback target — vanishes from
	// Helm's storage (as when someone deletes the release Secret).
	c = memory.New("member1", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
		if n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas"); u.GetKind() == "Deployment" && n == 5 {
			_, _ = c.Storage("apps").Delete("podinfo", 1)
			return memory.Health{Message: "crash loop"}
		}
		return memory.Health{Ready: true}
	}))
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	rel.Spec.Values = map[string]any{"replicaCount": 5}
	rel.Generation = 2
	res, err := rec.Reconcile(ctx, c, rel)
	var ae *reconcile.ActionError
	require.ErrorAs(t, err, &ae)
	assert.Contains(t, err.Error(), "crash loop")
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions, "no rollback: its target is gone; the upgrade already ran this reconcile")
	assert.Equal(t, reconcile.NextRequeue, res.Next)
	assert.Empty(t, cond(rel, release.ConditionStalled))
	assert.Equal(t, []string{"6.5.0 failed"}, history(t, c))

	// The next reconcile attempts the upgrade again instead of stalling.
	res, err = rec.Reconcile(ctx, c, rel)
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Empty(t, cond(rel, release.ConditionStalled))
	assert.Equal(t, []string{"6.5.0 failed", "6.5.0 failed"}, history(t, c))
	assert.Equal(t, int64(2), rel.Status.UpgradeFailures)
}

// TestMissingRollbackTarget: no snapshot in the history can be rolled back
// to (the install failed too), so remediation stalls, loudly.
func TestMissingRollbackTarget(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "crash loop"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 2}}
	_, err := rec.Reconcile(ctx, c, rel)
	var stalled *reconcile.StalledError
	require.ErrorAs(t, err, &stalled)
	assert.Equal(t, release.ReasonRetriesExceeded, stalled.Reason, "the install has no retries")

	rel.Spec.Values = map[string]any{"replicaCount": 5}
	rel.Generation = 2
	res, err := rec.Reconcile(ctx, c, rel)
	require.ErrorAs(t, err, &stalled)
	assert.Equal(t, release.ReasonMissingRollbackTarget, stalled.Reason)
	assert.Contains(t, err.Error(), "crash loop", "the failure that needed the rollback is part of the message")
	var notReady *release.NotReadyError
	assert.ErrorAs(t, err, &notReady, "the stall unwraps to the failure behind it")
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	assert.Equal(t, reconcile.NextStalled, res.Next)
	assert.Equal(t, "True/MissingRollbackTarget", cond(rel, release.ConditionStalled))
	assert.Equal(t, []string{"6.5.0 failed", "6.5.0 failed"}, history(t, c))
}

func TestRetryOnFailure(t *testing.T) {
	ctx := context.Background()
	h := &health{notReady: map[string]string{"Deployment": "slow"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Millisecond}
	rel.Spec.Install = &release.Install{
		Strategy:    &release.InstallStrategy{Name: release.ActionStrategyRetryOnFailure, RetryInterval: &metav1.Duration{Duration: time.Minute}},
		Remediation: &release.InstallRemediation{Retries: -1},
	}
	res, err := rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, res.Actions, "no remediation with RetryOnFailure")
	assert.Equal(t, reconcile.NextRequeue, res.Next)
	assert.Equal(t, time.Minute, res.RequeueAfter)

	h.notReady = nil
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions, "the retry upgrades the failed release")
}

func TestDriftDetectionAndCorrection(t *testing.T) {
	ctx := context.Background()
	c := newHealthyCluster(&health{})
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled}
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	// Another manager scales the Deployment and edits the ConfigMap.
	drift := func() {
		dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
		require.NoError(t, err)
		delete(dep.Object, "status")
		require.NoError(t, unstructured.SetNestedField(dep.Object, int64(9), "spec", "replicas"))
		_, err = c.Update(ctx, dep, "kubectl-edit")
		require.NoError(t, err)
	}
	drift()
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionCorrectDrift}, res.Actions)
	require.NotNil(t, res.Drift)
	assert.Equal(t, 1, res.Drift.Count("Modified"))
	assert.Equal(t, int64(2), fixture.Replicas(t, c), "corrected back to the manifest")
	assert.Equal(t, "False/NoDrift", cond(rel, release.ConditionDrifted))

	// Ignore /spec/replicas on Deployments: an HPA's
	// scaling is not drift.
	rel.Spec.DriftDetection.Ignore = []release.IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &release.Selector{Kind: "Deployment"}}}
	drift()
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions)
	assert.Equal(t, int64(9), fixture.Replicas(t, c))

	// Warn mode reports without correcting.
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionWarn}
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions)
	assert.Equal(t, reconcile.StateDrifted, res.State)
	assert.Equal(t, "True/DriftDetected", cond(rel, release.ConditionDrifted))
	assert.Equal(t, int64(9), fixture.Replicas(t, c))

	// A deleted object is recreated.
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled}
	require.NoError(t, c.Delete(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"}, release.DeleteOptions{}))
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionCorrectDrift}, res.Actions)
	assert.Contains(t, c.Summary(), "ConfigMap apps/podinfo")
}

func TestTargetNamespaceChangeReinstalls(t *testing.T) {
	ctx := context.Background()
	c := newHealthyCluster(&health{})
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	rel.Spec.TargetNamespace = "web"
	rel.Generation = 2
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUninstall, reconcile.ActionInstall}, res.Actions)
	assert.Equal(t, "web-podinfo", res.Helm.Name, "the default release name follows the target namespace")
	assert.Equal(t, []string{
		"ConfigMap web/web-podinfo", "Deployment web/web-podinfo", "Ingress web/web-podinfo",
		"Secret web/web-podinfo", "Service web/web-podinfo",
	}, c.Summary())
}

func TestCRDPolicies(t *testing.T) {
	ctx := context.Background()
	crd := func(desc string) *chart.File {
		return &chart.File{Name: "crds/widgets.yaml", Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        description: ` + desc + "\n")}
	}
	desc := "v1"
	charts := reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
		if err == nil {
			ch.Files = append(ch.Files, crd(desc))
		}
		return &reconcile.Chart{Chart: ch}, err
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: time.Millisecond})
	require.NoError(t, err)
	crdRef := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, Name: "widgets.example.com"}
	description := func(c *memory.Cluster) string {
		obj, err := c.Get(ctx, crdRef)
		require.NoError(t, err)
		versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
		d, _, _ := unstructured.NestedString(versions[0].(map[string]any), "schema", "openAPIV3Schema", "description")
		return d
	}

	for _, tc := range []struct {
		name     string
		policy   release.CRDsPolicy
		want     string
		absentV1 bool
	}{
		{"Create leaves existing CRDs alone", release.Create, "v1", false},
		{"CreateReplace replaces them", release.CreateReplace, "v2", false},
		{"Skip does not create them", release.Skip, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc = "v1"
			c := newHealthyCluster(&health{})
			rel := fixture.Release()
			rel.Spec.Install = &release.Install{CRDs: tc.policy}
			rel.Spec.Upgrade = &release.Upgrade{CRDs: tc.policy}
			_, err := rec.Reconcile(ctx, c, rel)
			require.NoError(t, err)
			if tc.absentV1 {
				_, err := c.Get(ctx, crdRef)
				assert.True(t, errors.Is(err, release.ErrNotFound))
				return
			}
			assert.Equal(t, "v1", description(c))
			desc = "v2"
			rel.Spec.Chart.Spec.Version = "6.5.1"
			rel.Generation = 2
			_, err = rec.Reconcile(ctx, c, rel)
			require.NoError(t, err)
			assert.Equal(t, tc.want, description(c))
		})
	}
}

func TestCancelledReconcileLeavesNothingPending(t *testing.T) {
	h := &health{notReady: map[string]string{"Deployment": "never"}}
	c := newHealthyCluster(h)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: time.Hour}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second, "the one-hour wait stops with the context")
	assert.Equal(t, []string{"6.5.0 failed"}, history(t, c), "Helm recorded the interrupted install as failed, not pending")

	h.notReady = nil
	rel.Generation = 2
	_, err = rec.Reconcile(context.Background(), c, rel)
	require.NoError(t, err)
}

func ptr[T any](v T) *T { return &v }

func TestPostRenderersAndCommonMetadata(t *testing.T) {
	ctx := context.Background()
	c := newHealthyCluster(&health{})
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.PostRenderers = []release.PostRenderer{{Kustomize: &release.Kustomize{
		Patches: []release.Patch{{
			Target: &release.Selector{Kind: "Deployment"},
			Patch:  "- op: add\n  path: /metadata/annotations\n  value: {team: payments}\n",
		}},
		Images: []release.Image{{Name: "ghcr.io/stefanprodan/podinfo", NewTag: "6.5.0-patched"}},
	}}}
	rel.Spec.CommonMetadata = &release.CommonMetadata{Labels: map[string]string{"platform": "helmfleet"}}
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	assert.Equal(t, "payments", dep.GetAnnotations()["team"])
	assert.Equal(t, "helmfleet", dep.GetLabels()["platform"])
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	assert.Equal(t, "ghcr.io/stefanprodan/podinfo:6.5.0-patched", containers[0].(map[string]any)["image"])
	cm, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	assert.Equal(t, "helmfleet", cm.GetLabels()["platform"], "common metadata goes on every object")
	assert.NotEmpty(t, rel.Status.ObservedPostRenderersDigest)

	// Changing only the common metadata is OutOfSync: upgrade. Like
	// Flux, helmfleet compares post-renderers and common metadata for a
	// new generation only (a spec change always is one).
	rel.Spec.CommonMetadata.Labels["platform"] = "helmfleet-v2"
	rel.Generation++
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)

	// A patch kustomize cannot apply fails the upgrade with an error
	// naming the post-renderer and the patch; the running release stays.
	rel.Spec.PostRenderers[0].Kustomize.Patches[0].Patch = "- op: frobnicate\n  path: /x\n"
	rel.Generation++
	_, err = rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "postRenderers[0].kustomize.patches[0] (target kind=Deployment)")
	assert.Contains(t, c.Summary(), "Deployment apps/podinfo")

	// A JSON 6902 patch without a target cannot be built at all: a stage
	// error before Helm runs.
	rel.Spec.PostRenderers[0].Kustomize.Patches[0] = release.Patch{Patch: "- op: remove\n  path: /spec\n"}
	rel.Generation++
	_, err = rec.Reconcile(ctx, c, rel)
	var se *reconcile.StageError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, release.ReasonPostRendererError, se.Reason)
	assert.Contains(t, err.Error(), "postRenderers[0].kustomize.patches[0]")
}
