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
	// ErrPanic wraps the value of a node function that panicked.
	ErrPanic = errors.New("node function panicked")
)

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
// error of its function (or of Options.Ready, wrapped in ErrNotReady).
type NodeError[K comparable] struct {
	// Key is the failed node.
	Key K
	// Err is the node's last error.
	Err error
}

// Error names the node and its error.
func (e *NodeError[K]) Error() string {
	return fmt.Sprintf("depgraph: node %s: %v", quoteKey(e.Key), e.Err)
}

// Unwrap returns the node's error.
func (e *NodeError[K]) Unwrap() error { return e.Err }

// keyString is how a key appears in errors, DOT and Mermaid: fmt's %v, which uses a
// String method when the key type has one.
func keyString[K comparable](k K) string { return fmt.Sprint(k) }

func quoteKey[K comparable](k K) string { return strconv.Quote(keyString(k)) }
