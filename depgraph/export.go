package depgraph

import (
	"fmt"
	"strings"
)

const noResultColour = "#ffffff"

// colour is the fill colour of a node in state s.
func colour(s State) string {
	switch s {
	case Succeeded:
		return "#b7e1a1"
	case Failed:
		return "#f4a6a6"
	case Skipped:
		return "#fde2a7"
	}
	return "#e0e0e0"
}

// mermaidClass is the Mermaid class of state s.
func mermaidClass(s State) string { return strings.ReplaceAll(s.String(), "-", "_") }

// DOT renders the graph in Graphviz DOT. Arrows point from a dependency to its
// dependent, in the direction work flows; nodes of a group are drawn in a cluster
// labelled with the group. With a non-nil res, nodes are filled by outcome: green
// succeeded, red failed, amber skipped, grey not started. Dependencies on unknown
// nodes are left out; cycles are drawn as they are.
func (g *Graph[K]) DOT(res *Result[K]) string {
	if g == nil {
		g = &Graph[K]{}
	}
	var b strings.Builder
	b.WriteString("digraph depgraph {\n")
	b.WriteString("  rankdir=LR;\n")
	b.WriteString("  node [shape=box, style=\"rounded,filled\", fillcolor=\"" + noResultColour + "\"];\n")
	g.layout(&b, exportSyntax{
		open: func(gi int, name string) string {
			return fmt.Sprintf("subgraph cluster_%d {\n    label=%s;", gi, dotQuote(name))
		},
		close: "}",
		node: func(i int) string {
			label, fill, state := g.exportNode(res, i)
			line := fmt.Sprintf("n%d [label=%s", i, dotQuote(label))
			if state != "" {
				line += fmt.Sprintf(", fillcolor=%q, tooltip=%q", fill, state)
			}
			return line + "];"
		},
		edge: "  n%d -> n%d;\n",
	})
	b.WriteString("}\n")
	return b.String()
}

// Mermaid renders the graph as a Mermaid flowchart, laid out like DOT: arrows from a
// dependency to its dependent, a subgraph per group, and with a non-nil res a class
// per outcome (succeeded, failed, skipped, not-started) with the same colours.
func (g *Graph[K]) Mermaid(res *Result[K]) string {
	if g == nil {
		g = &Graph[K]{}
	}
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	g.layout(&b, exportSyntax{
		open: func(gi int, name string) string {
			return fmt.Sprintf("subgraph g%d[\"%s\"]", gi, mermaidEscape(name))
		},
		close: "end",
		node: func(i int) string {
			return fmt.Sprintf("n%d[\"%s\"]", i, mermaidEscape(keyString(g.nodes[i].Key)))
		},
		edge: "  n%d --> n%d\n",
	})
	if res != nil {
		classes := map[State][]string{}
		for i, n := range g.nodes {
			if nr, ok := res.Get(n.Key); ok {
				classes[nr.State] = append(classes[nr.State], fmt.Sprintf("n%d", i))
			}
		}
		outcomes := []State{Succeeded, Failed, Skipped, NotStarted}
		for _, s := range outcomes {
			fmt.Fprintf(&b, "  classDef %s fill:%s\n", mermaidClass(s), colour(s))
		}
		for _, s := range outcomes {
			if ids := classes[s]; len(ids) > 0 {
				fmt.Fprintf(&b, "  class %s %s\n", strings.Join(ids, ","), mermaidClass(s))
			}
		}
	}
	return b.String()
}

// exportSyntax is how one export format writes groups, nodes and edges.
type exportSyntax struct {
	open  func(gi int, name string) string // opens group gi
	close string                           // closes a group
	node  func(i int) string               // declares node i
	edge  string                           // format of an edge from dependency to dependent
}

// layout writes the groups with their nodes (groups in order of first appearance),
// then the nodes without a group, then every edge from a dependency to its dependent.
func (g *Graph[K]) layout(b *strings.Builder, s exportSyntax) {
	c := g.compile()
	for gi, name := range c.groups {
		b.WriteString("  " + s.open(gi, name) + "\n")
		for i := range g.nodes {
			if c.group[i] == int32(gi) {
				b.WriteString("    " + s.node(i) + "\n")
			}
		}
		b.WriteString("  " + s.close + "\n")
	}
	for i := range g.nodes {
		if c.group[i] < 0 {
			b.WriteString("  " + s.node(i) + "\n")
		}
	}
	for i := range g.nodes {
		for _, d := range c.deps[i] {
			fmt.Fprintf(b, s.edge, d, i)
		}
	}
}

// exportNode returns the label of node i and, when res knows it, its fill and state.
func (g *Graph[K]) exportNode(res *Result[K], i int) (label, fill, state string) {
	label = keyString(g.nodes[i].Key)
	if res == nil {
		return label, "", ""
	}
	nr, ok := res.Get(g.nodes[i].Key)
	if !ok {
		return label, "", ""
	}
	return label, colour(nr.State), nr.State.String()
}

// dotQuote quotes s as a DOT string.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// mermaidEscape makes s safe inside a quoted Mermaid label.
func mermaidEscape(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "\n", "<br/>")
	return r.Replace(s)
}
