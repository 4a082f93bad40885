package depgraph_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/helmfleet/helmfleet/depgraph"
)

// Run a small fleet: a shared CRD bundle, then per-cluster releases, one of which
// depends on a release in another cluster. The database fails, so only what depends on
// it is skipped. One slot makes the order of events reproducible.
func ExampleRun() {
	type release struct{ cluster, name string }
	crds := release{"hub", "crds"}
	db := release{"us-1", "db"}
	cert := release{"eu-1", "cert-manager"}
	app := release{"eu-1", "app"}
	g := depgraph.New[release]()
	g.AddNode(depgraph.Node[release]{Key: crds, Group: "hub"})
	g.AddNode(depgraph.Node[release]{Key: cert, Deps: []release{crds}, Group: "eu-1"})
	g.AddNode(depgraph.Node[release]{Key: db, Deps: []release{crds}, Group: "us-1"})
	g.AddNode(depgraph.Node[release]{Key: app, Deps: []release{cert, db}, Group: "eu-1"})

	res, err := depgraph.Run(context.Background(), g, func(_ context.Context, r release) error {
		if r == db {
			return errors.New("timed out waiting for the condition")
		}
		return nil
	}, depgraph.Options[release]{
		Concurrency:      1,
		GroupConcurrency: 1, // one Helm action per cluster at a time
		Events: func(e depgraph.Event[release]) {
			switch e.Kind {
			case depgraph.EventSkipped:
				fmt.Printf("%-9s %s/%s because %s/%s failed\n", e.Kind, e.Key.cluster, e.Key.name, e.Cause.cluster, e.Cause.name)
			case depgraph.EventFailed:
				fmt.Printf("%-9s %s/%s: %v\n", e.Kind, e.Key.cluster, e.Key.name, e.Err)
			default:
				fmt.Printf("%-9s %s/%s\n", e.Kind, e.Key.cluster, e.Key.name)
			}
		},
	})
	fmt.Println(err)
	fmt.Println("succeeded:", len(res.Keys(depgraph.Succeeded)), "skipped:", len(res.Keys(depgraph.Skipped)))
	// Output:
	// started   hub/crds
	// succeeded hub/crds
	// started   eu-1/cert-manager
	// succeeded eu-1/cert-manager
	// started   us-1/db
	// failed    us-1/db: timed out waiting for the condition
	// skipped   eu-1/app because us-1/db failed
	// depgraph: node "{us-1 db}": timed out waiting for the condition
	// succeeded: 2 skipped: 1
}

// Waves groups nodes for display, or for callers that want barriers.
func ExampleGraph_Waves() {
	g := depgraph.New[string]()
	g.Add("app", "db", "cache")
	g.Add("db", "namespace")
	g.Add("cache", "namespace")
	g.Add("namespace")
	waves, err := g.Waves()
	fmt.Println(waves, err)
	// Output: [[namespace] [db cache] [app]] <nil>
}

// A cycle is a typed error that names the cycle in order, with the partial order of
// the rest.
func ExampleCycleError() {
	g := depgraph.New[string]()
	g.Add("a", "b")
	g.Add("b", "c")
	g.Add("c", "a")
	g.Add("namespace")
	g.Add("monitoring", "namespace")
	var cycle *depgraph.CycleError[string]
	if err := g.Validate(); errors.As(err, &cycle) {
		fmt.Println(err)
		fmt.Println(cycle.Cycle, cycle.Rest)
	}
	// Output:
	// depgraph: dependency cycle: "a" → "b" → "c" → "a"
	// [a b c] [[namespace] [monitoring]]
}

// Reverse turns dependencies around for teardown: dependents are uninstalled before
// what they depend on.
func ExampleGraph_Reverse() {
	g := depgraph.New[string]()
	g.Add("namespace")
	g.Add("db", "namespace")
	g.Add("app", "db")
	_, err := depgraph.Run(context.Background(), g.Reverse(), func(_ context.Context, k string) error {
		fmt.Println("uninstall", k)
		return nil
	}, depgraph.Options[string]{Concurrency: 1})
	fmt.Println(err)
	// Output:
	// uninstall app
	// uninstall db
	// uninstall namespace
	// <nil>
}

// Mermaid (and DOT) draw the graph, coloured by the outcome of a run.
func ExampleGraph_Mermaid() {
	g := depgraph.New[string]()
	g.Add("db")
	g.Add("app", "db")
	res, _ := depgraph.Run(context.Background(), g, func(_ context.Context, k string) error {
		if k == "db" {
			return errors.New("boom")
		}
		return nil
	}, depgraph.Options[string]{})
	fmt.Print(g.Mermaid(res))
	// Output:
	// flowchart LR
	//   n0["db"]
	//   n1["app"]
	//   n0 --> n1
	//   classDef succeeded fill:#b7e1a1
	//   classDef failed fill:#f4a6a6
	//   classDef skipped fill:#fde2a7
	//   classDef not_started fill:#e0e0e0
	//   class n0 failed
	//   class n1 skipped
}
