package distribute_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// benchGroups is how many groups of members get their own image tag.
const benchGroups = 10

// benchPolicies send every object of the chart to every member and give
// each group of members its own image tag.
func benchPolicies(b *testing.B) policy.Set {
	var rules strings.Builder
	for g := 0; g < benchGroups; g++ {
		fmt.Fprintf(&rules, "    - targetCluster: {labelSelector: {matchLabels: {group: g%d}}}\n      overriders:\n        imageOverrider:\n          - {component: Tag, operator: replace, value: 6.5.0-g%d}\n", g, g)
	}
	return fixture.PolicySet(b, `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment}
    - {apiVersion: v1, kind: ConfigMap}
    - {apiVersion: v1, kind: Secret}
    - {apiVersion: v1, kind: Service}
    - {apiVersion: networking.k8s.io/v1, kind: Ingress}
  placement: {}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: per-group, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment}
  overrideRules:
`+rules.String())
}

// BenchmarkFleetApply spreads the 20-object chart over 1,000 members with
// a per-group image tag. render-once is the Distributor: one Helm install
// on the hub, placement and overrides per member, then a server-side
// apply of each copy. render-per-cluster renders the chart with Helm once
// per member (with its own values) and applies the result there. Neither
// waits for readiness. In-memory members ("memory/…") share a Schemas,
// as a test fleet would, so both sides pay the same server-side apply;
// members that accept applies without work ("null/…") leave rendering,
// placement and overrides alone. The in-memory cases report what one
// member costs in live heap once made (B/member-made) and once it holds
// the release's objects (B/member-applied). Every case reports the CPU
// time (cpu-ns/op, the collector's included) beside wall time, as the
// machine may be shared.
//
// memory-10k/render-once is render-once over 10,000 in-memory members, one
// at a time, and memory-10k/render-once-parallel the same on every core
// (goal: at most 1 GiB peak RSS, reported as peak-RSS-MiB, and at least
// 2,000 clusters/s). It is skipped unless HELMFLEET_BENCH_10K=1, so .ci/run
// does not run it; run it alone, so the peak is its own:
//
//	HELMFLEET_BENCH_10K=1 go test -run '^$' -bench 'BenchmarkFleetApply/memory-10k' -benchtime 1x -benchmem ./release/distribute/
func BenchmarkFleetApply(b *testing.B) {
	const n = 1000
	ctx := context.Background()
	ch := testchart.Grown(15)
	charts := reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	set := benchPolicies(b)
	for _, backend := range []struct {
		name  string
		fresh func() []benchMember
	}{
		{"memory", func() []benchMember { return memoryMembers(n) }},
		{"null", func() []benchMember { return nullMembers(n) }},
	} {
		b.Run(backend.name+"/render-once", func(b *testing.B) {
			renderOnce(ctx, b, rec, set, backend.fresh, 1)
		})
		b.Run(backend.name+"/render-per-cluster", func(b *testing.B) {
			b.ReportAllocs()
			var elapsed, cpu time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				ms := backend.fresh()
				b.StartTimer()
				start, cpuStart := time.Now(), fixture.CPUTime()
				for j, m := range ms {
					if err := templateAndApply(ctx, m, ch, map[string]any{"replicaCount": 2, "image": map[string]any{"tag": fmt.Sprintf("6.5.0-g%d", j%benchGroups)}}); err != nil {
						b.Fatal(err)
					}
				}
				elapsed += time.Since(start)
				cpu += fixture.CPUTime() - cpuStart
				if got := ms[n-1].applied(); got != 21 {
					b.Fatalf("last member got %d objects", got)
				}
			}
			b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "clusters/s")
			b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
		})
	}
	b.Run("memory-10k/render-once", func(b *testing.B) {
		if os.Getenv("HELMFLEET_BENCH_10K") != "1" {
			b.Skip("set HELMFLEET_BENCH_10K=1 to run the 10,000-member fleet")
		}
		renderOnce(ctx, b, rec, set, func() []benchMember { return memoryMembers(10_000) }, 1)
		if peak, ok := peakRSS(); ok {
			b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
		}
	})
	// The same with the Distributor's concurrency at GOMAXPROCS: the
	// clusters/s a test fleet gets from every core of the machine.
	b.Run("memory-10k/render-once-parallel", func(b *testing.B) {
		if os.Getenv("HELMFLEET_BENCH_10K") != "1" {
			b.Skip("set HELMFLEET_BENCH_10K=1 to run the 10,000-member fleet")
		}
		renderOnce(ctx, b, rec, set, func() []benchMember { return memoryMembers(10_000) }, runtime.GOMAXPROCS(0))
		if peak, ok := peakRSS(); ok {
			b.ReportMetric(float64(peak)/(1<<20), "peak-RSS-MiB")
		}
	})
}

