package celhealth

import (
	"fmt"
	"strings"
)

// FieldError is one bad field of a health check or readyExpr: an
// expression CEL refuses, a required field left empty, a duplicate.
type FieldError struct {
	// Field is the path of the field, such as
	// spec.healthCheckExprs[2].current.
	Field string
	// Value is the field's value: the expression as written.
	Value string
	// Reason says what is wrong, with CEL's own message.
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %q %s", e.Field, e.Value, e.Reason)
}

// InvalidError lists every bad field of a set of health checks, in field
// order.
type InvalidError struct {
	// Problems are the bad fields.
	Problems []*FieldError
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Error()
	}
	return strings.Join(parts, "; ")
}

// EvalError is an expression that could not be evaluated over an
// object: a field it reads is missing, it yields something other than a
// boolean, it costs too much, or its context was done.
type EvalError struct {
	// Field is where the expression is written.
	Field string
	// Expr is the expression.
	Expr string
	// Err is CEL's error.
	Err error
}

func (e *EvalError) Error() string {
	return fmt.Sprintf("%s: evaluating %q: %v", e.Field, e.Expr, e.Err)
}

// Unwrap returns CEL's error.
func (e *EvalError) Unwrap() error { return e.Err }
