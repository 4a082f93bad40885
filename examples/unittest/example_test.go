package unittest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/helmfleet/helmfleet/examples/unittest"
	"github.com/helmfleet/helmfleet/release/fleettest"
)

// A rollout on an in-memory fleet where the prod canary cannot be reached:
// dev is upgraded, the canary fails with its own error, and the rest of
// prod is never touched.
func ExampleRolloutPlatform() {
	ctx := context.Background()
	fl, err := fleettest.New(fleettest.Config{Members: []fleettest.Member{
		{Name: "dev-1", Labels: map[string]string{"env": "dev"}},
		{Name: "prod-eu-1", Labels: map[string]string{"env": "prod", "canary": "true"}},
		{Name: "prod-us-1", Labels: map[string]string{"env": "prod"}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fl.Cluster("prod-eu-1").SetUnreachable(errors.New("connection refused"))
	in, err := fleettest.Inputs(`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everywhere}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease}
  placement:
    clusterAffinity:
      labelSelector:
        matchExpressions: [{key: env, operator: Exists}]
`)
	if err != nil {
		fmt.Println(err)
		return
	}

	rep, err := unittest.RolloutPlatform(ctx, fl.Fleet, in, 0)
	for _, it := range rep.Items {
		fmt.Printf("%-11s %-22s %-11s revision %d\n", it.Wave, it.Key, it.State, it.Revision)
	}
	fmt.Println("halted:", rep.Halted)
	fmt.Println("error names the member:", strings.Contains(err.Error(), "prod-eu-1:apps/podinfo"))
	// Output:
	// dev         dev-1:apps/podinfo     succeeded   revision 1
	// prod-canary prod-eu-1:apps/podinfo failed      revision 0
	//             prod-us-1:apps/podinfo not-started revision 0
	// halted: true
	// error names the member: true
}
