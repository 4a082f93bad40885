package depgraph

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
)

// Node is one unit of work and what it depends on.
type Node[K comparable] struct {
	// Key identifies the node; it must be unique in the graph.
	Key K
	// Deps are the nodes that must succeed (and be ready) before this one starts.
	// A dependency may be added to the graph after the node that names it.
	Deps []K
	// Group names the concurrency group of the node (for example its cluster), limited
	// by Options.GroupConcurrency and Options.GroupLimits. "" means no group.
	Group string
}

// Graph is a dependency graph over keys of any comparable type. Build it with Add and
// AddNode, then check it with Validate or use it directly with Waves, Run, DOT and
// Mermaid, which validate it themselves.
//
// Order: wherever the package returns several nodes (waves, cycles, results, exports),
// they appear in the order in which the nodes were added. Add nodes in a sorted order
// to get sorted output.
//
// A Graph is not safe for concurrent modification. Once built, any number of
// goroutines may validate, export and Run it at the same time.
//
// The zero Graph is empty and ready to use. A nil *Graph reads as an empty graph
// (Len, Nodes, DOT, Mermaid) that Validate, Waves and Run report as an
// *ArgumentError; nodes cannot be added to it.
type Graph[K comparable] struct {
	nodes []Node[K]
	index map[K]int32
	// dups holds the duplicate additions and the *InvalidKeyErrors in the order
	// they were made.
	dups []error
	// inherited holds the self and unknown dependencies of the graph this one was
	// reversed from.
	inherited []error
	// mu guards c, which readers fill in lazily.
	mu sync.Mutex
	// c caches the compiled form; any addition resets it.
	c *compiled
}

// New returns an empty graph.
func New[K comparable]() *Graph[K] {
	return &Graph[K]{index: make(map[K]int32)}
}

// Add adds a node without a group that depends on deps.
func (g *Graph[K]) Add(key K, deps ...K) {
	g.AddNode(Node[K]{Key: key, Deps: deps})
}

// AddNode adds n. Adding a key twice keeps the first node and makes Validate report a
// *DuplicateNodeError; other problems (self-dependencies, unknown dependencies,
// cycles) are likewise reported by Validate, so that all of them can be reported at
// once.
//
// A key that cannot be a map key (with a key type such as any, a slice, a map or a
// function value) is not added either; Validate reports an *InvalidKeyError for it.
func (g *Graph[K]) AddNode(n Node[K]) {
	g.c = nil
	if g.index == nil {
		g.index = make(map[K]int32)
	}
	if err := g.checkKeys(n); err != nil {
		g.dups = append(g.dups, err)
		return
	}
	if _, dup := g.index[n.Key]; dup {
		g.dups = append(g.dups, &DuplicateNodeError[K]{Key: n.Key})
		return
	}
	n.Deps = slices.Clone(n.Deps)
	g.index[n.Key] = int32(len(g.nodes))
	g.nodes = append(g.nodes, n)
}

// checkKeys looks n's key and dependencies up in the index, which panics for a
// value that cannot be hashed, and turns that panic into an *InvalidKeyError. Once
// added, every key of the graph can be hashed.
func (g *Graph[K]) checkKeys(n Node[K]) (err error) {
	field, value := "key", n.Key
	defer func() {
		if p := recover(); p != nil {
			err = &InvalidKeyError[K]{Key: n.Key, Field: field, Value: value, Reason: fmt.Sprint(p)}
		}
	}()
	_ = g.index[n.Key]
	for i, d := range n.Deps {
		field, value = "deps["+strconv.Itoa(i)+"]", d
		_ = g.index[d]
	}
	return nil
}

// Len returns the number of nodes.
func (g *Graph[K]) Len() int {
	if g == nil {
		return 0
	}
	return len(g.nodes)
}

// Nodes returns a copy of the nodes in the order they were added.
func (g *Graph[K]) Nodes() []Node[K] {
	if g == nil {
		return nil
	}
	out := make([]Node[K], len(g.nodes))
	for i, n := range g.nodes {
		n.Deps = slices.Clone(n.Deps)
		out[i] = n
	}
	return out
}

