package depgraph

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Sentinel errors. Every typed error of this package matches exactly one of them with
// errors.Is, so callers can test the kind of a problem without naming the key type.
var (
	// ErrCycle matches a *CycleError.
	ErrCycle = errors.New("dependency cycle")
	// ErrMissingDependency matches a *MissingDependencyError.
	ErrMissingDependency = errors.New("unknown dependency")
	// ErrSelfDependency matches a *SelfDependencyError.
	ErrSelfDependency = errors.New("node depends on itself")
	// ErrDuplicateNode matches a *DuplicateNodeError.
	ErrDuplicateNode = errors.New("duplicate node")
	// ErrNotReady wraps the error of Options.Ready when a node ran but never became ready.
	ErrNotReady = errors.New("not ready")
	// ErrPanic matches a *PanicError: a node function or a callback of Options
	// panicked.
	ErrPanic = errors.New("panicked")
	// ErrInvalidArgument matches an *ArgumentError.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInvalidKey matches an *InvalidKeyError.
	ErrInvalidKey = errors.New("invalid key")
	// ErrGated matches a *GateError: Options.Gate skipped a node.
	ErrGated = errors.New("skipped by gate")
)

// Callback names the code of the caller that Run calls, in a *PanicError.
type Callback string

// The callbacks of Run.
const (
	// CallbackFunc is the node function, Run's fn.
	CallbackFunc Callback = "node function"
	// CallbackReady is Options.Ready.
	CallbackReady Callback = "Options.Ready"
	// CallbackEvents is Options.Events.
	CallbackEvents Callback = "Options.Events"
	// CallbackBackoff is Options.Backoff.
	CallbackBackoff Callback = "Options.Backoff"
	// CallbackClockNow is the Now method of Options.Clock.
	CallbackClockNow Callback = "Options.Clock.Now"
	// CallbackClockAfter is the After method of Options.Clock.
	CallbackClockAfter Callback = "Options.Clock.After"
	// CallbackGate is Options.Gate.
	CallbackGate Callback = "Options.Gate"
)

// PanicError reports a panic that Run recovered from a node function or a
// callback of Options, naming the node that was being handled and the callback.
// No panic of the caller's code escapes from the goroutines of Run.
type PanicError[K comparable] struct {
	// Key is the node being handled when the panic happened.
	Key K
	// Callback is the code that panicked.
	Callback Callback
	// Value is the value passed to panic.
	Value any
	// Stack is the stack of the panicking goroutine, for debugging.
	Stack []byte
}

// Error names the node, the callback and the panic's value.
func (e *PanicError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: %s panicked: %v", quoteKey(e.Key), e.Callback, e.Value)
}

// Is reports whether target is ErrPanic.
func (e *PanicError[K]) Is(target error) bool { return target == ErrPanic }

// Unwrap returns the panic's value if it is an error, such as a runtime.Error.
func (e *PanicError[K]) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// GateError is the Err of a node that Options.Gate skipped: the gate's error,
// or a *PanicError if it panicked.
type GateError[K comparable] struct {
	// Key is the skipped node.
	Key K
	// Err is what the gate returned.
	Err error
}

// Error names the node and the gate's reason.
func (e *GateError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: skipped by Options.Gate: %v", quoteKey(e.Key), e.Err)
}

// Is reports whether target is ErrGated.
func (e *GateError[K]) Is(target error) bool { return target == ErrGated }

// Unwrap returns the gate's error.
func (e *GateError[K]) Unwrap() error { return e.Err }

// ArgumentError reports an argument that a function of this package cannot work
// with, such as a nil graph given to Run.
type ArgumentError struct {
	// Func is the function or method, such as "Run".
	Func string
	// Arg is the argument's name, such as "g".
	Arg string
	// Reason says what is wrong with it, such as "is nil".
	Reason string
}

// Error names the function, the argument and the problem.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("depgraph: %s: argument %s %s", e.Func, e.Arg, e.Reason)
}

// Is reports whether target is ErrInvalidArgument.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArgument }

// InvalidKeyError reports a key that cannot identify a node: a key type such as
// any whose dynamic value cannot be a map key (a slice, a map or a function). The
// node is not added.
type InvalidKeyError[K comparable] struct {
	// Key is the node being added.
	Key K
	// Field is "key" when the node's own key is bad, or "deps[i]" for a
	// dependency.
	Field string
	// Value is the bad key.
	Value K
	// Reason says what is wrong, from the runtime's panic.
	Reason string
}

