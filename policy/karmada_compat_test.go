package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestValidationNoStricterThanKarmada: what Karmada's admission takes,
// Validate takes; what Karmada refuses that these cases touch, Validate
// refuses, naming the field.
func TestValidationNoStricterThanKarmada(t *testing.T) {
	const spec = "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n"
	tests := []struct {
		name      string
		placement string
		wantPath  string // "" = valid
		wantText  string
	}{
		{name: "toleration with only an effect", placement: "    clusterTolerations: [{effect: NoSchedule}]\n"},
		{name: "toleration Equal without a key", placement: "    clusterTolerations: [{operator: Equal, effect: NoExecute}]\n"},
		{name: "toleration Lt", placement: "    clusterTolerations: [{key: gpu, operator: Lt, value: \"3\"}]\n",
			wantPath: "spec.placement.clusterTolerations[0].operator", wantText: "Karmada refuses Lt and Gt"},
		{name: "spread by label alone", placement: "    spreadConstraints: [{spreadByLabel: topology.example.com/rack, maxGroups: 2, minGroups: 1}]\n"},
		{name: "spread by region alone", placement: "    spreadConstraints: [{spreadByField: region, maxGroups: 2, minGroups: 1}]\n",
			wantPath: "spec.placement.spreadConstraints", wantText: "a constraint by cluster is required with one by region, zone or provider"},
		{name: "spread by region and cluster", placement: "    spreadConstraints: [{spreadByField: region, maxGroups: 2}, {spreadByField: cluster, maxGroups: 3}]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(ppHead + spec + tt.placement))
			require.NoError(t, err)
			err = p.(*PropagationPolicy).Validate()
			if tt.wantPath == "" {
				assert.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, tt.wantPath, ve.Problems[0].Path)
			assert.Contains(t, ve.Problems[0].Reason, tt.wantText)
		})
	}
}

// TestEffectOnlyTolerationToleratesTaintsOfThatEffect: Karmada's sample
// toleration {effect: NoSchedule} tolerates, as in Kubernetes (the empty
// operator is Equal, the empty key any key), the NoSchedule taints without
// a value, and no taint with one.
func TestEffectOnlyTolerationToleratesTaintsOfThatEffect(t *testing.T) {
	e := engine(t, ppHead+"spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n    clusterTolerations: [{effect: NoSchedule}]\n")
	clusters := clusterNames("a", "b", "c")
	clusters[1].Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	clusters[2].Taints = []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	p, err := e.Place(objects(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 2}\n"), clusters)
	require.NoError(t, err)
	require.Len(t, p.Objects, 1)
	assert.Equal(t, map[string]int64{"a": 2, "b": 2}, targetsOf(p.Objects[0]))
}

// TestUnsupportedKarmadaFieldsDecodeAndAreRefusedByName: workloadAffinity
// and overflowAffinities are Karmada fields: they decode, and Validate
// says helmfleet does not support them yet, at their path.
func TestUnsupportedKarmadaFieldsDecodeAndAreRefusedByName(t *testing.T) {
	tests := []struct{ name, placement, path string }{
		{"workloadAffinity", "    workloadAffinity:\n      affinity: {groupByLabelKey: app.group}\n      antiAffinity: {groupByLabelKey: app.tier}\n", "spec.placement.workloadAffinity"},
		{"overflowAffinities", "    clusterAffinities:\n      - affinityName: primary\n        clusterNames: [a]\n        overflowAffinities:\n          - affinityName: burst\n            clusterNames: [b]\n    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}\n", "spec.placement.clusterAffinities[0].overflowAffinities"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(ppHead + "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n" + tt.placement))
			require.NoError(t, err)
			err = p.(*PropagationPolicy).Validate()
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, tt.path, ve.Problems[0].Path)
			assert.Contains(t, err.Error(), "helmfleet does not support yet")
			assert.Contains(t, err.Error(), "PropagationPolicy shop/web")
			assert.NotContains(t, err.Error(), "unknown field")
		})
	}
}

// TestNoPathAbsentWarningForRemoveAfterAdd: a remove that follows an add of
// the same path in one rule finds what the add wrote.
func TestNoPathAbsentWarningForRemoveAfterAdd(t *testing.T) {
	e := engine(t, ppHead+"spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]}\n---\n"+opHead+`spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  overrideRules:
    - overriders:
        plaintext:
          - {path: /metadata/annotations, operator: add, value: {a: b}}
          - {path: /metadata/annotations, operator: remove}
          - {path: /spec/paused, operator: remove}
`)
	p, err := e.Place(objects(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 1}\n"), clusterNames("a"))
	require.NoError(t, err)
	var got []string
	for _, w := range p.Warnings {
		got = append(got, w.String())
	}
	assert.Equal(t, []string{
		"OverridePathAbsent: OverridePolicy shop/tune spec.overrideRules[0].overriders.plaintext[2].path: remove /spec/paused finds no such path on kind Deployment (e.g. Deployment shop/web)",
	}, got)
}