// Validate reports every problem of the graph: duplicate nodes, keys that cannot be
// hashed, self-dependencies, dependencies on unknown nodes and cycles, as the typed
// errors of this package, joined with errors.Join when there are several: duplicates
// and bad keys first, in the order they were added, then self and unknown
// dependencies in node order, then one *CycleError per cycle. It returns nil for a
// graph that Run can execute.
func (g *Graph[K]) Validate() error { return g.compile().err }

// Waves returns the topological waves of the graph: wave 0 holds the nodes without
// dependencies, wave i the nodes whose dependencies all lie in earlier waves and at
// least one in wave i-1. Within a wave, nodes keep the order in which they were added.
// If the graph is invalid, Waves returns the partial order of the nodes not involved
// (dependencies on unknown nodes are ignored; nodes on or behind a cycle are left out)
// together with Validate's error.
func (g *Graph[K]) Waves() ([][]K, error) {
	c := g.compile()
	return g.keysOf(c.waves), c.err
}

// Reverse returns a new graph with every dependency turned around, for teardown:
// running the reversed graph handles a node only after everything that depended on it.
// Nodes keep their groups and their order. Problems of g (duplicates, unknown and
// self-dependencies) carry over unchanged into the reversed graph's Validate.
func (g *Graph[K]) Reverse() *Graph[K] {
	if g == nil {
		return nil
	}
	c := g.compile()
	r := &Graph[K]{
		nodes: make([]Node[K], len(g.nodes)),
		index: make(map[K]int32, len(g.nodes)),
		dups:  slices.Clone(g.dups),
	}
	for i, n := range g.nodes {
		deps := make([]K, len(c.dependents[i]))
		for j, d := range c.dependents[i] {
			deps[j] = g.nodes[d].Key
		}
		r.nodes[i] = Node[K]{Key: n.Key, Deps: deps, Group: n.Group}
		r.index[n.Key] = int32(i)
	}
	// The reversed graph has no self or unknown edges of its own, so the original's
	// are remembered verbatim.
	r.inherited = c.edgeProblems
	return r
}

func (g *Graph[K]) keysOf(waves [][]int32) [][]K {
	out := make([][]K, len(waves))
	for w, wave := range waves {
		out[w] = make([]K, len(wave))
		for j, i := range wave {
			out[w][j] = g.nodes[i].Key
		}
	}
	return out
}

// compiled is the index form of a graph that Waves, Run and the exports work on.
type compiled struct {
	deps       [][]int32 // known dependencies, deduplicated, in declared order
	dependents [][]int32 // reverse edges, ascending
	group      []int32   // group index per node, -1 for none
	groups     []string  // group names in order of first appearance
	height     []int32   // nodes on the longest chain of dependents, itself included
	waves      [][]int32
	// edgeProblems are the self and unknown dependencies, in node and deps order.
	edgeProblems []error
	err          error
}

