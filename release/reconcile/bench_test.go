package reconcile_test

import (
	"github.com/helmfleet/helmfleet/internal/fixture"

	"context"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// BenchmarkReconcile measures one install through the reconciler against
// Helm's own action.Install on the same in-memory cluster and chart
// (20 objects), and a no-op reconcile of an in-sync release.
func BenchmarkReconcile(b *testing.B) {
	ctx := context.Background()
	ch := testchart.Grown(15)
	charts := reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	vals := map[string]any{"replicaCount": 2}

	b.Run("install/helmfleet", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c := memory.New("m")
			rel := fixture.Release()
			rel.Spec.Values = vals
			if _, err := rec.Reconcile(ctx, c, rel); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("install/helm-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			c := memory.New("m")
			cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
			if err != nil {
				b.Fatal(err)
			}
			cfg.Releases.MaxHistory = 5
			in := action.NewInstall(cfg)
			in.ReleaseName, in.Namespace, in.Wait, in.WaitForJobs, in.Timeout = "podinfo", "apps", true, true, 5*time.Minute
			if _, err := in.Run(ch, vals); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("noop/helmfleet", func(b *testing.B) {
		c := memory.New("m")
		rel := fixture.Release()
		rel.Spec.Values = vals
		if _, err := rec.Reconcile(ctx, c, rel); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			res, err := rec.Reconcile(ctx, c, rel)
			if err != nil || len(res.Actions) != 0 {
				b.Fatal(err, res.Actions)
			}
		}
	})
}
