package fleet_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
)

func widgetYAML(phase string) string {
	return "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: widgets}\nspec: {size: 1}\nstatus: {phase: " + phase + "}\n"
}

// TestFleetKustomizationHealthCheckExprs: a Kustomization that waits
// judges the custom resource it applies by its spec.healthCheckExprs
// (kind left out: every kind of the group, Flux 2.9): a Widget whose
// phase says Broken fails it, HealthCheckFailed naming the expression,
// and what depends on it does not run; one whose phase says Ready lets
// it succeed.
func TestFleetKustomizationHealthCheckExprs(t *testing.T) {
	ctx := context.Background()
	exprs := `  wait: true
  healthCheckExprs:
    - apiVersion: example.com/v1
      current: status.phase == 'Ready'
      failed: status.phase == 'Broken'
`
	for _, tc := range []struct {
		name, path, kust, frontend, ready, message string
	}{
		{"ready", "./widgets/ready", "succeeded", "succeeded", "True ReconciliationSucceeded", ""},
		{"broken", "./widgets/broken", "failed", "skipped", "False HealthCheckFailed", "Widget widgets/w: Failed spec.healthCheckExprs[0].failed is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := kustTestFleet(t, nil, nil)
			in := decodeInputs(t, kustomizationYAML("widgets", tc.path, exprs)+
				placeOn("widgets", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]")+
				hrYAML("frontend", "  dependsOn: [{kind: Kustomization, name: widgets, namespace: flux-system}]\n")+
				placeOn("frontend", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [dev-1]"))
			plan, err := tf.fleet.Plan(ctx, in)
			require.NoError(t, err)
			rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
			if tc.message == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
			states := map[string]string{}
			for _, it := range rep.Items {
				states[it.Key.String()] = it.State.String()
			}
			assert.Equal(t, map[string]string{
				"dev-1:Kustomization/flux-system/widgets": tc.kust,
				"dev-1:apps/frontend":                     tc.frontend,
			}, states)
			st, ok := tf.fleet.KustomizationStatus(kkey("dev-1", "widgets"))
			require.True(t, ok)
			c := st.GetCondition(release.ConditionReady)
			require.NotNil(t, c)
			assert.Equal(t, tc.ready, string(c.Status)+" "+c.Reason)
			assert.Contains(t, c.Message, tc.message)
		})
	}
}
