package integration

import (
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// engine is one Helm engine the suites run with.
type engine struct {
	// name names the subtest; short prefixes the namespaces it creates.
	name, short string
	// cluster is the harness's cluster the conformance suite runs on with
	// this engine: one each, since the suite's requested Service IPs and
	// node ports are one cluster's to give once.
	cluster string
	// engine is reconcile.Config.Engine (nil: the default, Helm v3).
	engine reconcile.Engine
}

// engines lists the engines the conformance and real-chart tests run with
// on real API servers: Helm v3 (the default), Helm v4 over the backend's
// kube client, and Helm v4 with its own kube client (real server-side
// apply, field managers, conflicts forced).
func engines() []engine {
	return []engine{
		{name: "helmv3", short: "v3", cluster: "member1"},
		{name: "helmv4", short: "v4", cluster: "member2", engine: helmv4.Engine{}},
		{name: "helmv4-native", short: "v4n", cluster: "hub", engine: helmv4.Engine{NativeKubeClient: true}},
	}
}
