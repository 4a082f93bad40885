package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
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
	charts := release.ChartGetterFunc(func(_ context.Context, r *release.Release) (*release.Chart, error) {
		ch, err := testchart.Load(r.Spec.Chart.Spec.Version)
		return &release.Chart{Chart: ch}, err
	})
	rec, err := release.NewReconciler(release.ReconcilerConfig{Charts: charts})
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
