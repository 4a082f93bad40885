package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// Members in region eu take their charts from a regional mirror of
// ghcr.io and of the podinfo repository; the plan says so.
func ExampleMirror() {
	ctx := context.Background()
	// Charts served locally, as the mirror would serve them.
	charts := source.ResolverFunc(func(_ context.Context, ref source.Ref) (*source.Chart, error) {
		return &source.Chart{Chart: fleettest.Podinfo(ref.Version)}, nil
	})
	f, err := fleet.New(fleet.Config{
		Members: []release.Member{
			{Cluster: memory.New("staging"), Facts: policy.Cluster{Labels: map[string]string{"region": "eu"}}},
			{Cluster: memory.New("production"), Facts: policy.Cluster{Labels: map[string]string{"region": "us"}}},
		},
		Repository: &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:4f2a", Charts: charts},
		Mirrors: []fleet.Mirror{{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
			Rewrites: []fleet.Rewrite{
				{From: "oci://ghcr.io/", To: "oci://registry.eu.example/ghcr/"},
				{From: "https://stefanprodan.github.io/podinfo", To: "https://mirror.eu.example/podinfo"},
			},
		}},
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
	for _, m := range plan.Mirrored {
		fmt.Println(m)
	}
	// Output:
	// member staging: HelmRepository podinfo/podinfo: spec.url: https://stefanprodan.github.io/podinfo mirrored to https://mirror.eu.example/podinfo (Mirrors[0].Rewrites[1])
}
