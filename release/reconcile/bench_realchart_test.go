package reconcile_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

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
	var plan, helm opCost
	b.Run("plan", func(b *testing.B) {
		plan = measureOps(b, func() func() {
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
		helm = measureOps(b, func() func() {
			c := memory.New("m1", memory.WithPollInterval(time.Millisecond))
			applyCRDs(ctx, b, c, ch)
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
	if helm.ns > 0 && helm.bytes > 0 {
		b.Logf("plan/helm-dry-run: %.2fx time, %.2fx bytes (goal <= 1.2x each)", plan.ns/helm.ns, plan.bytes/helm.bytes)
	}
}

// applyCRDs stores the CRDs of ch and its subcharts on c, as Helm's
// install does before it renders (its dry run skips that step, and then
// cannot map the chart's custom resources).
func applyCRDs(ctx context.Context, b *testing.B, c *memory.Cluster, ch *chart.Chart) {
	b.Helper()
	for _, crd := range ch.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				b.Fatal(err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			if _, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "helm", Force: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// opCost is the time and bytes allocated per operation.
type opCost struct{ ns, bytes float64 }

// measureOps runs b.N operations, each made by setup with the timer
// stopped, and returns their cost per operation (the B/op the benchmark
// reports too, counted here so the caller can compare two).
func measureOps(b *testing.B, setup func() func()) opCost {
	b.ReportAllocs()
	var ms runtime.MemStats
	var bytes uint64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		op := setup()
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		b.StartTimer()
		op()
		b.StopTimer()
		runtime.ReadMemStats(&ms)
		bytes += ms.TotalAlloc - before
		b.StartTimer()
	}
	return opCost{ns: float64(b.Elapsed().Nanoseconds()) / float64(b.N), bytes: float64(bytes) / float64(b.N)}
}
