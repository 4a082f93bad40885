package celhealth

import (
	"context"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// FuzzExpressions: any text a tenant writes is refused with a
// *FieldError or evaluates to a result or an *EvalError, never a panic.
func FuzzExpressions(f *testing.F) {
	for _, s := range []string{"true", "data.", "status.conditions.filter(e, e.type == 'Ready').all(e, e.status == 'True')",
		"dep.status.ready == true", "[1,2].map(x, x * 2)", "'a'.matches('(')", "1/0 == 1", "self.metadata.name.split('-')[9] == 'x'"} {
		f.Add(s)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "a-b"}, "status": map[string]any{"ready": true}}}
	f.Fuzz(func(t *testing.T, src string) {
		ev, err := NewEvaluator("spec.healthCheckExprs[0]", Check{Current: src})
		var inv *InvalidError
		if err != nil && !errors.As(err, &inv) {
			t.Fatalf("%q: %T %v", src, err, err)
		}
		if err == nil {
			if _, err := ev.Status(context.Background(), obj); err != nil {
				var ee *EvalError
				if !errors.As(err, &ee) {
					t.Fatalf("%q: %T %v", src, err, err)
				}
			}
		}
		r, err := NewReadyExpr("spec.dependsOn[0].readyExpr", src)
		var fe *FieldError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("%q: %T %v", src, err, err)
		}
		if err == nil {
			_, _ = r.Ready(context.Background(), obj.Object, obj.Object)
		}
	})
}
