package fleet_test

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// widgetChart is a chart with a custom resource (a Widget) whose CRD it
// does not bring: the infrastructure/crds Kustomization of repo does.
func widgetChart() *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "widgets", Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/widget.yaml", Data: []byte(`apiVersion: example.com/v1
kind: Widget
metadata: {name: {{ .Release.Name }}, namespace: {{ .Release.Namespace }}}
spec: {size: 3}
`)}},
	}
}

// crdTestFleet is a fleet of one new member, dev-1, whose charts are
// the test chart and widgetChart, and whose source is repo.
func crdTestFleet(t *testing.T) (*fleet.Fleet, *memory.Cluster) {
	t.Helper()
	charts := reconcile.ChartGetterFunc(func(ctx context.Context, rel *release.Release) (*reconcile.Chart, error) {
		if rel.Spec.Chart.Spec.Chart == "widgets" {
			return &reconcile.Chart{Chart: widgetChart()}, nil
		}
		return fixture.Charts().GetChart(ctx, rel)
	})
	return oneMemberFleet(t, charts, "GitRepository/flux-system/fleet", repo)
}

// oneMemberFleet is a fleet of one new member, dev-1 (env dev), with
// charts and one source, named key, serving tree.
func oneMemberFleet(t *testing.T, charts reconcile.ChartGetter, key string, tree fs.FS) (*fleet.Fleet, *memory.Cluster) {
	t.Helper()
	c := memory.New("dev-1")
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{
		Members:    []release.Member{{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}}},
		Reconciler: rec,
		KustomizeConfig: &kustomize.ReconcilerConfig{
			Sources:      kustomize.MapSources{key: {FS: tree, Revision: "main@sha1:0123abc"}},
			PollInterval: time.Millisecond,
		},
	})
	require.NoError(t, err)
	return f, c
}

func widgetsYAML(extra string) string {
	return `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: widgets, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: widgets
      version: "1.0.0"
      sourceRef: {kind: HelmRepository, name: charts}
` + extra + placeOn("widgets", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", everywhere)
}

func TestFleetPlansCustomResourceAfterItsCRDDependency(t *testing.T) {
	ctx := context.Background()
	f, c := crdTestFleet(t)
	in := decodeInputs(t, kustomizationYAML("infrastructure-crds", "./infrastructure/crds", "")+
		placeOn("infrastructure-crds", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere)+
		widgetsYAML("  dependsOn: [{kind: Kustomization, name: infrastructure-crds, namespace: flux-system}]\n"))

	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	wk := fleet.Key{Cluster: "dev-1", Namespace: "apps", Name: "widgets"}
	it, ok := plan.Item(wk)
	require.True(t, ok)
	assert.Equal(t, fleet.StateDeferred, it.State)
	assert.Equal(t, reconcile.ActionInstall, it.Action)
	assert.NoError(t, it.Err)
	assert.Contains(t, it.Reason, "planned after its dependencies")
	assert.Contains(t, it.Reason, "Widget (example.com/v1)")
	table := plan.Table()
	assert.Regexp(t, `dev-1\s+apps/widgets\s+Deferred\s+install\s+.*Widget \(example.com/v1\)`, table)
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"state":"Deferred"`)

	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	for _, item := range rep.Items {
		assert.Equal(t, depgraph.Succeeded, item.State, "%s: %v", item.Key, item.Err)
	}
	// The report names units, and a Kustomization's revision is the
	// source revision it applied.
	table = rep.Table()
	assert.Regexp(t, `(?m)^WAVE\s+CLUSTER\s+UNIT\s+RESULT\s+ACTIONS\s+REVISION\s+NOTE$`, table)
	assert.Regexp(t, `dev-1\s+Kustomization/flux-system/infrastructure-crds\s+succeeded\s+apply\s+main@sha1:0123abc\s`, table)
	assert.Regexp(t, `dev-1\s+apps/widgets\s+succeeded\s+install\s+1\s`, table)
	assert.Regexp(t, `(?m)^CLUSTER\s+UNIT\s+STATE`, plan.Table())
	w, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Namespace: "apps", Name: "widgets"})
	require.NoError(t, err, "the custom resource is installed once its CRD is there")
	assert.Equal(t, "widgets", w.GetName())

	// Planned again, the release is in sync: the deferral was only for
	// the first plan.
	plan, err = f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	it, _ = plan.Item(wk)
	assert.Equal(t, reconcile.StateInSync, it.State, plan.Table())
}

func TestFleetMissingKindWithoutDependencyStaysAnError(t *testing.T) {
	ctx := context.Background()
	f, _ := crdTestFleet(t)
	plan, err := f.Plan(ctx, decodeInputs(t, widgetsYAML("")))
	require.NoError(t, err)
	require.Len(t, plan.Errors, 1, plan.Table())
	assert.Contains(t, plan.Errors[0].Error(), `no matches for kind "Widget"`)
	it, ok := plan.Item(fleet.Key{Cluster: "dev-1", Namespace: "apps", Name: "widgets"})
	require.True(t, ok)
	assert.Error(t, it.Err)
	assert.NotEqual(t, fleet.StateDeferred, it.State)
	assert.False(t, strings.Contains(plan.Table(), "Deferred"))
}
