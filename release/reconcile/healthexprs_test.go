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
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// widgetCharts serves the test chart with the Widget CRD of
// capabilities_test.go and a Widget whose
// controller reports only status.phase (the value phase), no
// conditions: kstatus takes it as Current whatever the phase, only CEL
// can judge it.
func widgetCharts() reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
		if err != nil {
			return nil, err
		}
		ch.Files = append(ch.Files, &chart.File{Name: "crds/widget.yaml", Data: []byte(widgetCRD)})
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/widget.yaml", Data: []byte(
			"apiVersion: example.io/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: {{ .Release.Namespace }}\nspec:\n  size: 1\nstatus:\n  phase: {{ .Values.phase }}\n")})
		return &reconcile.Chart{Chart: ch}, nil
	})
}

// TestReconcileHealthCheckExprs: an install waits for the custom
// resources of its chart by the HelmRelease's spec.healthCheckExprs, as
// helm-controller does: a Widget whose current expression holds is
// ready, one in progress fails the install at the timeout, one whose
// failed expression holds fails it at once, each naming the expression.
func TestReconcileHealthCheckExprs(t *testing.T) {
	ctx := context.Background()
	rec, err := reconcile.New(reconcile.Config{Charts: widgetCharts(), PollInterval: 2 * time.Millisecond})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, phase, message string
	}{
		{name: "ready", phase: "Ready"},
		{name: "in progress until the timeout", phase: "Pending", message: "Widget apps/w InProgress: spec.healthCheckExprs[0].current is not true yet"},
		{name: "failed", phase: "Broken", message: "Widget apps/w Failed: spec.healthCheckExprs[0].failed is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel := fixture.Release()
			rel.Spec.Values = map[string]any{"phase": tc.phase}
			rel.Spec.Timeout = &metav1.Duration{Duration: 300 * time.Millisecond}
			rel.Spec.HealthCheckExprs = []release.CustomHealthCheck{{APIVersion: "example.io/v1", Kind: "Widget", HealthCheckExpressions: release.HealthCheckExpressions{
				Current: "status.phase == 'Ready'",
				Failed:  "status.phase == 'Broken'",
			}}}
			_, err := rec.Reconcile(ctx, memory.New("member1"), rel)
			ready := rel.Status.GetCondition(release.ConditionReady)
			require.NotNil(t, ready)
			if tc.message == "" {
				require.NoError(t, err)
				assert.Equal(t, metav1.ConditionTrue, ready.Status)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.message)
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Contains(t, ready.Message, tc.message)
		})
	}
}
