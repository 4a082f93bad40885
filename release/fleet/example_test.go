package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// A Fleet plans a release over three in-memory members, one real Helm
// release each, with per-member values from an override policy, then
// applies the plan in two waves: dev first, prod once dev is healthy.
func ExampleFleet() {
	objs, err := release.Load(strings.NewReader(`
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
    replicaCount: 1
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector: {matchExpressions: [{key: env, operator: In, values: [dev, prod]}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: prod-replicas, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {env: prod}}}
      overriders:
        plaintext:
          - {path: /spec/values/replicaCount, operator: replace, value: 3}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	charts := reconcile.ChartGetterFunc(func(_ context.Context, r *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: fleettest.Podinfo(r.Spec.Chart.Spec.Version)}, nil
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts})
	if err != nil {
		fmt.Println(err)
		return
	}
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"dev-1", "dev"}, {"prod-eu-1", "prod"}, {"prod-us-1", "prod"}} {
		members = append(members, release.Member{Cluster: memory.New(m.name), Facts: policy.Cluster{Labels: map[string]string{"env": m.env}}})
	}
	fl, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	plan, err := fl.Plan(ctx, fleet.InputsOf(objs))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range plan.Items {
		fmt.Printf("plan %s: %s %s@%s replicaCount=%v\n", it.Cluster, it.Action, it.Chart, it.Version, it.Release.Spec.Values["replicaCount"])
	}
	rep, err := fl.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves:    []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod", Selector: "env=prod"}},
		BakeTime: 10 * time.Millisecond,
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, it := range rep.Items {
		fmt.Printf("wave %s, %s: %s, revision %d\n", it.Wave, it.Key.Cluster, it.State, it.Revision)
	}
	for _, w := range rep.Waves {
		fmt.Printf("wave %s %v: %d succeeded, %d failed\n", w.Name, w.Clusters, w.Succeeded, w.Failed)
	}
	// Output:
	// plan dev-1: install podinfo@6.5.0 replicaCount=1
	// plan prod-eu-1: install podinfo@6.5.0 replicaCount=3
	// plan prod-us-1: install podinfo@6.5.0 replicaCount=3
	// wave dev, dev-1: succeeded, revision 1
	// wave prod, prod-eu-1: succeeded, revision 1
	// wave prod, prod-us-1: succeeded, revision 1
	// wave dev [dev-1]: 1 succeeded, 0 failed
	// wave prod [prod-eu-1 prod-us-1]: 2 succeeded, 0 failed
}

// examplePodinfo is podinfo reading its values from the ConfigMap
// podinfo-values, placed on the members named.
func examplePodinfo(members string) string {
	return `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
  annotations: {fleet.helmfleet.io/values-from: member}
spec:
  interval: 10m
  chart:
    spec: {chart: podinfo, version: 6.5.0, sourceRef: {kind: HelmRepository, name: podinfo}}
  valuesFrom:
    - {kind: ConfigMap, name: podinfo-values}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity: {clusterNames: [` + members + `]}
`
}

// A release annotated fleet.helmfleet.io/values-from: member reads its
// valuesFrom ConfigMap on each member, so each member gets its own
// values; the fleet keeps its inventory in Secrets on the hub, so a new
// process (a new Fleet over the same store) uninstalls what an earlier
// one installed once the policy no longer places it.
func ExampleNewObjectStore() {
	ctx := context.Background()
	charts := reconcile.ChartGetterFunc(func(_ context.Context, r *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: fleettest.Podinfo(r.Spec.Chart.Spec.Version)}, nil
	})
	hub := memory.New("hub")
	var members []release.Member
	for i, name := range []string{"eu-1", "us-1"} {
		c := memory.New(name)
		// Per-cluster values, placed on each member (as ClusterResourceSets do).
		values := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "apps", "name": "podinfo-values"},
			"data":     map[string]any{"values.yaml": fmt.Sprintf("replicaCount: %d\n", i+2)},
		}}
		if _, err := c.Apply(ctx, values, release.ApplyOptions{FieldManager: "platform"}); err != nil {
			fmt.Println(err)
			return
		}
		members = append(members, release.Member{Cluster: c})
	}
	process := func(placeOn string) {
		store, err := fleet.NewObjectStore(hub, fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "example"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fl, err := fleet.New(fleet.Config{Members: members, Store: store,
			ReconcilerConfig: &reconcile.Config{Charts: charts, Values: release.NewObjectValues(hub)}})
		if err != nil {
			fmt.Println(err)
			return
		}
		objs, err := release.Load(strings.NewReader(examplePodinfo(placeOn)))
		if err != nil {
			fmt.Println(err)
			return
		}
		plan, err := fl.Plan(ctx, fleet.InputsOf(objs))
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, it := range plan.Items {
			from, ok := plan.ValuesFrom(fleet.Key{Cluster: it.Cluster, Namespace: "apps", Name: "podinfo"})
			if !ok { // an uninstall composes no values
				fmt.Printf("%s: %s (%s)\n", it.Cluster, it.Action, it.Reason)
				continue
			}
			fmt.Printf("%s: %s (valuesFrom read on the %s: replicaCount=%v)\n", it.Cluster, it.Action, from, it.Values.Values["replicaCount"])
		}
		if _, err := fl.Apply(ctx, plan, fleet.ApplyOptions{}); err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println("first process:")
	process("eu-1, us-1")
	fmt.Println("after a restart, us-1 left out:")
	process("eu-1")
	// Output:
	// first process:
	// eu-1: install (valuesFrom read on the member: replicaCount=2)
	// us-1: install (valuesFrom read on the member: replicaCount=3)
	// after a restart, us-1 left out:
	// eu-1: none (valuesFrom read on the member: replicaCount=2)
	// us-1: uninstall (no longer placed on this member)
}
