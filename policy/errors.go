package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors, usable with errors.Is on every typed error of this package.
var (
	// ErrInvalid marks a policy that fails validation.
	ErrInvalid = errors.New("invalid policy")
	// ErrPolicyNotFound marks a binding label that names a missing policy.
	ErrPolicyNotFound = errors.New("policy not found")
	// ErrUnschedulable marks an object that no cluster, or too few clusters,
	// can take under its policy.
	ErrUnschedulable = errors.New("unschedulable")
	// ErrOverride marks an overrider that failed on one object and cluster.
	ErrOverride = errors.New("override failed")
	// ErrDecode marks a document that is not a valid policy.
	ErrDecode = errors.New("cannot decode policy")
)

// FieldError is one problem in one policy field.
type FieldError struct {
	// Policy is the offending policy.
	Policy Ref
	// Path is the field path, e.g. spec.overrideRules[1].overriders.plaintext[0].path.
	Path string
	// Value is the bad value.
	Value any
	// Reason says what is wrong.
	Reason string
}

// Error implements error.
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %s: %s (value %s)", e.Policy, e.Path, e.Reason, quote(e.Value))
}

// Is reports ErrInvalid.
func (e *FieldError) Is(target error) bool { return target == ErrInvalid }

// ValidationError lists every problem Validate found in one policy.
type ValidationError struct {
	// Policy is the offending policy.
	Policy Ref
	// Problems in field order.
	Problems []*FieldError
}

// Error implements error.
func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = fmt.Sprintf("%s: %s (value %s)", p.Path, p.Reason, quote(p.Value))
	}
	return fmt.Sprintf("%s is invalid: %s", e.Policy, strings.Join(parts, "; "))
}

// Is reports ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns each problem.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// BindingError says that an object's binding label names a missing policy.
type BindingError struct {
	// Object is the bound object.
	Object ObjectKey
	// Label is the binding label.
	Label string
	// Policy is the policy the label names.
	Policy Ref
}

// Error implements error.
func (e *BindingError) Error() string {
	return fmt.Sprintf("%s: label %s=%q names %s, which does not exist", e.Object, e.Label, e.Policy.Name, e.Policy)
}

// Is reports ErrPolicyNotFound.
func (e *BindingError) Is(target error) bool { return target == ErrPolicyNotFound }

// ScheduleError says why an object could not be placed.
type ScheduleError struct {
	// Object is the object being placed.
	Object ObjectKey
	// Policy is the winning propagation policy.
	Policy Ref
	// Path is the policy field that could not be satisfied.
	Path string
	// Reason says what went wrong.
	Reason string
}

// Error implements error.
func (e *ScheduleError) Error() string {
	return fmt.Sprintf("%s: %s: %s: %s", e.Object, e.Policy, e.Path, e.Reason)
}

// Is reports ErrUnschedulable.
func (e *ScheduleError) Is(target error) bool { return target == ErrUnschedulable }

// OverrideError says which overrider failed for which object and cluster.
type OverrideError struct {
	// Object is the object being overridden.
	Object ObjectKey
	// Cluster is the member cluster.
	Cluster string
	// Policy is the override policy.
	Policy Ref
	// Rule is the index in spec.overrideRules.
	Rule int
	// Path is the overrider's field path inside the rule, e.g.
	// overriders.plaintext[0].
	Path string
	// Target is the JSON pointer in the object the overrider touched.
	Target string
	// Err is the underlying failure.
	Err error
}

// Error implements error.
func (e *OverrideError) Error() string {
	return fmt.Sprintf("%s on cluster %s: %s spec.overrideRules[%d].%s at %q: %v",
		e.Object, e.Cluster, e.Policy, e.Rule, e.Path, e.Target, e.Err)
}

// Unwrap returns the underlying failure.
func (e *OverrideError) Unwrap() error { return e.Err }

// Is reports ErrOverride.
func (e *OverrideError) Is(target error) bool { return target == ErrOverride }

func quote(v any) string {
	switch t := v.(type) {
	case string:
		return fmt.Sprintf("%q", t)
	case nil:
		return "<none>"
	default:
		return fmt.Sprintf("%v", t)
	}
}
