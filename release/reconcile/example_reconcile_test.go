package reconcile_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// A Reconciler installs a release on a cluster, does nothing while it is
// in sync, and upgrades it when its values change.
func ExampleReconciler() {
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
    replicaCount: 2
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
	cluster := memory.New("dev-1")
	ctx := context.Background()
	for _, replicas := range []int{2, 2, 3} {
		rel.Spec.Values["replicaCount"] = replicas
		res, err := rec.Reconcile(ctx, cluster, rel)
		if err != nil {
			fmt.Println(err)
			return
		}
		ready := rel.Status.GetCondition(release.ConditionReady)
		fmt.Printf("%s revision=%d ready=%s reason=%s\n", res.Last(), res.Helm.Version, ready.Status, ready.Reason)
	}
	fmt.Println(strings.Join(cluster.Summary(), "\n"))
	// Output:
	// install revision=1 ready=True reason=InstallSucceeded
	// none revision=1 ready=True reason=InstallSucceeded
	// upgrade revision=2 ready=True reason=UpgradeSucceeded
	// ConfigMap apps/podinfo
	// Deployment apps/podinfo
	// Ingress apps/podinfo
	// Secret apps/podinfo
	// Service apps/podinfo
}
