package distribute_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
)

var configMapRef = release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"}

// withConflictResolution returns fixture.DistributorPolicies with spec.conflictResolution
// set on the podinfo policy (whose Deployment the ConfigMap follows).
func withConflictResolution(value string) string {
	return strings.Replace(fixture.DistributorPolicies, "  propagateDeps: true\n", "  propagateDeps: true\n  conflictResolution: "+value+"\n", 1)
}

// foreignConfigMap creates, on member m, the release's ConfigMap as
// kubectl would: no inventory labels.
func foreignConfigMap(t *testing.T, f *fixture.DistFleet, m string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "podinfo", "namespace": "apps"},
		"data":     map[string]any{"PODINFO_UI_MESSAGE": "made by hand"},
	}}
	_, err := f.Members[m].Update(context.Background(), obj, "kubectl")
	require.NoError(t, err)
}

// configMapOn returns the member's ConfigMap: its message and the release
// named by its inventory labels ("" without them).
func configMapOn(t *testing.T, f *fixture.DistFleet, m string) (message, owner string) {
	t.Helper()
	cm, err := f.Members[m].Get(context.Background(), configMapRef)
	require.NoError(t, err)
	msg, _, _ := unstructured.NestedString(cm.Object, "data", "PODINFO_UI_MESSAGE")
	l := cm.GetLabels()
	if l[distribute.InventoryNameLabel] != "" {
		owner = l[distribute.InventoryNamespaceLabel] + "/" + l[distribute.InventoryNameLabel]
	}
	return msg, owner
}

// assertTakenOver checks m1's ConfigMap: the release's when takenOver,
// else the one made by hand, untouched.
func assertTakenOver(t *testing.T, f *fixture.DistFleet, takenOver bool) {
	t.Helper()
	msg, owner := configMapOn(t, f, "m1")
	if takenOver {
		assert.Equal(t, "hello from helmfleet", msg)
		assert.Equal(t, "apps/podinfo", owner)
		return
	}
	assert.Equal(t, "made by hand", msg, "left as it is")
	assert.Empty(t, owner)
}

// helmConfig is the Distributor's Helm configuration for namespace apps.
func helmConfig(t *testing.T, f *fixture.DistFleet) *action.Configuration {
	t.Helper()
	cfg, err := f.Dist.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	return cfg
}

// annotated makes the chart's ConfigMap carry the conflict-resolution
// annotation (a post-renderer, as a user would add it to a community
// chart).
func annotated(rel *release.Release, value string) *release.Release {
	rel.Spec.PostRenderers = []release.PostRenderer{{Kustomize: &release.Kustomize{Patches: []release.Patch{{
		Patch:  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: podinfo\n  annotations:\n    " + policy.AnnotationConflictResolution + ": " + value + "\n",
		Target: &release.Selector{Kind: "ConfigMap", Name: "podinfo"},
	}}}}}
	return rel
}