// Error names the node, the field and the bad value.
func (e *InvalidKeyError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: %s %s: %s", quoteKey(e.Key), e.Field, quoteKey(e.Value), e.Reason)
}

// Is reports whether target is ErrInvalidKey.
func (e *InvalidKeyError[K]) Is(target error) bool { return target == ErrInvalidKey }

// CycleError reports one dependency cycle. Graph.Validate and Graph.Waves return one
// CycleError per strongly connected component, so every cycle is named.
type CycleError[K comparable] struct {
	// Cycle holds the nodes of the cycle in dependency order: Cycle[0] depends on
	// Cycle[1], …, and the last node depends on Cycle[0]. Cycle[0] is the node of the
	// cycle that was added first, and the cycle is a shortest one through it.
	Cycle []K
	// Rest is the partial order of the graph: the topological waves of every node that
	// is neither on a cycle nor depends, directly or transitively, on one.
	Rest [][]K
}

// Error names the cycle as "a" → "b" → "c" → "a".
func (e *CycleError[K]) Error() string {
	var b strings.Builder
	b.WriteString("depgraph: dependency cycle: ")
	for _, k := range e.Cycle {
		b.WriteString(quoteKey(k))
		b.WriteString(" → ")
	}
	if len(e.Cycle) > 0 {
		b.WriteString(quoteKey(e.Cycle[0]))
	}
	return b.String()
}

// Is reports whether target is ErrCycle.
func (e *CycleError[K]) Is(target error) bool { return target == ErrCycle }

// MissingDependencyError reports a dependency on a node that is not in the graph.
type MissingDependencyError[K comparable] struct {
	// Key is the node that declares the dependency.
	Key K
	// Index is the position of the dependency in the node's Deps.
	Index int
	// Dep is the unknown node.
	Dep K
}

// Error names the node, the field path and the unknown key.
func (e *MissingDependencyError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: deps[%d]: unknown node %s", quoteKey(e.Key), e.Index, quoteKey(e.Dep))
}

// Is reports whether target is ErrMissingDependency.
func (e *MissingDependencyError[K]) Is(target error) bool { return target == ErrMissingDependency }

// SelfDependencyError reports a node that lists itself among its dependencies.
type SelfDependencyError[K comparable] struct {
	// Key is the node.
	Key K
	// Index is the position of the self-reference in the node's Deps.
	Index int
}

// Error names the node and the field path.
func (e *SelfDependencyError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: deps[%d]: depends on itself", quoteKey(e.Key), e.Index)
}

// Is reports whether target is ErrSelfDependency.
func (e *SelfDependencyError[K]) Is(target error) bool { return target == ErrSelfDependency }

// DuplicateNodeError reports a node added more than once. The first addition is kept.
type DuplicateNodeError[K comparable] struct {
	// Key is the node added twice.
	Key K
}

// Error names the node.
func (e *DuplicateNodeError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: added more than once", quoteKey(e.Key))
}

// Is reports whether target is ErrDuplicateNode.
func (e *DuplicateNodeError[K]) Is(target error) bool { return target == ErrDuplicateNode }

// NodeError is a node's failure as returned by Run: it names the node and wraps the
// error of its function (or of Options.Ready, wrapped in ErrNotReady, or a
// *PanicError).
type NodeError[K comparable] struct {
	// Key is the failed node.
	Key K
	// Err is the node's last error.
	Err error
}

// Error names the node and its error, once: an error that already begins with
// the node's name (a *PanicError) is not prefixed again.
func (e *NodeError[K]) Error() string {
	prefix := "depgraph: node " + quoteKey(e.Key) + ": "
	msg := fmt.Sprint(e.Err)
	if strings.HasPrefix(msg, prefix) {
		return msg
	}
	return prefix + msg
}

// Unwrap returns the node's error.
func (e *NodeError[K]) Unwrap() error { return e.Err }

// keyString is how a key appears in errors, DOT and Mermaid: fmt's %v, which uses a
// String method when the key type has one.
func keyString[K comparable](k K) string { return fmt.Sprint(k) }

func quoteKey[K comparable](k K) string { return strconv.Quote(keyString(k)) }
