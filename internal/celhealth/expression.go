package celhealth

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

// DefaultCostLimit bounds the work of one evaluation, in CEL's cost
// units: Kubernetes' limit for one validation rule.
const DefaultCostLimit uint64 = 1_000_000

// interruptEvery is how many comprehension steps pass between checks of
// the context, as Kubernetes and Flux do.
const interruptEvery = 100

// Option sets an optional limit of compiled expressions.
type Option func(*config)

type config struct {
	costLimit uint64
}

// WithCostLimit bounds each evaluation at limit cost units instead of
// DefaultCostLimit; an evaluation that goes beyond fails.
func WithCostLimit(limit uint64) Option {
	return func(c *config) { c.costLimit = limit }
}

func newConfig(opts []Option) config {
	c := config{costLimit: DefaultCostLimit}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// expression is one compiled CEL expression and where it was written.
type expression struct {
	field string
	src   string
	prog  cel.Program
}

// newEnv is the CEL environment of Flux's expressions: its extensions
// (strings, sets, encoders, optional types) and options, plus vars.
func newEnv(vars ...cel.EnvOption) (*cel.Env, error) {
	return cel.NewEnv(append([]cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(),
		ext.Sets(),
		ext.Encoders(),
	}, vars...)...)
}

// parse parses src, written at field, without type checks: its
// variables are whatever the evaluation binds.
func parse(env *cel.Env, field, src string, c config) (*expression, error) {
	ast, iss := env.Parse(src)
	if iss != nil && iss.Err() != nil {
		return nil, &FieldError{Field: field, Value: src, Reason: "is not valid CEL: " + issueText(iss)}
	}
	return program(env, ast, field, src, c)
}

// compile parses and type-checks src, written at field; it must yield a
// boolean.
func compile(env *cel.Env, field, src string, c config) (*expression, error) {
	ast, iss := env.Compile(src)
	if iss != nil && iss.Err() != nil {
		return nil, &FieldError{Field: field, Value: src, Reason: "is not valid CEL: " + issueText(iss)}
	}
	// As Flux: a field read from an object is dyn, so "dep.status.ready"
	// is refused and "dep.status.ready == true" accepted.
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) {
		return nil, &FieldError{Field: field, Value: src, Reason: fmt.Sprintf("must yield a bool, not %s (compare a field with == true)", t)}
	}
	return program(env, ast, field, src, c)
}

func program(env *cel.Env, ast *cel.Ast, field, src string, c config) (*expression, error) {
	prog, err := env.Program(ast,
		cel.EvalOptions(cel.OptOptimize),
		cel.InterruptCheckFrequency(interruptEvery),
		cel.CostLimit(c.costLimit))
	if err != nil {
		return nil, &FieldError{Field: field, Value: src, Reason: "is not valid CEL: " + err.Error()}
	}
	return &expression{field: field, src: src, prog: prog}, nil
}

// issueText is CEL's errors on one line each, without the source
// snippet: "ERROR: <input>:1:6: Syntax error: …".
func issueText(iss *cel.Issues) string {
	var lines []string
	for _, l := range strings.Split(iss.String(), "\n") {
		if strings.HasPrefix(l, "ERROR:") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) == 0 {
		return iss.String()
	}
	return strings.Join(lines, "; ")
}

// bool evaluates e over vars; anything but a boolean is an *EvalError.
func (e *expression) bool(ctx context.Context, vars map[string]any) (bool, error) {
	val, _, err := e.prog.ContextEval(ctx, vars)
	if err != nil {
		return false, &EvalError{Field: e.field, Expr: e.src, Err: err}
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, &EvalError{Field: e.field, Expr: e.src, Err: fmt.Errorf("yields %s, not a bool", typeName(val))}
	}
	return bool(b), nil
}

func typeName(v ref.Val) string {
	if v == nil {
		return "nothing"
	}
	return v.Type().TypeName()
}
