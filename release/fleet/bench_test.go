package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
)

// benchFleet builds n in-memory members sharing a Schemas, each with a
// values override of its own (replicas by index).
func benchFleet(b *testing.B, n int, rec *release.Reconciler) (*fleet.Fleet, fleet.Inputs) {
	b.Helper()
	shared := memory.NewSchemas()
	var members []release.Member
	var rules strings.Builder
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("member-%04d", i)
		members = append(members, release.Member{Cluster: memory.New(name, memory.WithSchemas(shared)), Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}})
		fmt.Fprintf(&rules, "    - targetCluster: {clusterNames: [%s]}\n      overriders:\n        valuesOverrider:\n          - merge: {replicaCount: %d}\n", name, 1+i%5)
	}
	y := fleetYAML[:strings.Index(fleetYAML, "---\napiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy")] + `---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: per-member, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
` + rules.String()
	objs, err := release.Decode(strings.NewReader(y))
	if err != nil {
		b.Fatal(err)
	}
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec, Concurrency: 4, ClusterConcurrency: 1})
	if err != nil {
		b.Fatal(err)
	}
	return f, fleet.InputsOf(objs)
}

// BenchmarkFleetPerClusterRelease installs the 20-object chart as one
// Helm release per member on 100 in-memory members, each with its own
// values: plan plus apply, reported as clusters per second.
func BenchmarkFleetPerClusterRelease(b *testing.B) {
	ctx := context.Background()
	const n = 100
	ch := testchart.Grown(15)
	rec, err := release.NewReconciler(release.ReconcilerConfig{Charts: release.ChartGetterFunc(func(context.Context, *release.Release) (*release.Chart, error) {
		return &release.Chart{Chart: ch}, nil
	}), PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f, in := benchFleet(b, n, rec)
		b.StartTimer()
		start := time.Now()
		plan, err := f.Plan(ctx, in)
		if err != nil || len(plan.Errors) > 0 {
			b.Fatal(err, plan.Errors)
		}
		if _, err := f.Apply(ctx, plan, fleet.ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "clusters/s")
}