func TestDistributorConflictAbortFailsOnlyThatMember(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies) // no conflictResolution: Abort
	foreignConfigMap(t, f, "m1")
	rec := fixture.Reconciler(t, nil)
	_, err := rec.Reconcile(ctx, f.Dist, fixture.DistRelease())
	require.Error(t, err, "Helm's action fails, as Helm refuses objects it does not own")
	assert.Contains(t, err.Error(), "member m1: v1 ConfigMap apps/podinfo exists on member m1 and no release manages it (it has no inventory labels); "+
		"conflict resolution is Abort by default: PropagationPolicy apps/podinfo does not set spec.conflictResolution, so it is not taken over: "+
		"set spec.conflictResolution: Overwrite in PropagationPolicy apps/podinfo, or annotate the object work.karmada.io/conflict-resolution: overwrite, to take it over")
	assert.NotContains(t, err.Error(), "member m2")

	msg, owner := configMapOn(t, f, "m1")
	assert.Equal(t, "made by hand", msg, "the foreign object is left as it was")
	assert.Empty(t, owner)
	assert.Contains(t, view(t, f.Members["m1"]), "Deployment apps/podinfo replicas=1 image=ghcr.io/stefanprodan/podinfo:6.5.0", "the member's other objects are written")
	assert.Contains(t, view(t, f.Members["m2"]), "ConfigMap apps/podinfo message=hello from helmfleet", "other members are written")

	// Helm's own actions carry the typed error.
	cfg := helmConfig(t, f)
	_, err = action.NewUpgrade(cfg).Run("podinfo", testchart.MustLoad(""), map[string]any{"replicaCount": 3})
	var ce *distribute.ConflictResolutionError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "m1", ce.Member)
	assert.Equal(t, configMapRef, ce.Object)
	assert.Equal(t, policy.Conflict{Resolution: policy.ConflictAbort, Source: policy.ConflictFromDefault,
		Policy: policy.Ref{Kind: policy.KindPropagationPolicy, Namespace: "apps", Name: "podinfo"}}, ce.Conflict)
	var me *distribute.MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "m1", me.Member)

	// Uninstalling the release removes its own copies but not the object
	// it never took over.
	_, err = action.NewUninstall(cfg).Run("podinfo")
	require.NoError(t, err)
	msg, owner = configMapOn(t, f, "m1")
	assert.Equal(t, "made by hand", msg)
	assert.Empty(t, owner)
	assert.Empty(t, view(t, f.Members["m2"]))
	assert.Equal(t, []string{"ConfigMap apps/podinfo message=made by hand"}, view(t, f.Members["m1"]))
}

func TestDistributorConflictOverwriteTakesOver(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, withConflictResolution("Overwrite"))
	foreignConfigMap(t, f, "m1")
	_, err := fixture.Reconciler(t, nil).Reconcile(ctx, f.Dist, fixture.DistRelease())
	require.NoError(t, err)
	msg, owner := configMapOn(t, f, "m1")
	assert.Equal(t, "hello from helmfleet", msg)
	assert.Equal(t, "apps/podinfo", owner, "taken over, it is the release's now")
	assert.Equal(t, view(t, f.Members["m2"])[0], view(t, f.Members["m1"])[0])
}

func TestDistributorConflictAnnotationBeatsPolicy(t *testing.T) {
	tests := []struct {
		name       string
		policy     string // spec.conflictResolution
		annotation string
		takenOver  bool
		err        string
	}{
		{name: "overwrite over Abort", policy: "Abort", annotation: "overwrite", takenOver: true},
		{name: "abort over Overwrite", policy: "Overwrite", annotation: "abort",
			err: "conflict resolution is Abort by the object's annotation work.karmada.io/conflict-resolution: abort, so it is not taken over: set that annotation to overwrite to take it over"},
		{name: "explicit Abort in the policy", policy: "Abort",
			err: "conflict resolution is Abort by spec.conflictResolution of PropagationPolicy apps/podinfo, so it is not taken over: set spec.conflictResolution: Overwrite in PropagationPolicy apps/podinfo"},
		{name: "an invalid annotation is ignored, as in Karmada", policy: "Overwrite", annotation: "Abort", takenOver: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			f := fixture.NewDistFleet(t, withConflictResolution(tt.policy))
			foreignConfigMap(t, f, "m1")
			rel := fixture.DistRelease()
			if tt.annotation != "" {
				rel = annotated(rel, tt.annotation)
			}
			_, err := fixture.Reconciler(t, nil).Reconcile(ctx, f.Dist, rel)
			assertTakenOver(t, f, tt.takenOver)
			if tt.takenOver {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "member m1: v1 ConfigMap apps/podinfo exists on member m1")
			assert.Contains(t, err.Error(), tt.err)
			assert.NotContains(t, err.Error(), "member m2")
			assert.Contains(t, view(t, f.Members["m2"]), "ConfigMap apps/podinfo message=hello from helmfleet")
		})
	}
}

