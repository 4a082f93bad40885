package helmv4_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// podinfo is a Release of the vendored podinfo chart in namespace apps,
// with its tests enabled.
func podinfo() *release.Release {
	rel := testcharts.Release(testcharts.Podinfo)
	rel.Namespace = "apps"
	rel.Spec.Test = &release.Test{Enable: true}
	rel.Spec.Values = map[string]any{"replicaCount": 1}
	return rel
}

// reconciler returns a Reconciler of the vendored charts on engine (nil:
// the default, Helm v3).
func reconciler(t *testing.T, engine reconcile.Engine) *reconcile.Reconciler {
	t.Helper()
	r, err := reconcile.New(reconcile.Config{
		Charts: reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
			ch, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
			return &reconcile.Chart{Chart: ch}, err
		}),
		PollInterval: 2 * time.Millisecond,
		Engine:       engine,
	})
	require.NoError(t, err)
	return r
}

// history returns the release records of rel in c's storage, oldest
// first.
func history(t *testing.T, c *memory.Cluster, rel *release.Release) []*helmrelease.Release {
	t.Helper()
	cfg, err := c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace()})
	require.NoError(t, err)
	h, err := cfg.Releases.History(rel.GetReleaseName())
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	require.NoError(t, err)
	slices.SortFunc(h, func(a, b *helmrelease.Release) int { return a.Version - b.Version })
	return h
}

// applyMethods lists each record's apply method as Helm v4 records it
// ("" for a record Helm v3 wrote).
func applyMethods(h []*helmrelease.Release) []string {
	out := make([]string, len(h))
	for i, r := range h {
		out[i] = r.Labels[helmv4.ApplyMethodLabel]
	}
	return out
}

func reconcileOK(t *testing.T, r *reconcile.Reconciler, c release.Cluster, rel *release.Release) *reconcile.Result {
	t.Helper()
	res, err := r.Reconcile(t.Context(), c, rel)
	require.NoError(t, err)
	ready := rel.Status.GetCondition(release.ConditionReady)
	require.NotNil(t, ready)
	require.Equal(t, metav1.ConditionTrue, ready.Status, ready.Message)
	return res
}

// The Helm v4 engine runs a real chart's whole life on release/memory:
// install (server-side, Flux 2.8's default), tests, upgrade (auto keeps
// server-side), rollback and uninstall; Helm v4's apply method is in
// every record, and no field warning says that serverSideApply is not
// acted on.
func TestLifecycleOnMemory(t *testing.T) {
	c := memory.New("member")
	r := reconciler(t, helmv4.Engine{})
	rel := podinfo()
	ssa := true
	rel.Spec.Install = &release.Install{ServerSideApply: &ssa}

	res := reconcileOK(t, r, c, rel)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionTest}, res.Actions)
	assert.Empty(t, res.Warnings)
	assert.Equal(t, []string{"ssa"}, applyMethods(history(t, c, rel)))
	require.NotNil(t, rel.Status.History.Latest())
	assert.NotEmpty(t, rel.Status.History.Latest().GetTestHooks(), "podinfo's test hooks ran")

	rel.Spec.Values["replicaCount"] = 2
	rel.Generation++
	res = reconcileOK(t, r, c, rel)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionTest}, res.Actions)
	assert.Equal(t, []string{"ssa", "ssa"}, applyMethods(history(t, c, rel)))
	dep, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: appsV1Deployment, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	replicas, _, _ := unstructuredInt(dep.Object, "spec", "replicas")
	assert.Equal(t, int64(2), replicas)

	require.NoError(t, r.RollbackToPrevious(t.Context(), c, rel))
	h := history(t, c, rel)
	require.Len(t, h, 3)
	assert.Equal(t, helmrelease.StatusDeployed, h[2].Info.Status)
	assert.Equal(t, "ssa", h[2].Labels[helmv4.ApplyMethodLabel])
	dep, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: appsV1Deployment, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	replicas, _, _ = unstructuredInt(dep.Object, "spec", "replicas")
	assert.Equal(t, int64(1), replicas, "rolled back to revision 1's values")

	_, err = r.Uninstall(t.Context(), c, rel)
	require.NoError(t, err)
	assert.Empty(t, history(t, c, rel))
	_, err = c.Get(t.Context(), release.ObjectRef{GroupVersionKind: appsV1Deployment, Namespace: "apps", Name: "podinfo"})
	assert.ErrorIs(t, err, release.ErrNotFound)
}

