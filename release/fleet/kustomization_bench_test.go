package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// BenchmarkFleetPlanKustomization plans the dev overlay's HelmRelease
// on three members two ways: produced by a Kustomization (built and
// planned on each member, then the release planned) and, the baseline,
// decoded directly and placed by a policy. The difference is what a
// Kustomization unit costs a plan: a kustomize build for the release and
// another for the Kustomization's own plan, per member.
func BenchmarkFleetPlanKustomization(b *testing.B) {
	ctx := context.Background()
	var members []release.Member
	for _, name := range []string{"dev-1", "dev-2", "dev-3"} {
		members = append(members, release.Member{Cluster: memory.New(name), Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec, KustomizeConfig: &kustomize.ReconcilerConfig{
		Sources: kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: repo, Revision: "main@sha1:0123abc"}},
	}})
	if err != nil {
		b.Fatal(err)
	}
	decode := func(y string) fleet.Inputs {
		objs, err := release.Decode(strings.NewReader(y))
		if err != nil {
			b.Fatal(err)
		}
		return fleet.InputsOf(objs)
	}
	direct := decode(hrYAML("addon", "") + placeOn("addon", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", everywhere))
	viaK := decode(kustomizationYAML("infrastructure", "./infrastructure/dev", "") +
		placeOn("infrastructure", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	for _, c := range []struct {
		name string
		in   fleet.Inputs
		want int
	}{{"release", direct, 3}, {"kustomization", viaK, 3}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				plan, err := f.Plan(ctx, c.in)
				if err != nil || len(plan.Errors) > 0 || len(plan.Items) != c.want {
					b.Fatalf("plan: %v %v %d items", err, plan.Errors, len(plan.Items))
				}
			}
		})
	}
}
