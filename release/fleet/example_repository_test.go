package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// A Fleet runs a Flux repository in the layout of
// fluxcd/flux2-kustomize-helm-example on two members: the repository
// tree, the bootstrap Kustomization with its placement and a per-member
// path, and a chart resolver are all it is given. The HelmRepositories
// the infrastructure and apps Kustomizations produce are the sources of
// their releases on each member; nothing is walked in advance.
func ExampleRepository() {
	ctx := context.Background()
	// Charts served locally; a real fleet uses source.NewHTTPResolver or
	// source.NewOCIResolver.
	charts := source.ResolverFunc(func(_ context.Context, ref source.Ref) (*source.Chart, error) {
		return &source.Chart{Chart: fleettest.Podinfo(ref.Version)}, nil
	})
	f, err := fleet.New(fleet.Config{
		Members:          []release.Member{{Cluster: memory.New("staging")}, {Cluster: memory.New("production")}},
		Repository:       &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:4f2a", Charts: charts},
		ReconcilerConfig: &reconcile.Config{PollInterval: time.Millisecond},
	})
	if err != nil {
		panic(err)
	}
	objs, err := release.Load(strings.NewReader(bootstrapPolicies))
	if err != nil {
		panic(err)
	}
	plan, err := f.Plan(ctx, fleet.InputsOf(objs))
	if err != nil || len(plan.Errors) > 0 {
		panic(fmt.Sprint(err, plan.Errors))
	}
	for _, p := range plan.Items {
		fmt.Println(p.Cluster, p.Release.Namespace+"/"+p.Release.Name, p.Action, "replicaCount:", p.Release.Spec.Values["replicaCount"])
	}
	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	if err != nil {
		panic(fmt.Sprint(err, rep.Table()))
	}
	fmt.Println("applied")
	// Output:
	// production ingress-nginx/ingress-nginx install replicaCount: 1
	// production podinfo/podinfo install replicaCount: 2
	// staging ingress-nginx/ingress-nginx install replicaCount: 1
	// staging podinfo/podinfo install replicaCount: 1
	// applied
}
