package depgraph

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type edge struct {
	key  string
	deps []string
}

func build(edges ...edge) *Graph[string] {
	g := New[string]()
	for _, e := range edges {
		g.Add(e.key, e.deps...)
	}
	return g
}

func e(key string, deps ...string) edge { return edge{key: key, deps: deps} }

func TestWaves(t *testing.T) {
	tests := []struct {
		name  string
		graph *Graph[string]
		want  [][]string
	}{
		{name: "empty", graph: New[string](), want: [][]string{}},
		{name: "single", graph: build(e("a")), want: [][]string{{"a"}}},
		{
			name:  "diamond",
			graph: build(e("app", "db", "cache"), e("db", "ns"), e("cache", "ns"), e("ns")),
			want:  [][]string{{"ns"}, {"db", "cache"}, {"app"}},
		},
		{
			name:  "insertion order within a wave, not alphabetical",
			graph: build(e("z"), e("b"), e("m")),
			want:  [][]string{{"z", "b", "m"}},
		},
		{
			name:  "a node lands one wave after its deepest dependency",
			graph: build(e("a"), e("b", "a"), e("c", "b"), e("d", "a", "c")),
			want:  [][]string{{"a"}, {"b"}, {"c"}, {"d"}},
		},
		{
			name:  "repeated dependency counts once",
			graph: build(e("a"), e("b", "a", "a")),
			want:  [][]string{{"a"}, {"b"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.graph.Validate())
			got, err := tt.graph.Waves()
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidateErrors(t *testing.T) {
	tests := []struct {
		name     string
		graph    func() *Graph[string]
		is       []error
		messages []string
		rest     [][]string
	}{
		{
			name: "three-node cycle named in order",
			graph: func() *Graph[string] {
				return build(e("x"), e("a", "b"), e("b", "c"), e("c", "a"), e("y", "x"))
			},
			is:       []error{ErrCycle},
			messages: []string{`depgraph: dependency cycle: "a" → "b" → "c" → "a"`},
			rest:     [][]string{{"x"}, {"y"}},
		},
		{
			name: "every cycle reported; dependents of a cycle are not in the rest",
			graph: func() *Graph[string] {
				return build(e("p", "q"), e("q", "p"), e("a", "b"), e("b", "a"), e("behind", "a"), e("free"))
			},
			is: []error{ErrCycle, ErrCycle},
			messages: []string{
				`depgraph: dependency cycle: "p" → "q" → "p"`,
				`depgraph: dependency cycle: "a" → "b" → "a"`,
			},
			rest: [][]string{{"free"}},
		},
		{
			name: "shortest cycle through the first node of a component",
			graph: func() *Graph[string] {
				// a→b→c→d→a and a shortcut b→d.
				return build(e("a", "b"), e("b", "c", "d"), e("c", "d"), e("d", "a"))
			},
			is:       []error{ErrCycle},
			messages: []string{`depgraph: dependency cycle: "a" → "b" → "d" → "a"`},
			rest:     [][]string{},
		},
		{
			name:     "missing dependency names node, field path and value",
			graph:    func() *Graph[string] { return build(e("a"), e("b", "a", "ghost")) },
			is:       []error{ErrMissingDependency},
			messages: []string{`depgraph: node "b": deps[1]: unknown node "ghost"`},
		},
		{
			name:     "self dependency",
			graph:    func() *Graph[string] { return build(e("a", "a")) },
			is:       []error{ErrSelfDependency},
			messages: []string{`depgraph: node "a": deps[0]: depends on itself`},
		},
		{
			name:     "duplicate node",
			graph:    func() *Graph[string] { return build(e("a"), e("a", "b"), e("b")) },
			is:       []error{ErrDuplicateNode},
			messages: []string{`depgraph: node "a": added more than once`},
		},
		{
			name: "all problems at once, in their documented order",
			graph: func() *Graph[string] {
				return build(e("a", "b"), e("b", "a"), e("c", "c", "nope"), e("c"))
			},
			is: []error{ErrDuplicateNode, ErrSelfDependency, ErrMissingDependency, ErrCycle},
			messages: []string{
				`depgraph: node "c": added more than once`,
				`depgraph: node "c": deps[0]: depends on itself`,
				`depgraph: node "c": deps[1]: unknown node "nope"`,
				`depgraph: dependency cycle: "a" → "b" → "a"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.graph().Validate()
			require.Error(t, err)
			errs := []error{err}
			if j, ok := err.(interface{ Unwrap() []error }); ok {
				errs = j.Unwrap()
			}
			require.Len(t, errs, len(tt.is))
			for i, want := range tt.is {
				assert.ErrorIs(t, errs[i], want)
				assert.ErrorIs(t, err, want)
				assert.EqualError(t, errs[i], tt.messages[i])
			}
			if tt.rest != nil {
				var ce *CycleError[string]
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.rest, ce.Rest)
				waves, werr := tt.graph().Waves()
				assert.Equal(t, err.Error(), werr.Error())
				assert.Equal(t, tt.rest, waves)
			}
		})
	}
}

func TestCycleErrorCarriesKeys(t *testing.T) {
	type release struct{ cluster, name string }
	g := New[release]()
	g.Add(release{"eu", "app"}, release{"us", "db"})
	g.Add(release{"us", "db"}, release{"eu", "app"})
	var ce *CycleError[release]
	require.ErrorAs(t, g.Validate(), &ce)
	assert.Equal(t, []release{{"eu", "app"}, {"us", "db"}}, ce.Cycle)
	assert.Equal(t, `depgraph: dependency cycle: "{eu app}" → "{us db}" → "{eu app}"`, ce.Error())
}

func TestMissingDependencyDoesNotHideTheRest(t *testing.T) {
	g := build(e("a", "gone"), e("b", "a"))
	waves, err := g.Waves()
	var me *MissingDependencyError[string]
	require.ErrorAs(t, err, &me)
	assert.Equal(t, MissingDependencyError[string]{Key: "a", Index: 0, Dep: "gone"}, *me)
	assert.Equal(t, [][]string{{"a"}, {"b"}}, waves)
}

func TestAddInvalidatesCache(t *testing.T) {
	g := build(e("b", "a"))
	require.ErrorIs(t, g.Validate(), ErrMissingDependency)
	g.Add("a")
	require.NoError(t, g.Validate())
	waves, err := g.Waves()
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"a"}, {"b"}}, waves)
}

func TestReverse(t *testing.T) {
	g := New[string]()
	g.AddNode(Node[string]{Key: "app", Deps: []string{"db", "cache"}, Group: "eu"})
	g.AddNode(Node[string]{Key: "db", Deps: []string{"ns"}, Group: "eu"})
	g.AddNode(Node[string]{Key: "cache", Deps: []string{"ns"}, Group: "us"})
	g.AddNode(Node[string]{Key: "ns"})

	r := g.Reverse()
	require.NoError(t, r.Validate())
	waves, err := r.Waves()
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"app"}, {"db", "cache"}, {"ns"}}, waves)
	assert.Equal(t, []Node[string]{
		{Key: "app", Deps: []string{}, Group: "eu"},
		{Key: "db", Deps: []string{"app"}, Group: "eu"},
		{Key: "cache", Deps: []string{"app"}, Group: "us"},
		{Key: "ns", Deps: []string{"db", "cache"}},
	}, r.Nodes())
	// Reversing twice gives the original order back.
	back, err := r.Reverse().Waves()
	require.NoError(t, err)
	orig, err := g.Waves()
	require.NoError(t, err)
	assert.Equal(t, orig, back)
}

func TestReverseKeepsProblems(t *testing.T) {
	g := build(e("a", "a", "ghost"), e("a"), e("b", "c"), e("c", "b"))
	r := g.Reverse()
	err := r.Validate()
	for _, want := range []error{ErrDuplicateNode, ErrSelfDependency, ErrMissingDependency} {
		assert.ErrorIs(t, err, want)
	}
	var ce *CycleError[string]
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{"b", "c"}, ce.Cycle)
}

func TestNodesIsACopy(t *testing.T) {
	deps := []string{"a"}
	g := New[string]()
	g.Add("a")
	g.Add("b", deps...)
	deps[0] = "changed"
	nodes := g.Nodes()
	nodes[1].Deps[0] = "changed too"
	require.NoError(t, g.Validate())
	assert.Equal(t, "a", g.Nodes()[1].Deps[0])
	assert.Equal(t, 2, g.Len())
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{
		&CycleError[int]{Cycle: []int{1, 2}},
		&MissingDependencyError[int]{Key: 1, Dep: 2},
		&SelfDependencyError[int]{Key: 1},
		&DuplicateNodeError[int]{Key: 1},
	}
	sentinels := []error{ErrCycle, ErrMissingDependency, ErrSelfDependency, ErrDuplicateNode}
	for i, err := range errs {
		for j, s := range sentinels {
			assert.Equal(t, i == j, errors.Is(err, s), "%v is %v", err, s)
		}
	}
}
