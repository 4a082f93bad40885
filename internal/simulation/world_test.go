package simulation_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

const (
	// ns is the namespace of every release and of its Helm storage.
	ns = "apps"
	// soloName is the release the one-cluster reconciler runs on "solo".
	soloName = "podinfo"
	// appName is the release the fleet runs on every member.
	appName = "app"
	// brokenVersion is the chart version whose Deployment never becomes
	// ready on a member the schedule marks broken.
	brokenVersion = "6.6.0"
	// hookVersion is the chart version with the hook Job (pre-install,
	// pre-upgrade, pre-delete) that fails while its member's hookFail is
	// on.
	hookVersion = "7.0.0"
)

var (
	memberNames = []string{"m1", "m2", "m3"}
	versions    = []string{"6.5.0", "6.5.1", brokenVersion, hookVersion}
	// faultOps are the operations a fault may fail.
	faultOps = []memory.Operation{
		memory.OpGet, memory.OpList, memory.OpApply, memory.OpDelete,
		memory.OpHelmBuild, memory.OpHelmGet, memory.OpHelmCreate, memory.OpHelmUpdate, memory.OpHelmDelete,
		memory.OpStorageCreate, memory.OpStorageUpdate, memory.OpStorageDelete,
	}
	errInjected    = errors.New("injected fault")
	errUnreachable = errors.New("injected: connection refused")
)

// hookJob is the template of hookVersion's hook: a Job run before
// install, upgrade and delete.
const hookJob = `apiVersion: batch/v1
kind: Job
metadata:
  name: {{ .Release.Name }}-sim-hook
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade,pre-delete
    "helm.sh/hook-delete-policy": before-hook-creation
spec:
  backoffLimit: 0
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: hook
          image: busybox
`

const placement = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: app, namespace: apps}
spec:
  resourceSelectors:
    - apiVersion: helm.toolkit.fluxcd.io/v2
      kind: HelmRelease
      name: app
  placement:
    clusterAffinity:
      clusterNames: [m1, m2, m3]
