package depgraph

import (
	"maps"
	"time"
)

// State is the outcome of one node of a run.
type State int

const (
	// NotStarted: the node never ran because the run was cancelled before its turn,
	// including a node whose dependency failed only after the cancellation.
	NotStarted State = iota
	// Succeeded: the node's function returned nil and, with Options.Ready, the node
	// became ready.
	Succeeded
	// Failed: the node's function failed on its last attempt, panicked, or the node did
	// not become ready.
	Failed
	// Skipped: the node did not run because a node it depends on, directly or
	// transitively, failed, or Options.Gate refused it; NodeResult.Cause names
	// that node (and NodeResult.Err holds the gate's *GateError).
	Skipped
)

// String returns the state's name in lower case, as in DOT and Mermaid exports.
func (s State) String() string {
	switch s {
	case NotStarted:
		return "not-started"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case Skipped:
		return "skipped"
	}
	return "unknown"
}

// NodeResult is what happened to one node during a run.
type NodeResult[K comparable] struct {
	// Key is the node.
	Key K
	// Group is the node's group.
	Group string
	// State is the node's outcome.
	State State
	// Err is the error of a Failed node: its function's last error, the readiness
	// error wrapped in ErrNotReady, or a *PanicError of the function, Options.Ready,
	// Options.Backoff or Options.Clock.After (joined with the function's last error
	// for the latter two); for a node Options.Gate skipped, a *GateError.
	Err error
	// Cause is, for a Skipped node, the failed node that made it skip.
	Cause K
	// Attempts counts the calls of the node's function.
	Attempts int
	// Started is when the node was started; zero if it never was.
	Started time.Time
	// Applied is when the node's function succeeded (before waiting for readiness).
	Applied time.Time
	// Finished is when the node succeeded, failed or was skipped; zero if it never
	// finished.
	Finished time.Time
}

// Result reports every node of a run, in graph order.
type Result[K comparable] struct {
	// Nodes holds one entry per node of the graph, in the order the nodes were added.
	Nodes []NodeResult[K]
	index map[K]int32
}

// Get returns the result of the node key. A nil Result has none.
func (r *Result[K]) Get(key K) (NodeResult[K], bool) {
	if r == nil {
		return NodeResult[K]{}, false
	}
	i, ok := r.index[key]
	if !ok {
		return NodeResult[K]{}, false
	}
	return r.Nodes[i], true
}

// Keys returns the nodes in state s, in graph order. A nil Result has none.
func (r *Result[K]) Keys(s State) []K {
	if r == nil {
		return nil
	}
	var out []K
	for _, n := range r.Nodes {
		if n.State == s {
			out = append(out, n.Key)
		}
	}
	return out
}

func newResult[K comparable](g *Graph[K]) *Result[K] {
	r := &Result[K]{Nodes: make([]NodeResult[K], len(g.nodes)), index: maps.Clone(g.index)}
	for i, n := range g.nodes {
		r.Nodes[i].Key = n.Key
		r.Nodes[i].Group = n.Group
	}
	return r
}

// EventKind says what happened to a node.
type EventKind int

const (
	// EventStarted: the node's first attempt begins.
	EventStarted EventKind = iota
	// EventRetrying: an attempt failed and another follows after Event.Delay.
	EventRetrying
	// EventApplied: the node's function succeeded and Options.Ready is being waited
	// for. Only sent when Options.Ready is set.
	EventApplied
	// EventSucceeded: the node succeeded (and is ready); its dependents may start.
	EventSucceeded
	// EventFailed: the node failed; Event.Err says why.
	EventFailed
	// EventSkipped: the node will not run because Event.Cause failed.
	EventSkipped
)

// String returns the kind's name in lower case.
func (k EventKind) String() string {
	switch k {
	case EventStarted:
		return "started"
	case EventRetrying:
		return "retrying"
	case EventApplied:
		return "applied"
	case EventSucceeded:
		return "succeeded"
	case EventFailed:
		return "failed"
	case EventSkipped:
		return "skipped"
	}
	return "unknown"
}

// Event is a progress report about one node, for progress bars and logs.
type Event[K comparable] struct {
	// Kind says what happened.
	Kind EventKind
	// Key is the node.
	Key K
	// Group is the node's group.
	Group string
	// Time is when it happened, by Options.Clock.
	Time time.Time
	// Elapsed is the time since the node started (zero for EventStarted and
	// EventSkipped).
	Elapsed time.Duration
	// Attempt is the number of the attempt that just ended (EventRetrying) or of the
	// attempts made (EventApplied, EventSucceeded, EventFailed).
	Attempt int
	// Delay is the wait before the next attempt (EventRetrying).
	Delay time.Duration
	// Err is the error of the attempt (EventRetrying) or of the node (EventFailed),
	// or the *GateError of a node Options.Gate skipped (EventSkipped).
	Err error
	// Cause is the failed node that made this one skip (EventSkipped).
	Cause K
}
