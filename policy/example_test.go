package policy_test

import (
	"fmt"

	"github.com/helmfleet/helmfleet/policy"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func mustDecode(doc string) any {
	p, err := policy.Decode([]byte(doc))
	if err != nil {
		panic(err)
	}
	return p
}

func obj(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "shop"},
	}}
	if spec != nil {
		o.Object["spec"] = spec
	}
	return o
}

// Place a Deployment by weight and let its ConfigMap follow it.
func ExampleEngine_Place() {
	var set policy.Set
	_ = set.Add(mustDecode(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: shop}
spec:
  propagateDeps: true
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {env: prod}}
    replicaScheduling:
      replicaSchedulingType: Divided
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [a]}, weight: 1}
          - {targetCluster: {clusterNames: [b, c]}, weight: 2}
`))
	e, err := policy.NewEngine(set)
	if err != nil {
		panic(err)
	}
	web := obj("apps/v1", "Deployment", "web", map[string]any{
		"replicas": int64(7),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "web", "envFrom": []any{map[string]any{"configMapRef": map[string]any{"name": "web-config"}}},
		}}}},
	})
	cfg := obj("v1", "ConfigMap", "web-config", nil)
	prod := map[string]string{"env": "prod"}
	clusters := []policy.Cluster{{Name: "a", Labels: prod}, {Name: "b", Labels: prod}, {Name: "c", Labels: prod}, {Name: "dev"}}
	p, err := e.Place([]*unstructured.Unstructured{web, cfg}, clusters)
	if err != nil {
		panic(err)
	}
	fmt.Print(p.Table())
	// Output:
	// OBJECT                     a  b  c  dev  POLICY
	// ConfigMap shop/web-config  ✓  ✓  ✓  -    follows Deployment shop/web
	// Deployment shop/web        1  3  3  -    PropagationPolicy shop/web
}

// Divide replicas by static weights with the Webster method.
func ExampleDivide() {
	targets, _ := policy.Divide(5, []policy.Weight{{Cluster: "a", Weight: 170}, {Cluster: "b", Weight: 110}, {Cluster: "c", Weight: 60}}, "")
	for _, t := range targets {
		fmt.Println(t.Cluster, t.Replicas)
	}
	// Output:
	// a 2
	// b 2
	// c 1
}

// Give one cluster its own Helm values with the values overrider.
func ExampleEngine_Override() {
	var set policy.Set
	_ = set.Add(mustDecode(`
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: values, namespace: shop}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease}
  overrideRules:
    - targetCluster: {clusterNames: [cn]}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 3}
          - {path: /image/repository, operator: replace, value: registry.cn.example.com/podinfo}
`))
	e, _ := policy.NewEngine(set)
	release := obj("helm.toolkit.fluxcd.io/v2", "HelmRelease", "podinfo", map[string]any{
		"values": map[string]any{"replicaCount": int64(1), "image": map[string]any{"repository": "ghcr.io/stefanprodan/podinfo"}},
	})
	out, applied, err := e.Override(release, policy.Cluster{Name: "cn"})
	if err != nil {
		panic(err)
	}
	values, _, _ := unstructured.NestedMap(out.Object, "spec", "values")
	fmt.Println(values)
	for _, a := range applied {
		fmt.Println(a.Policy, a.Overrider)
	}
	// Output:
	// map[image:map[repository:registry.cn.example.com/podinfo] replicaCount:3]
	// OverridePolicy shop/values overriders.valuesOverrider[0]
	// OverridePolicy shop/values overriders.valuesOverrider[1]
}

// ClusterAffinity.Matches answers for one cluster as Karmada's
// ClusterMatches does: a zone In matches a cluster with any listed zone.
func ExampleClusterAffinity_Matches() {
	a := policy.ClusterAffinity{
		ExcludeClusters: []string{"member3"},
		FieldSelector: &policy.FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: policy.FieldZone, Operator: corev1.NodeSelectorOpIn, Values: []string{"eu-west-1a"}},
		}},
	}
	for _, c := range []policy.Cluster{
		{Name: "member1", Zones: []string{"eu-west-1a", "eu-west-1b"}},
		{Name: "member2", Zones: []string{"us-east-1a"}},
		{Name: "member3", Zones: []string{"eu-west-1a"}},
	} {
		fmt.Println(c.Name, a.Matches(c))
	}
	// Output:
	// member1 true
	// member2 false
	// member3 false
}

// MatchObject is a policy's implicit priority for an object: the best level
// at which any of its resource selectors selects it.
func ExampleMatchObject() {
	web := obj("apps/v1", "Deployment", "web", nil)
	fmt.Println(policy.MatchObject(web,
		policy.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"},
		policy.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}))
	fmt.Println(policy.MatchObject(web, policy.ResourceSelector{APIVersion: "apps/v1", Kind: "StatefulSet"}))
	// Output:
	// name
	// none
}
