package depgraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleetGraph is a small fleet: per-cluster releases with dependencies inside a cluster
// and across clusters, a manifest bundle without a cluster, and a label that needs
// escaping.
func fleetGraph() *Graph[string] {
	g := New[string]()
	g.AddNode(Node[string]{Key: "crds"})
	g.AddNode(Node[string]{Key: "eu-1/cert-manager", Deps: []string{"crds"}, Group: "eu-1"})
	g.AddNode(Node[string]{Key: "us-1/db", Deps: []string{"crds"}, Group: "us-1"})
	g.AddNode(Node[string]{Key: "eu-1/ingress", Deps: []string{"eu-1/cert-manager"}, Group: "eu-1"})
	g.AddNode(Node[string]{Key: "us-1/app", Deps: []string{"us-1/db"}, Group: "us-1"})
	g.AddNode(Node[string]{Key: `eu-1/app "v2"`, Deps: []string{"eu-1/ingress", "us-1/db"}, Group: "eu-1"})
	g.AddNode(Node[string]{Key: "eu-1/dashboard", Deps: []string{`eu-1/app "v2"`}, Group: "eu-1"})
	return g
}

// fleetGraphWithLate adds a node to fleetGraph that the cancellation leaves unstarted.
func fleetGraphWithLate() *Graph[string] {
	g := fleetGraph()
	g.AddNode(Node[string]{Key: "eu-1/late", Deps: []string{"eu-1/ingress"}, Group: "eu-1"})
	return g
}

// fleetResult runs fleetGraphWithLate with us-1/db failing and the run cancelled once
// eu-1/ingress has succeeded, so that every outcome appears.
func fleetResult(t *testing.T) *Result[string] {
	t.Helper()
	g := fleetGraphWithLate()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	res, err := Run(ctx, g, func(_ context.Context, k string) error {
		switch k {
		case "us-1/db":
			return errors.New("timed out")
		case "eu-1/ingress":
			cancel()
		}
		return nil
	}, Options[string]{Concurrency: 1, Clock: newFakeClock()})
	require.Error(t, err)
	return res
}

func TestExportGolden(t *testing.T) {
	res := fleetResult(t)
	require.Equal(t, []string{"crds", "eu-1/cert-manager", "eu-1/ingress"}, res.Keys(Succeeded))
	require.Equal(t, []string{"us-1/db"}, res.Keys(Failed))
	require.Equal(t, []string{"us-1/app", `eu-1/app "v2"`, "eu-1/dashboard"}, res.Keys(Skipped))
	require.Equal(t, []string{"eu-1/late"}, res.Keys(NotStarted))
	g := fleetGraphWithLate()
	tests := []struct {
		name   string
		render func() string
	}{
		{name: "graph.dot", render: func() string { return fleetGraph().DOT(nil) }},
		{name: "graph.mmd", render: func() string { return fleetGraph().Mermaid(nil) }},
		{name: "outcome.dot", render: func() string { return g.DOT(res) }},
		{name: "outcome.mmd", render: func() string { return g.Mermaid(res) }},
		{name: "cycle.dot", render: func() string { return build(e("a", "b"), e("b", "a"), e("c", "a", "gone")).DOT(nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, tt.name, tt.render())
		})
	}
}

func TestExportKeepsUnknownNodesUncoloured(t *testing.T) {
	g := build(e("a"))
	other := build(e("x"))
	res, err := Run(t.Context(), other, func(context.Context, string) error { return nil }, Options[string]{})
	require.NoError(t, err)
	assert.Equal(t, g.DOT(nil), g.DOT(res))
	assert.NotContains(t, g.Mermaid(res), "class n0")
}

// golden compares got with testdata/name, or rewrites the file under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), got)
	assert.True(t, strings.HasSuffix(got, "\n"))
}
