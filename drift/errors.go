package drift

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Every error this package returns for bad input wraps one
// of them, so callers can branch with errors.Is and read the details with
// errors.As on *RuleError, *ObjectError or *PointerError.
var (
	// ErrInvalidPointer: an ignore path is not an RFC 6901 JSON pointer.
	ErrInvalidPointer = errors.New("invalid JSON pointer")
	// ErrInvalidSelector: a target regex or label/annotation selector does not parse.
	ErrInvalidSelector = errors.New("invalid selector")
	// ErrInvalidRule: a rule lists nothing to ignore, or an option is unknown.
	ErrInvalidRule = errors.New("invalid rule")
	// ErrInvalidObject: an object lacks its kind or name, or is nil.
	ErrInvalidObject = errors.New("invalid object")
	// ErrDuplicateObject: the same object appears twice in one list.
	ErrDuplicateObject = errors.New("duplicate object")
	// ErrKindMismatch: a desired and a live object given as a pair are not
	// the same object (group, kind, namespace or name differ).
	ErrKindMismatch = errors.New("desired and live objects differ in identity")
	// ErrNoConfig: Detect or Compare was called without a compiled Config.
	ErrNoConfig = errors.New("no drift config: call Compile first")
)

// PointerError reports why a string is not an RFC 6901 JSON pointer.
type PointerError struct {
	// Pointer is the text that failed to parse.
	Pointer string
	// Offset is the byte offset of the problem in Pointer.
	Offset int
	// Reason says what is wrong at Offset.
	Reason string
}

// Error implements error.
func (e *PointerError) Error() string {
	return fmt.Sprintf("invalid JSON pointer %q at offset %d: %s", e.Pointer, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidPointer) true.
func (e *PointerError) Unwrap() error { return ErrInvalidPointer }

// RuleError names the rule and the field of it that is wrong. Rule is the
// rule's position in the configuration, such as "ignore[2]" or
// "managers[0]"; Field is the path inside the rule, such as "paths[1]" or
// "target.kind".
type RuleError struct {
	// Rule is the rule's place in the configuration.
	Rule string
	// Field is the path inside the rule.
	Field string
	// Value is the bad value.
	Value string
	// Err wraps the sentinel and says what is wrong.
	Err error
}

// Error implements error.
func (e *RuleError) Error() string {
	return fmt.Sprintf("%s.%s %q: %v", e.Rule, e.Field, e.Value, e.Err)
}

// Unwrap returns the underlying error, which wraps one of the sentinels.
func (e *RuleError) Unwrap() error { return e.Err }

// ObjectError names an object handed to Detect or Compare that cannot be
// compared: which list it came from ("desired" or "live"), its index there,
// what is known of its identity, the field at fault and its value.
type ObjectError struct {
	// Side is "desired" or "live".
	Side string
	// Index is the object's index in its list, -1 for Compare.
	Index int
	// Object is what is known of the object's identity.
	Object ObjectRef
	// Field is the field at fault, such as "kind" or "metadata.name".
	Field string
	// Value is the field's value.
	Value string
	// Err is, or wraps, one of the sentinels.
	Err error
}

// Error implements error.
func (e *ObjectError) Error() string {
	where := e.Side
	if e.Index >= 0 {
		where += "[" + strconv.Itoa(e.Index) + "]"
	}
	return fmt.Sprintf("%s object %s: %s %q: %v", where, e.Object, e.Field, e.Value, e.Err)
}

// Unwrap returns the underlying error, one of the sentinels.
func (e *ObjectError) Unwrap() error { return e.Err }
