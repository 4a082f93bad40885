package reconcile_test

import (
	"github.com/helmfleet/helmfleet/internal/fixture"

	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values"
)

func history(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	hist, err := action.NewHistory(cfg).Run("podinfo")
	require.NoError(t, err)
	var out []string
	for _, h := range hist {
		out = append(out, h.Chart.Metadata.Version+" "+h.Info.Status.String())
	}
	return out
}

func TestReconcileInstallUpgradeNoopUninstall(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionInstall, res.Last())
	assert.Equal(t, 1, res.Helm.Version)
	assert.Equal(t, 10*time.Minute, res.RequeueAfter)
	assert.Equal(t, []string{"6.5.0 deployed"}, history(t, c))
	assert.Equal(t, []string{
		"ConfigMap apps/podinfo", "Deployment apps/podinfo", "Ingress apps/podinfo",
		"Secret apps/podinfo", "Service apps/podinfo",
	}, c.Summary(), "release name podinfo contains the chart name, so objects are called podinfo")
	assert.Equal(t, int64(2), fixture.Replicas(t, c))
	ready := rel.Status.GetCondition(release.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionTrue, ready.Status)
	assert.Equal(t, release.ReasonInstallSucceeded, ready.Reason)
	assert.Equal(t, metav1.ConditionTrue, rel.Status.GetCondition(release.ConditionReleased).Status)
	require.Len(t, rel.Status.History, 1)
	assert.Equal(t, "6.5.0", rel.Status.History[0].ChartVersion)
	assert.Equal(t, res.Values.Digest, rel.Status.History[0].ConfigDigest)
	assert.Equal(t, int64(1), rel.Status.ObservedGeneration)

	// In sync: nothing happens, Helm's history does not grow.
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionNone, res.Last())
	assert.Equal(t, []string{"6.5.0 deployed"}, history(t, c))

	// Values change: upgrade.
	rel.Spec.Values = map[string]any{"replicaCount": 3}
	rel.Generation = 2
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionUpgrade, res.Last())
	assert.Equal(t, int64(3), fixture.Replicas(t, c))
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.0 deployed"}, history(t, c))

	// Chart version change: upgrade.
	rel.Spec.Chart.Spec.Version = "6.5.1"
	rel.Generation = 3
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionUpgrade, res.Last())
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.0 superseded", "6.5.1 deployed"}, history(t, c))
	assert.Equal(t, release.ReasonUpgradeSucceeded, rel.Status.GetCondition(release.ConditionReady).Reason)
	require.Len(t, rel.Status.History, 2, "in sync, the history keeps the latest revision and the previous good one (Flux's truncation)")
	assert.Equal(t, release.SnapshotStatusDeployed, rel.Status.History[0].Status)
	assert.Equal(t, release.SnapshotStatusSuperseded, rel.Status.History[1].Status)
	assert.Equal(t, "6.5.1", rel.Status.LastAttemptedRevision)

	res, err = rec.Uninstall(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionUninstall, res.Last())
	assert.Empty(t, c.Summary())
	assert.Equal(t, release.ReasonUninstallSucceeded, rel.Status.GetCondition(release.ConditionReady).Reason)
	_, err = rec.Uninstall(ctx, c, rel)
	require.NoError(t, err, "uninstalling an absent release is not an error")
}

func TestReconcileFailedInstallThenRecovers(t *testing.T) {
	ctx := context.Background()
	ready := false
	c := memory.New("member1", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" && !ready {
			return memory.Health{Message: "image pull back-off"}
		}
		return memory.Health{Ready: true}
	}))
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Millisecond}
	rel.Spec.Install = &release.Install{Remediation: &release.InstallRemediation{Retries: 1}}

	// First attempt: the Deployment never becomes ready; one retry is
	// left, so the failed install is remediated by uninstalling it.
	res, err := rec.Reconcile(ctx, c, rel)
	require.Error(t, err)
	var ae *reconcile.ActionError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, reconcile.ActionInstall, ae.Action)
	assert.Contains(t, err.Error(), "Deployment apps/podinfo InProgress: Available: 0/2")
	assert.Contains(t, err.Error(), "image pull back-off", "the wait says why the object is not ready")
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionUninstall}, res.Actions)
	assert.Equal(t, reconcile.NextRequeue, res.Next)
	assert.Equal(t, int64(1), rel.Status.InstallFailures)
	assert.Equal(t, release.ReasonUninstallSucceeded, rel.Status.GetCondition(release.ConditionRemediated).Reason)
	assert.Equal(t, release.ReasonInstallFailed, rel.Status.GetCondition(release.ConditionReleased).Reason)
	assert.Empty(t, c.Summary(), "remediation removed the failed install")

	// The image is fixed: the retry installs and the release is ready.
	ready = true
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, res.Actions)
	assert.Equal(t, reconcile.NextDone, res.Next)
	assert.Equal(t, metav1.ConditionTrue, rel.Status.GetCondition(release.ConditionReady).Status)
	assert.Nil(t, rel.Status.GetCondition(release.ConditionRemediated))
}

func TestReconcileUnlocksPendingRelease(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	// A crash mid-upgrade left revision 2 pending.
	store := c.Storage("apps")
	last, err := store.Last("podinfo")
	require.NoError(t, err)
	stuck := *last
	stuck.Version = 2
	stuck.Info = &helmrelease.Info{Status: helmrelease.StatusPendingUpgrade}
	require.NoError(t, store.Create(&stuck))

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.True(t, res.Unlocked)
	assert.Equal(t, reconcile.ActionUpgrade, res.Last())
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.0 failed", "6.5.0 deployed"}, history(t, c))
}

func TestReconcileValuesFromAndStageErrors(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member1")
	rel := fixture.Release()
	rel.Spec.ValuesFrom = []release.ValuesReference{{Kind: "ConfigMap", Name: "podinfo-values"}}

	_, err := fixture.Reconciler(t, nil).Reconcile(ctx, c, rel)
	var se *reconcile.StageError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, release.ReasonValuesError, se.Reason)
	assert.Equal(t, release.ReasonValuesError, rel.Status.GetCondition(release.ConditionReady).Reason)
	assert.Empty(t, c.Summary(), "nothing is installed when the values cannot be composed")

	reader := readerFunc(func(_ context.Context, kind values.Kind, ns, name string) (map[string][]byte, error) {
		if kind == values.KindConfigMap && ns == "apps" && name == "podinfo-values" {
			return map[string][]byte{"values.yaml": []byte("replicaCount: 5\n")}, nil
		}
		return nil, values.ErrNotFound
	})
	rel.Spec.Values = nil
	res, err := fixture.Reconciler(t, reader).Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionInstall, res.Last())
	assert.Equal(t, int64(5), fixture.Replicas(t, c))

	broken := reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return nil, errors.New("repository unreachable")
	})
	r2, err := reconcile.New(reconcile.Config{Charts: broken})
	require.NoError(t, err)
	_, err = r2.Reconcile(ctx, c, fixture.Release())
	require.ErrorAs(t, err, &se)
	assert.Equal(t, release.ReasonArtifactFailed, se.Reason)
	assert.Contains(t, err.Error(), "apps/podinfo")
}

type readerFunc func(ctx context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error)

func (f readerFunc) Read(ctx context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error) {
	return f(ctx, kind, namespace, name)
}