// A release installed by Helm v3 is upgraded by Helm v4 and rolled back
// by Helm v3, and the reverse: both read and write the same records.
// spec.upgrade.serverSideApply auto keeps a v3 release client-side (no
// apply method recorded is client-side, as in Helm v4), enabled moves
// it to server-side.
func TestInteropV3V4(t *testing.T) {
	c := memory.New("member")
	v3, v4 := reconciler(t, nil), reconciler(t, helmv4.Engine{})
	rel := podinfo()

	reconcileOK(t, v3, c, rel)
	assert.Equal(t, []string{""}, applyMethods(history(t, c, rel)))

	rel.Spec.Values["replicaCount"] = 2
	rel.Generation++
	res := reconcileOK(t, v4, c, rel)
	assert.Equal(t, reconcile.ActionUpgrade, res.Actions[0])
	assert.Equal(t, []string{"", "csa"}, applyMethods(history(t, c, rel)), "auto keeps the v3 release client-side")

	rel.Spec.Values["replicaCount"] = 3
	rel.Spec.Upgrade = &release.Upgrade{ServerSideApply: release.ServerSideApplyEnabled}
	rel.Generation++
	reconcileOK(t, v4, c, rel)
	assert.Equal(t, []string{"", "csa", "ssa"}, applyMethods(history(t, c, rel)))

	require.NoError(t, v3.RollbackToPrevious(t.Context(), c, rel))
	h := history(t, c, rel)
	require.Len(t, h, 4)
	assert.Equal(t, helmrelease.StatusDeployed, h[3].Info.Status)
	assert.Equal(t, helmrelease.StatusSuperseded, h[2].Info.Status)

	// And back: Helm v4 upgrades what Helm v3 rolled back.
	rel.Spec.Values["replicaCount"] = 4
	rel.Generation++
	res = reconcileOK(t, v4, c, rel)
	assert.Equal(t, reconcile.ActionUpgrade, res.Actions[0])
	assert.Equal(t, 5, res.Helm.Version)
}

// The Helm v3 engine warns that serverSideApply, the legacy wait and the
// post-render strategy are not acted on; the Helm v4 engine acts on them
// and does not.
func TestFieldWarningsByEngine(t *testing.T) {
	rel := podinfo()
	ssa := true
	rel.Spec.Install = &release.Install{ServerSideApply: &ssa}
	rel.Spec.WaitStrategy = &release.WaitStrategy{Name: release.WaitStrategyLegacy}
	rel.Spec.PostRenderStrategy = release.PostRenderStrategyCombined
	rel.Spec.PostRenderers = []release.PostRenderer{{Kustomize: &release.Kustomize{
		Images: []release.Image{{Name: "curlimages/curl", NewTag: "8.0.0"}}}}}
	p3 := reconciler(t, nil).Plan(t.Context(), memory.New("a"), rel)
	p4 := reconciler(t, helmv4.Engine{}).Plan(t.Context(), memory.New("b"), rel)
	require.NoError(t, p3.Err)
	require.NoError(t, p4.Err)
	assert.Len(t, p3.Warnings, 3)
	assert.Empty(t, p4.Warnings)
}

var appsV1Deployment = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func unstructuredInt(obj map[string]any, fields ...string) (int64, bool, error) {
	return unstructured.NestedInt64(obj, fields...)
}

