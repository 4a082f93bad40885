package release

import (
	"errors"

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
