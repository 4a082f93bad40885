// Package depgraph orders and runs work that depends on other work: Helm releases that
// depend on releases (Flux dependsOn), on plain manifest bundles and the other way
// round, and across clusters. It is generic — a node is any comparable key, such as a
// struct of cluster and release name — and knows nothing of Helm.
//
// # Building and checking a graph
//
// New returns an empty Graph; Add and AddNode add nodes with their dependencies and an
// optional group (for example the node's cluster). Dependencies may name nodes added
// later. Validate reports every problem at once as typed errors, each matching a
// sentinel with errors.Is:
//
//   - *DuplicateNodeError (ErrDuplicateNode): a key added twice;
//   - *SelfDependencyError (ErrSelfDependency): a node listing itself;
//   - *MissingDependencyError (ErrMissingDependency): a dependency on an unknown node,
//     naming the node, the field path deps[i] and the unknown key;
//   - *CycleError (ErrCycle): one per cycle, with the cycle's nodes in order
//     (a → b → c → a) and the partial order of the nodes not involved;
//   - *InvalidKeyError (ErrInvalidKey): with a key type such as any, a key whose
//     value cannot be hashed (a slice, a map); the node is not added.
//
// Waves returns the topological waves, for display or for callers that want barriers.
// Reverse turns every dependency around, for teardown: uninstall dependents before
// what they depend on.
//
// Output is deterministic: nodes appear in the order they were added, wherever the
// package returns several (waves, cycles, results, exports). Add nodes sorted to get
// sorted output.
//
// # Running a graph
//
// Run calls a function per node and starts each node the moment its own dependencies
// succeeded: there are no level barriers and no polling. Argo CD sync waves, helmfile
// groups and cli-utils apply sets wait for the whole previous level, and Flux rechecks
// an unready dependency every 30 seconds, so a chain of N releases waits up to N × 30 s;
// here a chain finishes in the sum of its nodes' durations. Options bound concurrency
// overall and per group, retry failing nodes with a backoff, and wait for a
// caller-supplied readiness check (Options.Ready) before a node's dependents start —
// a release may be applied but not yet ready. When several nodes could start, the one
// heading the longest chain of dependents goes first.
//
// A failure skips only the failed node's transitive dependents; everything else goes on.
// Options.Gate replaces that rule: each node with dependencies is asked, once they
// all finished, with their results, whether it starts anyway or is skipped (a Flux
// readyExpr accepting a dependency that is not Ready, or refusing one that is).
// Cancelling the context stops the run promptly: no node starts afterwards, running
// functions see the cancelled context, and Run returns once they have returned, so no
// goroutine outlives it. The Result says for every node whether it succeeded, failed
// (with its error), was skipped (and because of which failed node) or never started,
// with its timings; Options.Events reports the same as it happens, for progress bars
// and logs. Time comes from an injected Clock.
//
// No panic of the caller's code escapes from Run's goroutines: a panic (or
// runtime.Goexit) in a node function or in Options.Ready, Backoff, Events or Clock is
// recovered as a *PanicError (ErrPanic) naming the node and the callback. A panicking
// node function or Ready fails its node; after a panic of Events or Clock.Now the run
// goes on without calling it again and reports the panic in Run's error. A nil
// context, graph or function is an *ArgumentError (ErrInvalidArgument).
//
// # Drawing a graph
//
// DOT and Mermaid render the graph with a box per group and, given a Result, nodes
// coloured by outcome.
package depgraph
