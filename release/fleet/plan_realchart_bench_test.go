package fleet_test

import (
	"context"
	"fmt"
	"testing"

	"helm.sh/helm/v3/pkg/action"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
)

// BenchmarkFleetPlanRealChart measures fleet.Plan of kube-prometheus-stack
// (with its subcharts) on 3 fresh in-memory members, against three Helm
// action.Install dry runs (ClientOnly false) on such members'
// configurations, in the same run; goal <= 1.2x in time and bytes. Helm's
// dry run does not create a chart's CRDs and then cannot map its custom
// resources, so each of its members gets the chart's CRDs first, untimed.
// The ratio is logged with -v:
//
//	go test -run '^$' -bench BenchmarkFleetPlanRealChart -benchmem -benchtime 3x -v ./release/fleet/
func BenchmarkFleetPlanRealChart(b *testing.B) {
	const n = 3
	ctx := context.Background()
	rel, ch := kpsRelease(b)
	rec := kpsReconciler(b, ch)
	set := fixture.PolicySet(b, fmt.Sprintf(kpsPolicy, release.APIVersion, release.Kind, ""))
	var plan, helm fixture.OpCost
	b.Run("fleet-plan-3", func(b *testing.B) {
		plan = fixture.MeasureOps(b, func() func() {
			members, _ := realChartMembers(n)
			f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
			if err != nil {
				b.Fatal(err)
			}
			return func() {
				p, err := f.Plan(ctx, fleet.Inputs{Releases: []*release.Release{rel}, Policies: set})
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Items) != n {
					b.Fatalf("plan has %d items, want %d", len(p.Items), n)
				}
				for _, it := range p.Items {
					if it.Err != nil || len(it.Objects) == 0 {
						b.Fatalf("%s: %v (%d objects)", it.Cluster, it.Err, len(it.Objects))
					}
				}
			}
		})
	})
	b.Run("helm-dry-run-3", func(b *testing.B) {
		helm = fixture.MeasureOps(b, func() func() {
			_, clusters := realChartMembers(n)
			var runs []*action.Install
			for _, c := range clusters {
				fixture.StoreCRDs(ctx, b, c, ch)
				cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.Namespace, Namespace: rel.Namespace})
				if err != nil {
					b.Fatal(err)
				}
				in := action.NewInstall(cfg)
				in.ReleaseName, in.Namespace = rel.Name, rel.Namespace
				in.DryRun, in.ClientOnly = true, false
				runs = append(runs, in)
			}
			return func() {
				for _, in := range runs {
					out, err := in.RunWithContext(ctx, ch, testcharts.DefaultValues(testcharts.KubePrometheusStack))
					if err != nil {
						b.Fatal(err)
					}
					if out.Manifest == "" {
						b.Fatal("helm: empty manifest")
					}
				}
			}
		})
	})
	if helm.NS > 0 && helm.Bytes > 0 {
		b.Logf("fleet-plan/helm-dry-run over %d members: %.2fx time, %.2fx bytes (goal <= 1.2x each)", n, plan.NS/helm.NS, plan.Bytes/helm.Bytes)
	}
}
