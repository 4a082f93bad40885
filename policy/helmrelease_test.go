package policy

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const dividedRelease = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: podinfo
  namespace: apps
  %s
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity: {clusterNames: [m1, m2, m3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [m1]}, weight: 1}
          - {targetCluster: {clusterNames: [m2]}, weight: 2}
          - {targetCluster: {clusterNames: [m3]}, weight: 3}
`

const podinfoRelease = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  chart: {spec: {chart: podinfo, sourceRef: {kind: HelmRepository, name: podinfo}}}
  values: %s
`

func TestDividedHelmReleaseGetsItsShareInValues(t *testing.T) {
	e := engine(t, fmt.Sprintf(dividedRelease, "annotations: {policy.helmfleet.io/replicas-values-path: replicaCount}"))
	rel := object(t, fmt.Sprintf(podinfoRelease, "{replicaCount: 12, image: {tag: 6.5.0}}"))
	p, err := e.Place([]*unstructured.Unstructured{rel}, clusterNames("m1", "m2", "m3"))
	require.NoError(t, err)
	require.Len(t, p.Objects, 1)
	require.NoError(t, p.Objects[0].Err)
	assert.Equal(t, map[string]int64{"m1": 2, "m2": 4, "m3": 6}, targetsOf(p.Objects[0]))
	assert.Empty(t, p.Warnings)

	got := map[string]any{}
	for _, co := range e.Materialize(p) {
		require.Empty(t, co.Errors)
		require.Len(t, co.Objects, 1)
		v, _, err := unstructured.NestedFieldNoCopy(co.Objects[0].Object, "spec", "values", "replicaCount")
		require.NoError(t, err)
		got[co.Cluster] = v
		tag, _, _ := unstructured.NestedString(co.Objects[0].Object, "spec", "values", "image", "tag")
		assert.Equal(t, "6.5.0", tag, "the rest of the values are kept")
	}
	assert.Equal(t, map[string]any{"m1": int64(2), "m2": int64(4), "m3": int64(6)}, got)
}

func TestDividedHelmReleaseNestedPath(t *testing.T) {
	e := engine(t, fmt.Sprintf(dividedRelease, "annotations: {policy.helmfleet.io/replicas-values-path: controller.replicaCount}"))
	rel := object(t, fmt.Sprintf(podinfoRelease, "{controller: {replicaCount: 3}}"))
	p, err := e.Place([]*unstructured.Unstructured{rel}, clusterNames("m1", "m2", "m3"))
	require.NoError(t, err)
	require.NoError(t, p.Objects[0].Err)
	sum := int64(0)
	for _, n := range targetsOf(p.Objects[0]) {
		sum += n
	}
	assert.Equal(t, int64(3), sum, "the members' shares add up to the release's total")
	v, _, _ := unstructured.NestedFieldNoCopy(e.Materialize(p)[0].Objects[0].Object, "spec", "values", "controller", "replicaCount")
	assert.Equal(t, targetsOf(p.Objects[0])["m1"], v)
}

func TestDividedHelmReleaseWithoutTheValueIsAnError(t *testing.T) {
	e := engine(t, fmt.Sprintf(dividedRelease, "annotations: {policy.helmfleet.io/replicas-values-path: replicaCount}"))
	for values, want := range map[string]string{
		"{}":                     "spec.values.replicaCount is not set",
		"{replicaCount: two}":    `spec.values.replicaCount is two (string), not a number`,
		"{replicaCount: 1.5}":    "spec.values.replicaCount is 1.5, not a whole number",
		"{replicaCount: -1}":     "spec.values.replicaCount is -1, a negative number",
		"{replicaCount: [1, 2]}": "not a number of replicas",
	} {
		p, err := e.Place([]*unstructured.Unstructured{object(t, fmt.Sprintf(podinfoRelease, values))}, clusterNames("m1", "m2", "m3"))
		require.ErrorIs(t, err, p.Objects[0].Err, "Place returns the object's error joined")
		require.Error(t, p.Objects[0].Err, values)
		assert.Contains(t, p.Objects[0].Err.Error(), want, values)
		assert.Contains(t, p.Objects[0].Err.Error(), "apps/podinfo", values)
	}
}

func TestDividedHelmReleaseWithoutPathWarns(t *testing.T) {
	e := engine(t, fmt.Sprintf(dividedRelease, ""))
	p, err := e.Place([]*unstructured.Unstructured{object(t, fmt.Sprintf(podinfoRelease, "{replicaCount: 12}"))}, clusterNames("m1", "m2", "m3"))
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"m1": 0, "m2": 0, "m3": 0}, targetsOf(p.Objects[0]), "placed whole on each")
	require.Len(t, p.Warnings, 1)
	w := p.Warnings[0]
	assert.Equal(t, WarnDividedWithoutReplicas, w.Code)
	assert.Equal(t, "podinfo", w.Object.Name)
	assert.Contains(t, w.Message, ReplicasValuesPathAnnotation)
}

func TestReplicasValuesPathAnnotationValidated(t *testing.T) {
	doc := fmt.Sprintf(dividedRelease, "annotations: {policy.helmfleet.io/replicas-values-path: 'controller..replicaCount'}")
	p, err := Decode([]byte(doc))
	if err == nil {
		err = p.(interface{ Validate() error }).Validate()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metadata.annotations[policy.helmfleet.io/replicas-values-path]")
	assert.Contains(t, err.Error(), "controller..replicaCount")

}
