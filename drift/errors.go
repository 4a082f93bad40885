package drift

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors. Every error this package returns for bad input wraps one
// of them, so callers can branch with errors.Is and read the details with
// errors.As on *RuleError, *ObjectError, *LimitError or *PointerError.
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
	// ErrTooLarge: an object exceeds MaxDepth or MaxKeyedListLength.
	ErrTooLarge = errors.New("object too large")
)

// Limits on the objects Detect and Compare accept. They lie far beyond
// anything a Kubernetes API server stores (it refuses requests over
// 1.5 MiB, and its JSON decoder nesting over 10,000 levels), and bound the
// work and memory that a hostile manifest can make a comparison take.
const (
	// MaxDepth is how deeply maps and lists may nest in the fields that are
	// compared, and in the values of a difference: a value whose JSON
	// pointer has more than MaxDepth tokens is refused.
	MaxDepth = 1000
	// MaxKeyedListLength is how many elements a list that Kubernetes
	// merges by key (containers, env, ports, …) may hold in either object.
	// Such lists are matched through an index, in time and memory linear
	// in their length.
	MaxKeyedListLength = 100_000
)

// Limit names one of the limits of Detect and Compare.
type Limit string

const (
	// LimitDepth is MaxDepth.
	LimitDepth Limit = "depth"
	// LimitKeyedList is MaxKeyedListLength.
	LimitKeyedList Limit = "keyed list length"
)

// LimitError reports an object beyond one of the limits of Detect and
// Compare: which list it came from, its index there, the object, and the
// JSON pointer of the value at fault. When an object exceeds limits in
// several places, Path is the first of them in string order.
type LimitError struct {
	// Side is "desired" or "live".
	Side string
	// Index is the object's index in its list, -1 for Compare.
	Index int
	// Object identifies the object.
	Object ObjectRef
	// Path is the JSON pointer of the value at fault: the keyed list that
	// is too long, or the first value nested too deeply.
	Path string
	// Limit says which limit was exceeded.
	Limit Limit
	// Max is the limit.
	Max int
	// Actual is the list's length, or the depth of Path (MaxDepth+1:
	// deeper levels are not counted).
	Actual int
}

// maxErrorPath bounds the pointer shown in LimitError.Error: a pointer a
// thousand tokens deep must not flood a log line.
const maxErrorPath = 200

// Error implements error.
func (e *LimitError) Error() string {
	where := e.Side
	if e.Index >= 0 {
		where += "[" + strconv.Itoa(e.Index) + "]"
	}
	path := e.Path
	if len(path) > maxErrorPath {
		path = path[:maxErrorPath/2] + "…" + path[len(path)-maxErrorPath/2:]
	}
	if e.Limit == LimitDepth {
		return fmt.Sprintf("%s object %s: %q: nested more than %d levels deep: %v", where, e.Object, path, e.Max, ErrTooLarge)
	}
	return fmt.Sprintf("%s object %s: %q: %s %d exceeds the limit of %d: %v", where, e.Object, path, e.Limit, e.Actual, e.Max, ErrTooLarge)
}

// Unwrap returns ErrTooLarge.
func (e *LimitError) Unwrap() error { return ErrTooLarge }

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