func TestDistributorConflictNotForItsOwnObjects(t *testing.T) {
	// Under Abort, the release's own copies (its inventory labels) are
	// upgraded, and changes made to them on a member are overwritten.
	ctx := context.Background()
	f := fixture.NewDistFleet(t, withConflictResolution("Abort"))
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)

	cm, err := f.Members["m1"].Get(ctx, configMapRef)
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(cm.Object, "edited on m1", "data", "PODINFO_UI_MESSAGE"))
	_, err = f.Members["m1"].Update(ctx, cm, "kubectl")
	require.NoError(t, err)

	rel.Generation++
	rel.Spec.Values["ui"] = map[string]any{"message": "v2"}
	_, err = rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	for _, m := range []string{"m1", "m2"} {
		msg, owner := configMapOn(t, f, m)
		assert.Equal(t, "v2", msg, m)
		assert.Equal(t, "apps/podinfo", owner, m)
	}
}

func TestDistributorConflictChartNamespace(t *testing.T) {
	// A namespace the Distributor created for a release's objects is not
	// a conflict when a chart renders that Namespace itself; one made by
	// someone else is.
	ctx := context.Background()
	f := fixture.NewDistFleet(t, `
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: all}
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: Namespace}
    - {apiVersion: v1, kind: ConfigMap}
  placement:
    clusterAffinity: {clusterNames: [m1, m2]}
`)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team"}}}
	_, err := f.Members["m2"].Update(ctx, ns, "kubectl")
	require.NoError(t, err)
	cfg := helmConfig(t, f)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "ns", "apps"
	_, err = install.Run(namespaceChart(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "member m2: v1 Namespace team exists on member m2 and no release manages it")
	assert.NotContains(t, err.Error(), "member m1")
	for _, m := range []string{"m1", "m2"} {
		got, gerr := f.Members[m].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "team"})
		require.NoError(t, gerr)
		assert.Equal(t, m == "m1", got.GetLabels()[distribute.InventoryNameLabel] == "ns", m)
	}
	cm, err := f.Members["m2"].Get(ctx, release.ObjectRef{GroupVersionKind: configMapRef.GroupVersionKind, Namespace: "team", Name: "settings"})
	require.NoError(t, err, "the member's other objects are written")
	assert.Equal(t, "ns", cm.GetLabels()[distribute.InventoryNameLabel])
}

// namespaceChart renders the Namespace team and a ConfigMap in it.
func namespaceChart() *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "team", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/all.yaml", Data: []byte(`apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {a: b}
`)}},
	}
}

// Drift correction takes over nothing an apply would not: an object
// recreated by hand without the release's inventory labels is corrected
// only under Overwrite.
func TestDistributorDriftCorrectionHonoursConflictResolution(t *testing.T) {
	for _, tt := range []struct {
		resolution string
		corrected  bool
	}{{"", false}, {"Overwrite", true}} {
		t.Run("resolution="+tt.resolution, func(t *testing.T) {
			ctx := context.Background()
			policies := fixture.DistributorPolicies
			if tt.resolution != "" {
				policies = withConflictResolution(tt.resolution)
			}
			f := fixture.NewDistFleet(t, policies)
			rec := fixture.Reconciler(t, nil)
			rel := fixture.DistRelease()
			rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled}
			_, err := rec.Reconcile(ctx, f.Dist, rel)
			require.NoError(t, err)

			require.NoError(t, f.Members["m1"].Delete(ctx, configMapRef, release.DeleteOptions{}))
			foreignConfigMap(t, f, "m1")
			res, err := rec.Reconcile(ctx, f.Dist, rel)
			require.NotNil(t, res.Drift)
			assert.Contains(t, res.Drift.String(), "ConfigMap/apps/podinfo: modified (member m1)")
			assertTakenOver(t, f, tt.corrected)
			if tt.corrected {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var ce *distribute.ConflictResolutionError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "m1", ce.Member)
			assert.Equal(t, configMapRef, ce.Object)
		})
	}
}