func (g *Graph[K]) compile() *compiled {
	if g == nil {
		return &compiled{err: &ArgumentError{Func: "Graph", Arg: "g", Reason: "is nil"}}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.c != nil {
		return g.c
	}
	n := len(g.nodes)
	c := &compiled{
		deps:       make([][]int32, n),
		dependents: make([][]int32, n),
		group:      make([]int32, n),
		height:     make([]int32, n),
	}
	c.edgeProblems = slices.Clone(g.inherited)
	groupIndex := map[string]int32{}
	seen := make([]int32, n) // seen[d] == i+1: d already listed as a dependency of i
	for i, node := range g.nodes {
		c.group[i] = -1
		if node.Group != "" {
			gi, ok := groupIndex[node.Group]
			if !ok {
				gi = int32(len(c.groups))
				groupIndex[node.Group] = gi
				c.groups = append(c.groups, node.Group)
			}
			c.group[i] = gi
		}
		for j, dep := range node.Deps {
			d, ok := g.index[dep]
			switch {
			case !ok:
				c.edgeProblems = append(c.edgeProblems, &MissingDependencyError[K]{Key: node.Key, Index: j, Dep: dep})
			case d == int32(i):
				c.edgeProblems = append(c.edgeProblems, &SelfDependencyError[K]{Key: node.Key, Index: j})
			case seen[d] != int32(i)+1:
				seen[d] = int32(i) + 1
				c.deps[i] = append(c.deps[i], d)
				c.dependents[d] = append(c.dependents[d], int32(i))
			}
		}
	}
	placed := c.computeWaves()
	problems := append(slices.Clone(g.dups), c.edgeProblems...)
	if placed < n {
		rest := g.keysOf(c.waves)
		for _, cycle := range c.cycles() {
			keys := make([]K, len(cycle))
			for j, i := range cycle {
				keys[j] = g.nodes[i].Key
			}
			problems = append(problems, &CycleError[K]{Cycle: keys, Rest: rest})
		}
	}
	c.computeHeights()
	switch len(problems) {
	case 0:
	case 1:
		c.err = problems[0]
	default:
		c.err = errors.Join(problems...)
	}
	g.c = c
	return c
}

// computeWaves runs Kahn's algorithm level by level and returns how many nodes it
// placed; the others are on or behind a cycle.
func (c *compiled) computeWaves() int {
	n := len(c.deps)
	pending := make([]int32, n)
	var wave []int32
	for i := range n {
		pending[i] = int32(len(c.deps[i]))
		if pending[i] == 0 {
			wave = append(wave, int32(i))
		}
	}
	placed := 0
	for len(wave) > 0 {
		c.waves = append(c.waves, wave)
		placed += len(wave)
		var next []int32
		for _, i := range wave {
			for _, d := range c.dependents[i] {
				pending[d]--
				if pending[d] == 0 {
					next = append(next, d)
				}
			}
		}
		slices.Sort(next)
		wave = next
	}
	return placed
}

// computeHeights sets the height of every placed node, from the last wave back.
func (c *compiled) computeHeights() {
	for w := len(c.waves) - 1; w >= 0; w-- {
		for _, i := range c.waves[w] {
			h := int32(0)
			for _, d := range c.dependents[i] {
				h = max(h, c.height[d])
			}
			c.height[i] = h + 1
		}
	}
}

// cycles returns one shortest cycle per strongly connected component of more than one
// node, ordered by the component's first node, each starting at that node.
func (c *compiled) cycles() [][]int32 {
	n := len(c.deps)
	// Tarjan's algorithm, iterative so that long chains cannot exhaust the stack.
	const unvisited = -1
	index := make([]int32, n)
	low := make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = unvisited
	}
	var stack, sccOf []int32
	sccOf = make([]int32, n)
	var comps [][]int32
	next := int32(0)
	type frame struct{ v, edge int32 }
	for root := range n {
		if index[root] != unvisited {
			continue
		}
		call := []frame{{v: int32(root)}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if int(f.edge) < len(c.deps[v]) {
				w := c.deps[v][f.edge]
				f.edge++
				if index[w] == unvisited {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{v: w})
				} else if onStack[w] {
					low[v] = min(low[v], index[w])
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				u := call[len(call)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] == index[v] {
				var comp []int32
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					sccOf[w] = int32(len(comps))
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				comps = append(comps, comp)
			}
		}
	}
	var cycles [][]int32
	for ci, comp := range comps {
		if len(comp) < 2 {
			continue
		}
		cycles = append(cycles, c.shortestCycle(slices.Min(comp), sccOf, int32(ci)))
	}
	slices.SortFunc(cycles, func(a, b []int32) int { return int(a[0] - b[0]) })
	return cycles
}

// shortestCycle finds, by breadth-first search inside one component, a shortest path
// from start back to itself along dependency edges.
func (c *compiled) shortestCycle(start int32, sccOf []int32, comp int32) []int32 {
	parent := map[int32]int32{start: -1}
	queue := []int32{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range c.deps[v] {
			if sccOf[w] != comp {
				continue
			}
			if w == start {
				var path []int32
				for u := v; u != -1; u = parent[u] {
					path = append(path, u)
				}
				slices.Reverse(path)
				return path
			}
			if _, ok := parent[w]; !ok {
				parent[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []int32{start} // unreachable for a component of two or more nodes
}
