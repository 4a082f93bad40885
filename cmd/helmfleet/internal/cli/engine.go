package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// pollInterval is how often in-memory waits re-check health.
const pollInterval = time.Millisecond

// members is the fleet a command runs on: in-memory clusters made from
// a FleetFile, with the bootstrap inputs and an inventory store shared by
// every fleet.Fleet made over them (so the HEAD of a diff knows what
// BASE installed).
type members struct {
	spec     *FleetFile
	in       fleet.Inputs
	clusters []release.Member
	store    *mapStore
	charts   source.Resolver
	progress io.Writer
	start    time.Time
}

// progressf writes a progress line to stderr, with the time since start.
func (m *members) progressf(format string, args ...any) {
	fmt.Fprintf(m.progress, "helmfleet: %5.2fs %s\n", time.Since(m.start).Seconds(), fmt.Sprintf(format, args...))
}

// newMembers makes the members of spec, each holding its objects. A
// member with a kubeconfig context (read from kubeconfig, see
// FleetFile.kubeconfigPath) is that live cluster when live is set (plan:
// read-only), else an in-memory stand-in with its Kubernetes version and
// API versions.
func newMembers(ctx context.Context, spec *FleetFile, charts source.Resolver, progress io.Writer, live bool, kubeconfig string) (*members, error) {
	data, err := os.ReadFile(spec.bootstrapPath())
	if err != nil {
		return nil, fmt.Errorf("bootstrap: %w", err)
	}
	objs, err := release.Load(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("bootstrap %s: %w", spec.bootstrapPath(), err)
	}
	m := &members{spec: spec, in: fleet.InputsOf(objs), store: &mapStore{}, charts: charts, progress: progress, start: time.Now()}
	schemas := memory.NewSchemas()
	for _, ms := range spec.Members {
		if ms.Context != "" {
			kc, err := liveCluster(ms, kubeconfig)
			if err != nil {
				return nil, err
			}
			if live {
				m.progressf("member %s: live cluster of context %s", ms.Name, ms.Context)
				if len(ms.Objects) > 0 {
					m.progressf("member %s: its %d objects are for the in-memory stand-in of build, diff and test; plan reads the live cluster as it is and writes nothing to it", ms.Name, len(ms.Objects))
				}
				m.clusters = append(m.clusters, release.Member{Cluster: kc, Facts: policy.Cluster{Name: ms.Name, Labels: ms.Labels}})
				continue
			}
			if err := readCapabilities(ctx, &ms, kc); err != nil {
				return nil, err
			}
			m.progressf("member %s: in-memory stand-in for context %s (Kubernetes %s, %d API versions)", ms.Name, ms.Context, ms.KubeVersion, len(ms.APIVersions))
		}
		c := memory.New(ms.Name, memory.WithSchemas(schemas), memory.WithKubeVersion(ms.KubeVersion),
			memory.WithAPIVersions(ms.APIVersions...), memory.WithPollInterval(pollInterval))
		for i, o := range ms.Objects {
			u := &unstructured.Unstructured{Object: o}
			if _, err := c.Apply(ctx, u.DeepCopy(), release.ApplyOptions{FieldManager: "helmfleet"}); err != nil {
				return nil, fmt.Errorf("member %s: objects[%d] %s %s/%s: %w", ms.Name, i, u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
		}
		m.clusters = append(m.clusters, release.Member{Cluster: c, Facts: policy.Cluster{Name: ms.Name, Labels: ms.Labels}})
	}
	return m, nil
}

// fleetOf returns a fleet running the repository at root on the members.
func (m *members) fleetOf(root fs.FS, revision string) (*fleet.Fleet, error) {
	var sources kustomize.MapSources
	for key, dir := range m.spec.Sources {
		sub, err := fs.Sub(root, path.Clean(strings.TrimPrefix(dir, "./")))
		if err != nil {
			return nil, fmt.Errorf("fleet file: sources[%s]: %q: %w", key, dir, err)
		}
		if sources == nil {
			sources = kustomize.MapSources{}
		}
		sources[key] = kustomize.Source{FS: sub, Revision: revision}
	}
	return fleet.New(fleet.Config{
		Members:          m.clusters,
		Repository:       &fleet.Repository{Root: root, Revision: revision, Sources: sources, Charts: m.charts},
		ReconcilerConfig: &reconcile.Config{PollInterval: pollInterval},
		KustomizeConfig:  &kustomize.ReconcilerConfig{PollInterval: pollInterval},
		Store:            m.store,
	})
}

// plan plans the repository at dir on the members.
func (m *members) plan(ctx context.Context, dir string) (*fleet.Fleet, *fleet.Plan, error) {
	root := os.DirFS(dir)
	rev, err := kustomize.TreeDigest(root)
	if err != nil {
		return nil, nil, err
	}
	f, err := m.fleetOf(root, rev)
	if err != nil {
		return nil, nil, err
	}
	m.progressf("planning %s (%s) on %d members", dir, rev, len(m.clusters))
	p, err := f.Plan(ctx, m.in)
	if err != nil {
		return nil, nil, err
	}
	m.progressf("planned %d units", len(p.Items)+len(p.Kustomizations))
	return f, p, nil
}

// apply runs the repository at dir on the members (in memory) and
// returns the apply's error and, with replan, the plan of a second run,
// which renders every release (the first may defer those waiting for
// CRDs); without, the plan applied.
func (m *members) apply(ctx context.Context, dir string, replan bool) (*fleet.Plan, error, error) {
	f, p, err := m.plan(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	if pe := p.PlacementErrors(); len(pe) > 0 {
		return p, nil, nil
	}
	m.progressf("applying %s to the in-memory members", dir)
	_, applyErr := f.Apply(ctx, p, fleet.ApplyOptions{})
	m.progressf("applied")
	if !replan {
		return p, applyErr, nil
	}
	again, err := f.Plan(ctx, m.in)
	if err != nil {
		return nil, nil, err
	}
	return again, applyErr, nil
}

// mapStore is an in-memory fleet.Store.
type mapStore struct {
	mu      sync.Mutex
	entries map[fleet.Key]fleet.Entry
}

// Load implements fleet.Store.
func (s *mapStore) Load(context.Context) ([]fleet.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]fleet.Entry, 0, len(s.entries))
	for _, e := range s.entries {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out, nil
}

// Save implements fleet.Store.
func (s *mapStore) Save(_ context.Context, e fleet.Entry) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.entries == nil {
		s.entries = map[fleet.Key]fleet.Entry{}
	}
	s.entries[e.Key] = e
	return nil
}

// Delete implements fleet.Store.
func (s *mapStore) Delete(_ context.Context, k fleet.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, k)
	return nil
}
