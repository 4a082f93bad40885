package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec:
  group: example.io
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

// crdChart brings the Widget CRD in crds/ and renders a Widget only when
// the API is there, as community charts guard their custom resources.
func crdChart(kubeVersion string, extra string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "widgets", Version: "1.0.0", KubeVersion: kubeVersion},
		Files:    []*chart.File{{Name: "crds/widget.yaml", Data: []byte(widgetCRD)}},
		Templates: []*chart.File{{Name: "templates/widget.yaml", Data: []byte(`{{- if .Capabilities.APIVersions.Has "example.io/v1/Widget" }}
apiVersion: example.io/v1
kind: Widget
metadata: {name: {{ .Release.Name }}}
spec: {size: 3}
{{- end }}
` + extra)}},
	}
}

func widgetReconciler(t *testing.T, c *chart.Chart) *reconcile.Reconciler {
	t.Helper()
	r, err := reconcile.New(reconcile.Config{
		Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
			return &reconcile.Chart{Chart: c}, nil
		}),
		PollInterval: time.Millisecond,
	})
	require.NoError(t, err)
	return r
}

// A plan of a chart that brings its own CRDs shows the custom resources
// on a cluster that does not serve the kind yet: the render sees the
// chart's CRD versions, as the install will once it has created them,
// and the objects take the release's namespace from the CRD's scope.
func TestPlanKnowsTheChartsOwnCRDs(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m1", memory.WithKubeVersion("v1.30.2"))
	rel := fixture.Release()
	plan := widgetReconciler(t, crdChart("", "")).Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	require.Len(t, plan.Objects, 1)
	w := plan.Objects[0]
	assert.Equal(t, "Widget", w.GetKind())
	assert.Equal(t, "apps", w.GetNamespace())
	assert.Contains(t, plan.Diff, "+++ Widget/apps/podinfo")
	assert.Equal(t, "v1.30.2", plan.KubeVersion)
	assert.Equal(t, reconcile.CapabilitiesFromCluster, plan.CapabilitiesFrom)

	// With crds: Skip the install will not create the CRD, so the
	// chart's guard sees no Widget API.
	rel.Spec.Install = &release.Install{CRDs: release.Skip}
	plan = widgetReconciler(t, crdChart("", "")).Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Empty(t, plan.Objects)
}

// A kind that neither the cluster nor the chart defines is an error that
// names it.
func TestPlanUnknownKindIsNamed(t *testing.T) {
	c := memory.New("m1")
	plan := widgetReconciler(t, crdChart("", "---\napiVersion: other.io/v1\nkind: Gadget\nmetadata: {name: g}\n")).Plan(context.Background(), c, fixture.Release())
	require.Error(t, plan.Err)
	assert.Contains(t, plan.Err.Error(), "Gadget")
	assert.Contains(t, plan.Err.Error(), "neither the cluster nor the chart's CRDs define other.io/v1, Kind=Gadget")
}

// A chart whose kubeVersion the cluster does not satisfy is refused
// before any action, by Plan and Reconcile alike, naming chart,
// constraint and the cluster's version.
func TestKubeVersionRefusedBeforeAnyAction(t *testing.T) {
	ctx := context.Background()
	c := memory.New("old", memory.WithKubeVersion("v1.24.3"))
	r := widgetReconciler(t, crdChart(">=1.25.0-0", ""))
	want := &release.KubeVersionError{Chart: "widgets", Version: "1.0.0", Constraint: ">=1.25.0-0", Cluster: "old", KubeVersion: "v1.24.3"}

	plan := r.Plan(ctx, c, fixture.Release())
	var kv *release.KubeVersionError
	require.ErrorAs(t, plan.Err, &kv)
	assert.Equal(t, want, kv)
	assert.Equal(t, "v1.24.3", plan.KubeVersion)

	rel := fixture.Release()
	res, err := r.Reconcile(ctx, c, rel)
	require.ErrorAs(t, err, &kv)
	assert.Equal(t, want, kv)
	assert.Empty(t, res.Actions, "nothing was tried")
	assert.Empty(t, c.Objects(), "nothing was written")
	ready := metav1.Condition{}
	for _, cond := range rel.Status.Conditions {
		if cond.Type == "Ready" {
			ready = cond
		}
	}
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "chart widgets 1.0.0 requires kubeVersion >=1.25.0-0, and cluster old runs Kubernetes v1.24.3")

	// The same chart on a cluster that satisfies it installs its CRD and
	// its Widget.
	ok := memory.New("new", memory.WithKubeVersion("v1.25.0"))
	_, err = r.Reconcile(ctx, ok, fixture.Release())
	require.NoError(t, err)
	assert.Contains(t, ok.Summary(), "Widget apps/podinfo")
}

func TestCRDVersions(t *testing.T) {
	got, err := reconcile.CRDVersions([]byte(widgetCRD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"example.io/v1", "example.io/v1/Widget"}, got)

	_, err = reconcile.CRDVersions([]byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: bad.example.io}\nspec: {versions: 3}\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CustomResourceDefinition bad.example.io")
}
