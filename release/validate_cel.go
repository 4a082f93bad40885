package release

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/celhealth"
	"github.com/helmfleet/helmfleet/internal/fieldcheck"
)

// healthChecks are checks as the CEL layer takes them.
func healthChecks(checks []CustomHealthCheck) []celhealth.Check {
	out := make([]celhealth.Check, len(checks))
	for i, hc := range checks {
		out[i] = celhealth.Check{APIVersion: hc.APIVersion, Kind: hc.Kind,
			Current: hc.Current, InProgress: hc.InProgress, Failed: hc.Failed}
	}
	return out
}

// validateHealthCheckExprs compiles spec.healthCheckExprs as Flux does
// when it reconciles (apiVersion and current required, expressions
// parsed, one check per group and kind) and adds a problem for each bad
// field, with CEL's message.
func validateHealthCheckExprs(p *fieldcheck.Problems, checks []CustomHealthCheck) {
	if len(checks) == 0 {
		return
	}
	_, err := celhealth.NewSet("spec.healthCheckExprs", healthChecks(checks))
	addCELProblems(p, err)
}

// validateReadyExpr compiles a spec.dependsOn[].readyExpr at path as
// Flux does: type-checked with self and dep, yielding a bool.
func validateReadyExpr(p *fieldcheck.Problems, path, expr string) {
	if expr == "" {
		return
	}
	_, err := celhealth.NewReadyExpr(path, expr)
	addCELProblems(p, err)
}

func addCELProblems(p *fieldcheck.Problems, err error) {
	var inv *celhealth.InvalidError
	var fe *celhealth.FieldError
	switch {
	case err == nil:
	case errors.As(err, &inv):
		for _, f := range inv.Problems {
			p.Add(f.Field, f.Value, "%s", f.Reason)
		}
	case errors.As(err, &fe):
		p.Add(fe.Field, fe.Value, "%s", fe.Reason)
	default:
		p.Add("spec", "", "%v", err)
	}
}

// HealthJudge compiles checks, a spec.healthCheckExprs, into a Judge for
// UnreadyJudged: an object of a group and kind they check is judged by
// their expressions, as Flux's CEL status reader does; any other is left
// to kstatus. It is nil for no checks. Validate reports the same errors
// field by field.
func HealthJudge(checks []CustomHealthCheck) (Judge, error) {
	if len(checks) == 0 {
		return nil, nil
	}
	set, err := celhealth.NewSet("spec.healthCheckExprs", healthChecks(checks))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, obj *unstructured.Unstructured) (string, string, bool, error) {
		res, ok, err := set.Status(ctx, obj)
		return string(res.Status), res.Message, ok, err
	}, nil
}
