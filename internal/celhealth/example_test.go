package celhealth_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/celhealth"
)

// A Kustomization's or HelmRelease's spec.healthCheckExprs judge the
// objects of their group; others are left to kstatus.
func ExampleSet_Status() {
	set, err := celhealth.NewSet("spec.healthCheckExprs", []celhealth.Check{{
		APIVersion: "example.com/v1",
		Current:    "status.phase == 'Ready'",
		Failed:     "status.phase == 'Broken'",
	}})
	if err != nil {
		panic(err)
	}
	for _, phase := range []string{"Ready", "Pending", "Broken"} {
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget", "status": map[string]any{"phase": phase}}}
		res, ok, err := set.Status(context.Background(), w)
		fmt.Println(phase, ok, res.Status, res.Message, err)
	}
	_, ok, _ := set.Status(context.Background(), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}})
	fmt.Println("Deployment", ok)
	// Output:
	// Ready true Current spec.healthCheckExprs[0].current is true <nil>
	// Pending true InProgress spec.healthCheckExprs[0].current is not true yet <nil>
	// Broken true Failed spec.healthCheckExprs[0].failed is true <nil>
	// Deployment false
}

// A dependsOn readyExpr sees the dependent as self and the dependency as
// dep.
func ExampleReadyExpr_Ready() {
	r, err := celhealth.NewReadyExpr("spec.dependsOn[0].readyExpr", "dep.status.lastAttemptedRevision == self.spec.chart.spec.version")
	if err != nil {
		panic(err)
	}
	self := map[string]any{"spec": map[string]any{"chart": map[string]any{"spec": map[string]any{"version": "1.2.3"}}}}
	dep := map[string]any{"status": map[string]any{"lastAttemptedRevision": "1.2.3"}}
	fmt.Println(r.Ready(context.Background(), self, dep))

	_, err = celhealth.NewReadyExpr("spec.dependsOn[0].readyExpr", "dep.status.ready")
	fmt.Println(err)
	// Output:
	// true <nil>
	// spec.dependsOn[0].readyExpr: "dep.status.ready" must yield a bool, not dyn (compare a field with == true)
}
