package policy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const ppHead = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web, namespace: shop}\n"
const opHead = "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: tune, namespace: shop}\n"

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []FieldError // Policy is filled from the document
	}{
		{"valid propagation", ppHead + "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n", nil},
		{"selector without kind and no selectors", ppHead + "spec:\n  resourceSelectors: [{apiVersion: apps/v1}]\n",
			[]FieldError{{Path: "spec.resourceSelectors[0].kind", Value: "", Reason: "is required"}}},
		{"empty selectors", ppHead + "spec: {resourceSelectors: []}\n",
			[]FieldError{{Path: "spec.resourceSelectors", Reason: "at least one selector is required"}}},
		{"selector in another namespace", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service, namespace: other}]\n",
			[]FieldError{{Path: "spec.resourceSelectors[0].namespace", Value: "other", Reason: `must be the policy's own namespace "shop"`}}},
		{"unknown label selector operator", ppHead + "spec:\n  resourceSelectors:\n    - apiVersion: v1\n      kind: Service\n      labelSelector: {matchExpressions: [{key: a, operator: Near, values: [x]}]}\n",
			[]FieldError{{Path: "spec.resourceSelectors[0].labelSelector", Value: `&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:a,Operator:Near,Values:[x],},},}`, Reason: `"Near" is not a valid label selector operator`}}},
		{"field selector key and operator", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n  placement:\n    clusterAffinity:\n      fieldSelector:\n        matchExpressions: [{key: country, operator: Exists}]\n",
			[]FieldError{
				{Path: "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].key", Value: "country", Reason: "must be provider, region or zone"},
				{Path: "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].operator", Value: "Exists", Reason: "must be In or NotIn"},
			}},
		{"region value that is no label value", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n  placement:\n    clusterAffinity:\n      fieldSelector:\n        matchExpressions: [{key: region, operator: In, values: [eu-west-1, \"eu west\"]}, {key: zone, operator: In, values: [\"any zone\"]}]\n",
			[]FieldError{{Path: "spec.placement.clusterAffinity.fieldSelector.matchExpressions[0].values", Value: []string{"eu-west-1", "eu west"},
				Reason: "values[1][region]: Invalid value: \"eu west\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"}}},
		{"negative weight and bad enum", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Split\n      weightPreference:\n        staticWeightList: [{targetCluster: {clusterNames: [a]}, weight: -3}]\n",
			[]FieldError{
				{Path: "spec.placement.replicaScheduling.replicaSchedulingType", Value: "Split", Reason: "must be Duplicated or Divided"},
				{Path: "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight", Value: int64(-3), Reason: "must not be negative"},
			}},
		{"both affinity forms", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n  placement:\n    clusterAffinity: {clusterNames: [a]}\n    clusterAffinities: [{affinityName: x}, {affinityName: x}]\n",
			[]FieldError{
				{Path: "spec.placement.clusterAffinities", Value: 2, Reason: "cannot be set together with clusterAffinity"},
				{Path: "spec.placement.clusterAffinities[1].affinityName", Value: "x", Reason: "is used by an earlier group"},
			}},
		{"region spread without cluster spread, max below min", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n  placement:\n    spreadConstraints: [{spreadByField: region, minGroups: 3, maxGroups: 2}]\n",
			[]FieldError{
				{Path: "spec.placement.spreadConstraints[0].maxGroups", Value: 2, Reason: "must not be less than minGroups 3"},
				{Path: "spec.placement.spreadConstraints", Value: 1, Reason: "a constraint by cluster is required with one by region, zone or provider"},
			}},
		{"toleration", ppHead + "spec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n  placement:\n    clusterTolerations: [{key: k, operator: Gt, value: \"1\"}]\n",
			[]FieldError{
				{Path: "spec.placement.clusterTolerations[0].operator", Value: "Gt", Reason: "must be empty, Exists or Equal (Karmada refuses Lt and Gt for clusters)"},
			}},
		{"namespace missing", "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: Service}]\n",
			[]FieldError{{Path: "metadata.namespace", Value: "", Reason: "is required for a namespaced policy"}}},
		{"override rule problems carry the rule index", opHead + `spec:
  overrideRules:
    - overriders: {labelsOverrider: [{operator: add, value: {a: b}}]}
    - overriders:
        plaintext: [{path: spec/replicas, operator: patch}]
        imageOverrider: [{component: Digest, operator: replace}]
        commandOverrider: [{containerName: "", operator: replace}]
        fieldOverrider: [{fieldPath: /data/x, json: [{subPath: "/a~2", operator: add}], yaml: [{subPath: /b, operator: add}]}]
        valuesOverrider: [{merge: [1]}, {path: /a, operator: add, merge: {}}]
        labelsOverrider: [{operator: add, value: {"bad key!": "v"}}]
`,
			[]FieldError{
				{Path: "spec.overrideRules[1].overriders.imageOverrider[0].component", Value: "Digest", Reason: "must be Registry, Repository or Tag"},
				{Path: "spec.overrideRules[1].overriders.imageOverrider[0].value", Value: "", Reason: "is required for replace"},
				{Path: "spec.overrideRules[1].overriders.commandOverrider[0].containerName", Value: "", Reason: "is required"},
				{Path: "spec.overrideRules[1].overriders.commandOverrider[0].operator", Value: "replace", Reason: "must be one of [add remove]"},
				{Path: "spec.overrideRules[1].overriders.labelsOverrider[0].value[bad key!]", Value: "bad key!", Reason: "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"},
				{Path: "spec.overrideRules[1].overriders.fieldOverrider[0]", Value: "/data/x", Reason: "exactly one of json and yaml must be set"},
				{Path: "spec.overrideRules[1].overriders.fieldOverrider[0].json[0].subPath", Value: "/a~2", Reason: `JSON pointer "/a~2" has a bad escape in "a~2"`},
				{Path: "spec.overrideRules[1].overriders.plaintext[0].path", Value: "spec/replicas", Reason: `JSON pointer "spec/replicas" does not start with /`},
				{Path: "spec.overrideRules[1].overriders.plaintext[0].operator", Value: "patch", Reason: "must be one of [add remove replace]"},
				{Path: "spec.overrideRules[1].overriders.valuesOverrider[0].merge", Value: "[1]", Reason: "must be a map"},
				{Path: "spec.overrideRules[1].overriders.valuesOverrider[1]", Value: "/a", Reason: "merge cannot be combined with path/operator"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(tt.doc))
			require.NoError(t, err)
			err = p.(interface{ Validate() error }).Validate()
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.ErrorIs(t, err, ErrInvalid)
			got := make([]FieldError, len(ve.Problems))
			for i, fe := range ve.Problems {
				assert.Equal(t, ve.Policy, fe.Policy)
				got[i] = FieldError{Path: fe.Path, Value: fe.Value, Reason: fe.Reason}
			}
			assert.Equal(t, tt.want, got)
			var fe *FieldError
			require.True(t, errors.As(err, &fe))
			assert.Contains(t, err.Error(), ve.Policy.String())
		})
	}
}

func TestNewEngineReportsEveryInvalidPolicy(t *testing.T) {
	set := policySet(t, ppHead+"spec: {resourceSelectors: []}\n---\n"+opHead+"spec:\n  overrideRules: [{overriders: {plaintext: [{path: x, operator: add}]}}]\n---\n"+ppHead+"spec: {resourceSelectors: [{apiVersion: v1, kind: Service}]}\n---\n"+ppHead+"spec: {resourceSelectors: [{apiVersion: v1, kind: Secret}]}\n")
	_, err := NewEngine(set)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "PropagationPolicy shop/web is invalid: spec.resourceSelectors")
	assert.ErrorContains(t, err, "OverridePolicy shop/tune is invalid: spec.overrideRules[0].overriders.plaintext[0].path")
	assert.ErrorContains(t, err, "metadata.name: is used by another policy of the same kind")
}