// Config.EngineFor moves one release to Helm v4 while the reconciler's
// other releases stay on Config.Engine (Helm v3): a migration wave.
func TestEngineForChoosesPerRelease(t *testing.T) {
	r, err := reconcile.New(reconcile.Config{
		Charts: reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
			ch, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
			return &reconcile.Chart{Chart: ch}, err
		}),
		PollInterval: 2 * time.Millisecond,
		EngineFor: func(rel *release.Release) reconcile.Engine {
			if rel.Labels["helm-engine"] == "v4" {
				return helmv4.Engine{}
			}
			return nil
		},
	})
	require.NoError(t, err)
	c := memory.New("member")
	stay, move := podinfo(), podinfo()
	move.Name, move.Labels = "podinfo-next", map[string]string{"helm-engine": "v4"}
	reconcileOK(t, r, c, stay)
	reconcileOK(t, r, c, move)
	assert.Equal(t, []string{""}, applyMethods(history(t, c, stay)))
	assert.Equal(t, []string{"ssa"}, applyMethods(history(t, c, move)))
}

// hookImages lists the curl images of the release's test hooks, as
// recorded.
func hookImages(h *helmrelease.Release) []string {
	var out []string
	for _, hk := range h.Hooks {
		for _, l := range strings.Split(hk.Manifest, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "image: curlimages/curl") {
				out = append(out, strings.TrimPrefix(l, "image: "))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// The Helm v4 engine post-renders hooks too, as Flux 2.8 does by default
// (combined), unless spec.postRenderStrategy is nohooks; the Helm v3
// engine never does.
func TestPostRenderStrategy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		engine   reconcile.Engine
		strategy string
		want     string
	}{
		{"v3", nil, "", "curlimages/curl:7.69.0"},
		{"v4 default (combined)", helmv4.Engine{}, "", "curlimages/curl:8.0.0"},
		{"v4 nohooks", helmv4.Engine{}, release.PostRenderStrategyNoHooks, "curlimages/curl:7.69.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := podinfo()
			rel.Spec.Test = nil
			rel.Spec.PostRenderStrategy = tc.strategy
			rel.Spec.PostRenderers = []release.PostRenderer{{Kustomize: &release.Kustomize{
				Images: []release.Image{{Name: "curlimages/curl", NewTag: "8.0.0"}}}}}
			res := reconcileOK(t, reconciler(t, tc.engine), memory.New("member"), rel)
			assert.Equal(t, []string{tc.want}, hookImages(res.Helm))
		})
	}
}

// A Helm v4 upgrade that fails is remediated as with Helm v3: the
// failure is recorded, and the reconcile rolls back to the last good
// revision with Helm v4.
func TestFailedUpgradeRollsBack(t *testing.T) {
	c := memory.New("member")
	r := reconciler(t, helmv4.Engine{})
	rel := podinfo()
	rel.Spec.Test = nil
	reconcileOK(t, r, c, rel)

	isDeployment := func(ref release.ObjectRef) bool { return ref.Kind == "Deployment" }
	c.SetFaults(memory.FailNth(memory.OpHelmUpdate, isDeployment, 1, errors.New("boom")))
	rel.Spec.Values["replicaCount"] = 2
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 1}}
	rel.Generation++
	res, err := r.Reconcile(t.Context(), c, rel)
	require.Error(t, err)
	assert.ErrorContains(t, err, "boom")
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionRollback}, res.Actions)
	var statuses []helmrelease.Status
	for _, h := range history(t, c, rel) {
		statuses = append(statuses, h.Info.Status)
	}
	assert.Equal(t, []helmrelease.Status{helmrelease.StatusSuperseded, helmrelease.StatusFailed, helmrelease.StatusDeployed}, statuses)
	rem := rel.Status.GetCondition(release.ConditionRemediated)
	require.NotNil(t, rem)
	assert.Equal(t, metav1.ConditionTrue, rem.Status, rem.Message)
}
