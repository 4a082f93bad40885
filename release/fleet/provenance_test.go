package fleet_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/values"
)

// provenanceYAML is podinfo everywhere, with prod's replicas set by a
// plaintext overrider and prod-us-1's image tag and UI message by a
// values overrider (a path, then a merge).
const provenanceYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: podinfo, version: "6.5.0", sourceRef: {kind: HelmRepository, name: podinfo}}
  values:
    replicaCount: 1
    ui: {message: hello, color: blue}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everywhere}
spec:
  resourceSelectors: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease}]
  placement:
    clusterAffinity: {labelSelector: {matchExpressions: [{key: env, operator: Exists}]}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: prod, namespace: apps}
spec:
  resourceSelectors: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}]
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {env: prod}}}
      overriders:
        plaintext:
          - {path: /spec/values/replicaCount, operator: replace, value: 3}
    - targetCluster: {clusterNames: [prod-us-1]}
      overriders:
        valuesOverrider:
          - {path: /image, operator: add, value: {tag: "6.5.0"}}
          - merge: {ui: {message: howdy}}
`

func TestProvenanceCreditsTheOverridePolicy(t *testing.T) {
	const (
		inline   = "inline values"
		replicas = "OverridePolicy apps/prod rule 0 overriders.plaintext[0]"
		image    = "OverridePolicy apps/prod rule 1 overriders.valuesOverrider[0]"
		message  = "OverridePolicy apps/prod rule 1 overriders.valuesOverrider[1]"
	)
	want := map[string]map[string]string{
		"dev-1":     {"replicaCount": inline, "ui.message": inline, "ui.color": inline},
		"prod-eu-1": {"replicaCount": replicas, "ui.message": inline, "ui.color": inline},
		"prod-us-1": {"replicaCount": replicas, "image.tag": image, "ui.message": message, "ui.color": inline},
	}
	tf := newTestFleet(t, nil)
	plan, err := tf.fleet.Plan(context.Background(), decodeInputs(t, provenanceYAML))
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Len(t, plan.Items, 3)
	for _, it := range plan.Items {
		got := map[string]string{}
		for _, o := range it.Values.Provenance().Origins() {
			got[o.Path] = o.Source.String()
		}
		assert.Equal(t, want[it.Cluster], got, it.Cluster)
	}

	// The credits travel on the member's copy, so the apply (and a
	// controller reading the copy) reports the same.
	rep, err := tf.fleet.Apply(context.Background(), plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	require.Len(t, rep.Items, 3)
	for _, it := range plan.Items {
		credits, err := values.CreditsOf(it.Release.Annotations)
		require.NoError(t, err)
		if it.Cluster == "dev-1" {
			assert.Empty(t, credits)
		} else {
			assert.NotEmpty(t, credits, it.Cluster)
		}
	}
}
