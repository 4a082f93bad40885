package reconcile_test

import (
	"context"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// BenchmarkPlanRealChart measures Reconciler.Plan of kube-prometheus-stack
// (the vendored chart of internal/testcharts with its default test
// values) on one fresh in-memory cluster, against Helm's action.Install
// with DryRun (ClientOnly false, so Helm reads the cluster as it does for
// a dry run against a real one) on such a cluster's configuration, in
// the same run. Helm's dry run does not create a chart's CRDs and then
// cannot map its custom resources, so its cluster gets the chart's CRDs
// first, untimed. Each sub-benchmark reports ns/op and B/op; plan/helm is
// the ratio (goal <= 1.2x in time and bytes), logged with -v. The chart is loaded once:
// neither side measures loading it. Run:
//
//	go test -run '^$' -bench BenchmarkPlanRealChart -benchmem -count 5 -v ./release/reconcile/
func BenchmarkPlanRealChart(b *testing.B) {
	ctx := context.Background()
	rel, ch := fixture.KubePrometheusStack(b)
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	}), PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	var plan, helm fixture.OpCost
	b.Run("plan", func(b *testing.B) {
		plan = fixture.MeasureOps(b, func() func() {
			c := memory.New("m1", memory.WithPollInterval(time.Millisecond))
			return func() {
				p := rec.Plan(ctx, c, rel)
				if p.Err != nil {
					b.Fatal(p.Err)
				}
				if p.Action != reconcile.ActionInstall || len(p.Objects) == 0 {
					b.Fatalf("plan: action %v with %d objects, want an install", p.Action, len(p.Objects))
				}
			}
		})
	})
	b.Run("helm-dry-run", func(b *testing.B) {
		helm = fixture.MeasureOps(b, func() func() {
			c := memory.New("m1", memory.WithPollInterval(time.Millisecond))
			fixture.StoreCRDs(ctx, b, c, ch)
			cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.Namespace, Namespace: rel.Namespace})
			if err != nil {
				b.Fatal(err)
			}
			in := action.NewInstall(cfg)
			in.ReleaseName, in.Namespace = rel.Name, rel.Namespace
			in.DryRun, in.ClientOnly = true, false
			vals := testcharts.DefaultValues(testcharts.KubePrometheusStack)
			return func() {
				out, err := in.RunWithContext(ctx, ch, vals)
				if err != nil {
					b.Fatal(err)
				}
				if out.Manifest == "" {
					b.Fatal("helm: empty manifest")
				}
			}
		})
	})
	if helm.NS > 0 && helm.Bytes > 0 {
		b.Logf("plan/helm-dry-run: %.2fx time, %.2fx bytes (goal <= 1.2x each)", plan.NS/helm.NS, plan.Bytes/helm.Bytes)
	}
}
