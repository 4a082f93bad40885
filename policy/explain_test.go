package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestExplain(t *testing.T) {
	policies := `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everything}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: podinfo}]
  placement:
    clusterAffinity: {clusterNames: [east, west]}
    replicaScheduling:
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [east]}, weight: 3}
          - {targetCluster: {clusterNames: [west]}, weight: 1}
---
` + ov("images", "", "- overriders: {imageOverrider: [{component: Registry, operator: replace, value: mirror.east}]}") + "---\n" +
		ov("tune", "shop", "- targetCluster: {clusterNames: [east]}\n  overriders: {labelsOverrider: [{operator: add, value: {site: east}}]}")
	e := engine(t, policies)
	objs := objects(t, strings.Replace(podinfoDeployment, "replicas: 2", "replicas: 4", 1))
	p, err := e.Place(objs, clusterNames("east", "north", "west"))
	require.NoError(t, err)
	key := KeyOf(objs[0])

	x, err := e.Explain(p, key, "east")
	require.NoError(t, err)
	assert.Equal(t, "PropagationPolicy shop/web", x.Selection.Policy.String())
	assert.Equal(t, "a namespaced policy beats ClusterPropagationPolicy everything", x.Selection.Reason)
	assert.True(t, x.Placed)
	assert.Equal(t, Target{Cluster: "east", Replicas: 3}, x.Target)
	require.Len(t, x.Applied, 2)
	assert.Equal(t, "ClusterOverridePolicy images", x.Applied[0].Policy.String())
	assert.Equal(t, "OverridePolicy shop/tune", x.Applied[1].Policy.String())
	assert.Equal(t, `Deployment shop/podinfo on cluster east
  propagation: PropagationPolicy shop/web (a namespaced policy beats ClusterPropagationPolicy everything)
  placed, replicas 3
  override: ClusterOverridePolicy images rule 0 overriders.imageOverrider[0] -> /spec/template/spec/containers/0/image, /spec/template/spec/containers/1/image
  override: OverridePolicy shop/tune rule 0 overriders.labelsOverrider[0] -> /metadata/labels/site
  diff: add /metadata/labels/site "east"
  diff: replace /spec/replicas 3
  diff: replace /spec/template/spec/containers/0/image "mirror.east/stefanprodan/podinfo:6.5.0"
  diff: replace /spec/template/spec/containers/1/image "mirror.east/envoyproxy/envoy:v1.29"
`, x.String())

	x, err = e.Explain(p, key, "north")
	require.NoError(t, err)
	assert.False(t, x.Placed)
	assert.Contains(t, x.String(), "not placed on this cluster")

	_, err = e.Explain(p, key, "south")
	assert.ErrorContains(t, err, `cluster "south" is not in the placement`)
	_, err = e.Explain(p, ObjectKey{Kind: "Secret", Name: "x"}, "east")
	assert.ErrorContains(t, err, "Secret x is not in the placement")
}

func TestWarnings(t *testing.T) {
	policies := `apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  priority: 1
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}, {apiVersion: v1, kind: Service}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: loser, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Service}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: typo, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deploymnet}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: replicas, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}, {apiVersion: v1, kind: Service}]
  overrideRules:
    - targetCluster: {clusterNames: [nowhere]}
      overriders:
        plaintext: [{path: /spec/replicas, operator: replace, value: 1}]
        imageOverrider: [{component: Tag, operator: replace, value: x}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: unused}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
  overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {a: b}}]}}]
`
	e := engine(t, policies)
	objs := objects(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 1}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec: {ports: [{port: 80}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: shop}\nspec: {}\n")
	p, err := e.Place(objs, clusterNames("a"))
	require.NoError(t, err)
	var got []string
	for _, w := range p.Warnings {
		got = append(got, w.String())
	}
	assert.Equal(t, []string{
		"OverridePathAbsent: OverridePolicy shop/replicas spec.overrideRules[0].overriders.imageOverrider[0]: without a predicate it only changes Pods and workloads, so it does nothing on kind Service (e.g. Service shop/api)",
		"OverridePathAbsent: OverridePolicy shop/replicas spec.overrideRules[0].overriders.plaintext[0].path: replace /spec/replicas finds no such path on kind Service (e.g. Service shop/api)",
		"PolicyMatchesNothing: ClusterOverridePolicy unused selects none of the 3 objects",
		"PolicyMatchesNothing: PropagationPolicy shop/typo selects none of the 3 objects",
		"PolicyNeverWins: PropagationPolicy shop/loser matches objects but another policy wins each of them",
	}, got)
}

func TestMaterializeAgreesWithOverride(t *testing.T) {
	e := engine(t, ov("o", "shop", "- overriders: {labelsOverrider: [{operator: add, value: {x: z}}]}")+"---\n"+placement("{}"))
	objs := objects(t, podinfoDeployment)
	p, err := e.Place(objs, clusterNames("a"))
	require.NoError(t, err)
	m := e.Materialize(p)
	require.Len(t, m[0].Objects, 1)
	o, _, err := e.Override(objs[0], Cluster{Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, o, m[0].Objects[0])
	assert.IsType(t, &unstructured.Unstructured{}, m[0].Objects[0])
}
