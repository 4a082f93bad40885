package distribute_test

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Rendered-manifest mode: Helm renders the unmodified chart once and keeps
// the release on the hub; a propagation policy sends the Deployment to
// the prod members with 1:2 weights, its ConfigMap, Secret, Service and
// Ingress follow it, and an override policy gives eu-2 its own image tag.
// The release's namespace is created on the members that need it.
func ExampleDistributor() {
	var policies policy.Set
	for _, doc := range strings.Split(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  propagateDeps: true
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {env: prod}}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [eu-1]}, weight: 1}
          - {targetCluster: {clusterNames: [eu-2]}, weight: 2}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: eu-2-image, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment}
  overrideRules:
    - targetCluster: {clusterNames: [eu-2]}
      overriders:
        imageOverrider:
          - {component: Tag, operator: replace, value: 6.5.0-eu2}
`, "\n---\n") {
		p, err := policy.Decode([]byte(doc))
		if err != nil {
			fmt.Println(err)
			return
		}
		_ = policies.Add(p)
	}

	hub := memory.New("hub")
	members := []*memory.Cluster{memory.New("dev-1"), memory.New("eu-1"), memory.New("eu-2")}
	fleet := []release.Member{
		{Cluster: members[0], Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}},
		{Cluster: members[1], Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
		{Cluster: members[2], Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
	}
	dist, err := distribute.New(distribute.Config{Hub: hub, Members: fleet, Policies: policies})
	if err != nil {
		fmt.Println(err)
		return
	}

	objs, err := release.Decode(strings.NewReader(`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: 6.5.0
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: 3
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rel := objs.Releases[0]
	charts := reconcile.ChartGetterFunc(func(_ context.Context, r *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: fleettest.Podinfo(r.Spec.Chart.Spec.Version)}, nil
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := rec.Reconcile(context.Background(), dist, rel)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s revision %d on %s, hub objects: %d\n", res.Last(), res.Helm.Version, dist.Name(), len(hub.Objects()))
	for _, m := range members {
		fmt.Printf("%s:\n", m.Name())
		for _, o := range m.Objects() {
			id := o.GetName()
			if o.GetNamespace() != "" {
				id = o.GetNamespace() + "/" + id
			}
			fmt.Printf("  %s %s", o.GetKind(), id)
			if o.GetKind() == "Deployment" {
				n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
				cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				fmt.Printf(" replicas=%d image=%s", n, cs[0].(map[string]any)["image"])
			}
			fmt.Println()
		}
	}
	// Output:
	// install revision 1 on fleet, hub objects: 0
	// dev-1:
	// eu-1:
	//   ConfigMap apps/podinfo
	//   Namespace apps
	//   Secret apps/podinfo
	//   Service apps/podinfo
	//   Deployment apps/podinfo replicas=1 image=ghcr.io/stefanprodan/podinfo:6.5.0
	//   Ingress apps/podinfo
	// eu-2:
	//   ConfigMap apps/podinfo
	//   Namespace apps
	//   Secret apps/podinfo
	//   Service apps/podinfo
	//   Deployment apps/podinfo replicas=2 image=ghcr.io/stefanprodan/podinfo:6.5.0-eu2
	//   Ingress apps/podinfo
}