`

// charts serves the test chart at the version a release asks for, with
// the hook Job at hookVersion.
func charts() reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		v := rel.Spec.Chart.Spec.Version
		ch, err := testchart.Load(v)
		if err != nil {
			return nil, err
		}
		if v == hookVersion {
			ch.Templates = append(ch.Templates, &chart.File{Name: "templates/sim-hook.yaml", Data: []byte(hookJob)})
		}
		return &reconcile.Chart{Chart: ch}, nil
	})
}

// fakeClock is the schedule's clock: After returns at once and moves the
// clock on by d, so bake times take no wall-clock time.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// faults is what fails on one cluster now: every call of one verb, the
// n-th call of another (once), and a cancellation at its k-th call.
type faults struct {
	mu       sync.Mutex
	verb     memory.Operation
	nth      memory.Fault
	nthDesc  string
	cancelAt int
	calls    int
	cancel   context.CancelFunc
	off      bool
}

func (f *faults) fault(op memory.Operation, ref release.ObjectRef) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off {
		return nil
	}
	if f.cancel != nil {
		f.calls++
		if f.calls >= f.cancelAt {
			f.cancel()
			f.cancel = nil
		}
	}
	if f.verb != "" && op == f.verb {
		return fmt.Errorf("%w: every %s", errInjected, op)
	}
	if f.nth != nil {
		return f.nth(op, ref)
	}
	return nil
}

// armCancel cancels through cancel at the k-th call from now.
func (f *faults) armCancel(k int, cancel context.CancelFunc) {
	f.mu.Lock()
	f.calls, f.cancelAt, f.cancel = 0, k, cancel
	f.mu.Unlock()
}

func (f *faults) disarm() {
	f.mu.Lock()
	f.cancel = nil
	f.mu.Unlock()
}

func (f *faults) clear() {
	f.mu.Lock()
	f.verb, f.nth, f.nthDesc, f.cancel = "", nil, "", nil
	f.mu.Unlock()
}

// setOff turns every fault of the cluster off (true) for the checks, or
// on again.
func (f *faults) setOff(off bool) {
	f.mu.Lock()
	f.off = off
	f.mu.Unlock()
}

// spec is what a spec change sets on a release.
type spec struct {
	version        string
	replicas       int
	installRetries int
	upgradeRetries int
	uninstall      bool
}

func (s spec) String() string {
	strategy := "rollback"
	if s.uninstall {
		strategy = "uninstall"
	}
	return fmt.Sprintf("version %s replicas %d install.retries %d upgrade.retries %d upgrade.strategy %s",
		s.version, s.replicas, s.installRetries, s.upgradeRetries, strategy)
}

// newRelease returns release name in ns with s.
func newRelease(name string, s spec, gen int64) *release.Release {
	r := fixture.Release()
	r.Name = name
	r.Generation = gen
	r.Spec.Timeout = &metav1.Duration{Duration: 30 * time.Millisecond}
	r.Spec.Chart.Spec.Version = s.version
	r.Spec.Values = map[string]any{"replicaCount": s.replicas}
	r.Spec.Install = &release.Install{Remediation: &release.InstallRemediation{Retries: s.installRetries}}
	strategy := release.RollbackRemediationStrategy
	if s.uninstall {
		strategy = release.UninstallRemediationStrategy
	}
	r.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: s.upgradeRetries, Strategy: &strategy}}
	return r
}

// world is one schedule's clusters, fleet and the state of its faults.
type world struct {
	t     *testing.T
	seed  int64
	rng   *rand.Rand
	step  int
	hist  []string
	clock *fakeClock

	mu       sync.Mutex
	broken   map[string]bool
	hookFail map[string]bool

	clusters map[string]*memory.Cluster
	faults   map[string]*faults
	rec      *reconcile.Reconciler

	soloGen int64
	solo    *release.Release

	appGen   int64
	app      *release.Release
	policies policy.Set
	store    fleet.Store
	fleet    *fleet.Fleet
	// kinds is the schedule's second track: the controller and the
	// Kustomizations.
	kinds *kinds
	// restarts counts the fleets made over the store.
	restarts int

	// revs is the latest Helm revision of each release on each cluster
	// ("cluster/release") at the last check.
	revs map[string]int
	// accounted is what the current step reported per "cluster/release":
	// the revisions its actions may add, or -1 after an uninstall (the
	// history may start again).
	accounted map[string]int
	// unsaved are the fleet's "member/release" whose last save to the
	// store failed; stale, those a restart loaded from an older save (a
	// successful apply of the unit ends both).
	unsaved, stale map[string]bool
}

// clusterNames are the clusters of a world, sorted: the hub, the members
// and the one-cluster reconciler's cluster.
func clusterNames() []string {
	return append([]string{"hub"}, append(slices.Clone(memberNames), "solo")...)
}

func newWorld(t *testing.T, seed int64) *world {
	t.Helper()
	w := &world{
		t: t, seed: seed,
		rng:      rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
		clock:    &fakeClock{now: time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)},
		broken:   map[string]bool{},
		hookFail: map[string]bool{},
		clusters: map[string]*memory.Cluster{},
		faults:   map[string]*faults{},
		revs:     map[string]int{},
		unsaved:  map[string]bool{},
		stale:    map[string]bool{},
	}
	schemas := memory.NewSchemas()
	for _, name := range clusterNames() {
		// Which members crash brokenVersion is fixed for the schedule.
		w.broken[name] = w.rng.IntN(2) == 0
		c := memory.New(name, memory.WithSchemas(schemas), memory.WithClock(w.clock.Now),
			memory.WithPollInterval(time.Millisecond), memory.WithHealth(w.health(name)))
		f := &faults{}
		c.SetFaults(f.fault)
		w.clusters[name], w.faults[name] = c, f
	}
	rec, err := reconcile.New(reconcile.Config{Charts: charts(), Now: w.clock.Now, PollInterval: time.Millisecond})
	require.NoError(t, err)
	w.rec = rec
	w.soloGen, w.appGen = 1, 1
	w.solo = newRelease(soloName, w.drawSpec(), w.soloGen)
	w.app = newRelease(appName, w.drawSpec(), w.appGen)
	w.policies = fixture.PolicySet(t, placement)
	store, err := fleet.NewObjectStore(w.clusters["hub"], fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "sim"})
	require.NoError(t, err)
	w.store = store
	w.fleet = w.newFleet()
	return w
}

// newFleet is a new process's Fleet over the same members and store.
func (w *world) newFleet() *fleet.Fleet {
	var members []release.Member
	for _, m := range memberNames {
		members = append(members, release.Member{Cluster: w.clusters[m], Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}})
	}
	f, err := fleet.New(fleet.Config{
		Members: members, Reconciler: w.rec, Store: w.store,
		// One unit at a time, so that a schedule replays exactly.
		Concurrency: 1, ClusterConcurrency: 1, Clock: w.clock,
	})
	require.NoError(w.t, err)
	return f
}

// health is cluster name's scripted readiness.
func (w *world) health(name string) memory.HealthFunc {
	return func(u *unstructured.Unstructured) memory.Health {
		w.mu.Lock()
		broken, hook := w.broken[name], w.hookFail[name]
		w.mu.Unlock()
		switch {
		case broken && u.GetKind() == "Deployment" && u.GetLabels()["helm.sh/chart"] == "podinfo-"+brokenVersion:
			return memory.Health{Message: "crash loop"}
		case hook && u.GetKind() == "Job" && strings.HasSuffix(u.GetName(), "-sim-hook"):
			return memory.Health{Failed: true, Message: "hook failed"}
		}
		return memory.Health{Ready: true}
	}
}

func (w *world) drawSpec() spec {
	return spec{
		version:        versions[w.rng.IntN(len(versions))],
		replicas:       1 + w.rng.IntN(3),
		installRetries: w.rng.IntN(3),
		upgradeRetries: w.rng.IntN(2),
		uninstall:      w.rng.IntN(3) == 0,
	}
}

func (w *world) pick(names []string) string { return names[w.rng.IntN(len(names))] }

func (w *world) logf(format string, args ...any) {
	w.hist = append(w.hist, fmt.Sprintf("step %d: ", w.step)+fmt.Sprintf(format, args...))
}

// failf fails the schedule with its seed, step and recent history.
func (w *world) failf(invariant, format string, args ...any) {
	w.t.Helper()
	from := max(0, len(w.hist)-25)
	if *histFlag {
		from = 0
	}
	w.t.Fatalf("seed %d step %d: invariant %s violated: %s\nreplay: go test ./internal/simulation -run TestSimulation -args -seed=%d\nlast steps:\n  %s",
		w.seed, w.step, invariant, fmt.Sprintf(format, args...), w.seed, strings.Join(w.hist[from:], "\n  "))
}