// renderOnce is the render-once case over the members fresh makes: the
// Distributor applying to concurrency members at once (1: sequentially,
// as the baseline is), with one Reconcile per iteration. Over in-memory
// members it reports their live heap per member.
func renderOnce(ctx context.Context, b *testing.B, rec *reconcile.Reconciler, set policy.Set, fresh func() []benchMember, concurrency int) {
	b.ReportAllocs()
	var elapsed, cpu time.Duration
	var made, applied, count uint64
	n := 0
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		before := liveHeap()
		ms := fresh()
		n = len(ms)
		members := make([]release.Member, n)
		for j, m := range ms {
			members[j] = release.Member{Cluster: m, Facts: policy.Cluster{Labels: map[string]string{"group": fmt.Sprintf("g%d", j%benchGroups)}}}
		}
		d, err := distribute.New(distribute.Config{Hub: memory.New("hub"), Members: members, Policies: set, Concurrency: concurrency})
		if err != nil {
			b.Fatal(err)
		}
		rel := fixture.Release()
		rel.Spec.Install = &release.Install{DisableWait: true}
		_, inMemory := ms[0].(memoryMember)
		if inMemory {
			made += growth(before)
		}
		b.StartTimer()
		start, cpuStart := time.Now(), fixture.CPUTime()
		if _, err := rec.Reconcile(ctx, d, rel); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		cpu += fixture.CPUTime() - cpuStart
		b.StopTimer()
		if got := ms[n-1].applied(); got != 21 { // 20 objects and the namespace
			b.Fatalf("last member got %d objects", got)
		}
		if inMemory {
			applied += growth(before)
			count += uint64(n)
		}
		runtime.KeepAlive(ms)
		runtime.KeepAlive(d)
		b.StartTimer()
	}
	if count > 0 {
		b.ReportMetric(float64(made)/float64(count), "B/member-made")
		b.ReportMetric(float64(applied)/float64(count), "B/member-applied")
	}
	b.ReportMetric(float64(n*b.N)/elapsed.Seconds(), "clusters/s")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// growth returns how much the live heap grew since it was before bytes.
func growth(before uint64) uint64 {
	return max(liveHeap(), before) - before
}

// peakRSS returns the process's peak resident set size (VmHWM), where
// /proc says it.
func peakRSS() (uint64, bool) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb uint64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb << 10, true
			}
		}
	}
	return 0, false
}

// benchMember is a member of the benchmark that says how many objects it
// was given.
type benchMember interface {
	release.Cluster
	applied() int
}

type memoryMember struct{ *memory.Cluster }

func (m memoryMember) applied() int { return len(m.Objects()) }

// memoryMembers makes n in-memory members sharing one Schemas, as a test
// fleet would.
func memoryMembers(n int) []benchMember {
	shared := memory.NewSchemas()
	out := make([]benchMember, n)
	for i := range out {
		out[i] = memoryMember{memory.New(fmt.Sprintf("member-%04d", i), memory.WithSchemas(shared))}
	}
	return out
}

// nullMember accepts applies and keeps nothing but their count.
type nullMember struct {
	name  string
	count *atomic.Int64
}

func nullMembers(n int) []benchMember {
	out := make([]benchMember, n)
	for i := range out {
		out[i] = nullMember{name: fmt.Sprintf("member-%04d", i), count: &atomic.Int64{}}
	}
	return out
}

func (m nullMember) applied() int { return int(m.count.Load()) }
func (m nullMember) Name() string { return m.name }
func (m nullMember) HelmConfig(context.Context, release.HelmScope) (*action.Configuration, error) {
	return nil, errors.New("null member has no Helm")
}
func (m nullMember) Get(_ context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	return nil, &release.NotFoundError{Cluster: m.name, Object: ref}
}
func (m nullMember) List(context.Context, schema.GroupVersionKind, string, labels.Selector) ([]*unstructured.Unstructured, error) {
	return nil, nil
}
func (m nullMember) Apply(_ context.Context, obj *unstructured.Unstructured, _ release.ApplyOptions) (*unstructured.Unstructured, error) {
	m.count.Add(1)
	return obj, nil
}
func (m nullMember) Delete(context.Context, release.ObjectRef, release.DeleteOptions) error {
	return nil
}

// templateAndApply is `helm template` with a cluster's own values, then a
// server-side apply of the namespace and every object to that cluster.
func templateAndApply(ctx context.Context, c release.Cluster, ch *chart.Chart, vals map[string]any) error {
	inst := action.NewInstall(&action.Configuration{})
	inst.ReleaseName, inst.Namespace = "podinfo", "apps"
	inst.DryRun, inst.ClientOnly, inst.Replace = true, true, true
	rel, err := inst.Run(ch, vals)
	if err != nil {
		return err
	}
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "apps"}}}
	if _, err := c.Apply(ctx, ns, release.ApplyOptions{FieldManager: "helmfleet"}); err != nil {
		return err
	}
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return err
		}
		if obj.GetNamespace() == "" {
			obj.SetNamespace("apps")
		}
		if _, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "helmfleet", Force: true}); err != nil {
			return err
		}
	}
	return nil
}
