package helmv4_test

import (
	"context"
	"fmt"

	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// A Reconciler runs every release with Helm v4 when its Config names the
// engine; Helm v4 records how it applied each revision.
func ExampleEngine() {
	charts := reconcile.ChartGetterFunc(func(_ context.Context, r *release.Release) (*reconcile.Chart, error) {
		ch, err := testcharts.Load(testcharts.Name(r.Spec.Chart.Spec.Chart))
		return &reconcile.Chart{Chart: ch}, err
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts, Engine: helmv4.Engine{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	rel := podinfo()
	rel.Spec.Test = nil
	cluster := memory.New("dev-1")
	res, err := rec.Reconcile(context.Background(), cluster, rel)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Last(), res.Helm.Version, res.Helm.Labels[helmv4.ApplyMethodLabel])
	// Output:
	// install 1 ssa
}
