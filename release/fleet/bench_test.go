package fleet_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// benchFleet builds n in-memory members sharing a Schemas, each with a
// values override of its own (replicas by index).
func benchFleet(b *testing.B, n int, rec *reconcile.Reconciler, store ...fleet.Store) (*fleet.Fleet, fleet.Inputs) {
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
	cfg := fleet.Config{Members: members, Reconciler: rec, Concurrency: 4, ClusterConcurrency: 1}
	if len(store) > 0 {
		cfg.Store = store[0]
	}
	f, err := fleet.New(cfg)
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
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
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

// BenchmarkFleetInventoryStore is BenchmarkFleetPerClusterRelease's plan
// and apply over 100 members with the inventory kept on an in-memory hub
// by fleet.ObjectStore (one Secret per entry, written before each first
// install and after it), beside the same apply with the inventory in
// process memory only (the floor) and with a store that rewrites the whole
// inventory as one gzipped Secret on every save (the Load/Save-of-all
// design, O(entries) per save and bounded by one object's 1 MiB).
func BenchmarkFleetInventoryStore(b *testing.B) {
	ctx := context.Background()
	const n = 100
	ch := testchart.Grown(15)
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	}), PollInterval: time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	stores := []struct {
		name string
		new  func() fleet.Store
	}{
		{"helmfleet", func() fleet.Store {
			s, err := fleet.NewObjectStore(memory.New("hub"), fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			return s
		}},
		{"no-store", func() fleet.Store { return nil }},
		{"one-secret", func() fleet.Store {
			return &oneSecretStore{hub: memory.New("hub"), entries: map[fleet.Key]fleet.Entry{}}
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			b.ReportAllocs()
			var elapsed time.Duration
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				var f *fleet.Fleet
				var in fleet.Inputs
				if s := st.new(); s != nil {
					f, in = benchFleet(b, n, rec, s)
				} else {
					f, in = benchFleet(b, n, rec)
				}
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
			b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/apply")
		})
	}
}

// oneSecretStore keeps the whole inventory in one Secret, rewritten on
// every save: the baseline of BenchmarkFleetInventoryStore.
type oneSecretStore struct {
	mu      sync.Mutex
	hub     *memory.Cluster
	entries map[fleet.Key]fleet.Entry
}

func (s *oneSecretStore) Load(context.Context) ([]fleet.Entry, error) { return nil, nil }

func (s *oneSecretStore) Save(ctx context.Context, e fleet.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[e.Key] = e
	return s.write(ctx)
}

func (s *oneSecretStore) Delete(ctx context.Context, k fleet.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, k)
	return s.write(ctx)
}

func (s *oneSecretStore) write(ctx context.Context) error {
	all := make([]fleet.Entry, 0, len(s.entries))
	for _, e := range s.entries {
		all = append(all, e)
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	_, err = s.hub.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": "fleet-system", "name": "inventory"},
		"data":     map[string]any{"inventory": base64.StdEncoding.EncodeToString(buf.Bytes())},
	}}, release.ApplyOptions{FieldManager: "bench", Force: true})
	return err
}
