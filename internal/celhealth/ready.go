package celhealth

import (
	"context"

	"github.com/google/cel-go/cel"
)

// The variables of a readyExpr.
const (
	// SelfVar is the dependent object.
	SelfVar = "self"
	// DepVar is the dependency.
	DepVar = "dep"
)

// ReadyExpr is a compiled spec.dependsOn[].readyExpr.
type ReadyExpr struct {
	expr *expression
}

// NewReadyExpr compiles src, written at field (such as
// "spec.dependsOn[0].readyExpr"): it is type-checked with self and dep
// as objects and must yield a bool, as Flux requires. An error is a
// *FieldError.
func NewReadyExpr(field, src string, opts ...Option) (*ReadyExpr, error) {
	if src == "" {
		return nil, &FieldError{Field: field, Reason: "is empty"}
	}
	env, err := newEnv(
		cel.Variable(SelfVar, cel.ObjectType("google.protobuf.Struct")),
		cel.Variable(DepVar, cel.ObjectType("google.protobuf.Struct")))
	if err != nil {
		return nil, &FieldError{Field: field, Value: src, Reason: "CEL environment: " + err.Error()}
	}
	e, err := compile(env, field, src, newConfig(opts))
	if err != nil {
		return nil, err
	}
	return &ReadyExpr{expr: e}, nil
}

// Ready evaluates the expression with self bound to the dependent and
// dep to the dependency, each as its unstructured content; an error is
// an *EvalError.
func (r *ReadyExpr) Ready(ctx context.Context, self, dep map[string]any) (bool, error) {
	return r.expr.bool(ctx, map[string]any{SelfVar: self, DepVar: dep})
}
