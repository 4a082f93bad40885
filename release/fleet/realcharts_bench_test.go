package fleet_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// realChartMembers returns n fresh in-memory members sharing one Schemas.
func realChartMembers(n int) ([]release.Member, []*memory.Cluster) {
	shared := memory.NewSchemas()
	members := make([]release.Member, n)
	clusters := make([]*memory.Cluster, n)
	for i := range members {
		clusters[i] = memory.New(fmt.Sprintf("member-%04d", i), memory.WithSchemas(shared), memory.WithPollInterval(time.Millisecond))
		members[i] = release.Member{Cluster: clusters[i], Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}}
	}
	return members, clusters
}

// kpsRelease is kube-prometheus-stack with the test values, waits on.
func kpsRelease(b *testing.B) (*release.Release, *chart.Chart) {
	b.Helper()
	return fixture.KubePrometheusStack(b)
}

const kpsPolicy = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: kps, namespace: monitoring}
spec:
  resourceSelectors:
    - {apiVersion: %s, kind: %s, name: kube-prometheus-stack%s}
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {tier: apps}}
`

// kpsReconciler serves ch loaded once, as a source serves a chart it has
// cached by digest, so that neither side of a pair measures loading it.
func kpsReconciler(b *testing.B, ch *chart.Chart) *reconcile.Reconciler {
	b.Helper()
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	}), PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	return rec
}

// BenchmarkRealChart measures kube-prometheus-stack (86 objects, 10 CRDs)
// on in-memory members, each pair in the same run:
//   - render-once-100 (the Distributor: Helm renders once on a hub and
//     the objects are spread over 100 members) against
//     render-per-cluster-100 (a Fleet: one Helm release per member, 100
//     renders and installs); goal ≥ 10×;
//   - reconcile (one Reconcile, install with waits, on one member)
//     against helm-install (Helm's action.Install of the same chart and
//     values with Wait, on the same backend); goal ≤ 1.10×.
func BenchmarkRealChart(b *testing.B) {
	ctx := context.Background()
	const n = 100
	b.Run("render-once-100", func(b *testing.B) {
		rel, ch := kpsRelease(b)
		rec := kpsReconciler(b, ch)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			members, _ := realChartMembers(n)
			set := fixture.PolicySet(b, fmt.Sprintf(kpsPolicy, "monitoring.coreos.com/v1", "Prometheus", "-prometheus"))
			d, err := distribute.New(distribute.Config{Hub: memory.New("hub"), Members: members, Policies: set, PollInterval: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			r := rel.DeepCopy()
			b.StartTimer()
			if _, err := rec.Reconcile(ctx, d, r); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "members/s")
	})
	b.Run("render-per-cluster-100", func(b *testing.B) {
		rel, ch := kpsRelease(b)
		rec := kpsReconciler(b, ch)
		set := fixture.PolicySet(b, fmt.Sprintf(kpsPolicy, release.APIVersion, release.Kind, ""))
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			members, _ := realChartMembers(n)
			f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			plan, err := f.Plan(ctx, fleet.Inputs{Releases: []*release.Release{rel}, Policies: set})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Apply(ctx, plan, fleet.ApplyOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "members/s")
	})
	b.Run("reconcile", func(b *testing.B) {
		rel, ch := kpsRelease(b)
		rec := kpsReconciler(b, ch)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c := memory.New("m1", memory.WithPollInterval(time.Millisecond))
			r := rel.DeepCopy()
			b.StartTimer()
			if _, err := rec.Reconcile(ctx, c, r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("helm-install", func(b *testing.B) {
		rel, ch := kpsRelease(b)
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			c := memory.New("m1", memory.WithPollInterval(time.Millisecond))
			cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.Namespace, Namespace: rel.Namespace})
			if err != nil {
				b.Fatal(err)
			}
			in := action.NewInstall(cfg)
			in.ReleaseName, in.Namespace, in.Wait, in.Timeout = rel.Name, rel.Namespace, true, 5*time.Minute
			vals := testcharts.DefaultValues(testcharts.KubePrometheusStack)
			b.StartTimer()
			if _, err := in.RunWithContext(ctx, ch, vals); err != nil {
				b.Fatal(err)
			}
		}
	})
}
