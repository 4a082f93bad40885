package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// cancelAt is an in-memory cluster that counts the operations a
// reconcile makes against it — its object reads and writes, every call of
// Helm's kube client and every call of Helm's storage driver — and
// cancels the reconcile's context just before the at-th one (at 0: never).
type cancelAt struct {
	*memory.Cluster
	cancel context.CancelFunc

	mu  sync.Mutex
	at  int
	n   int
	ops []string
}

// tick counts one operation, cancelling before the at-th.
func (c *cancelAt) tick(op string) {
	c.mu.Lock()
	c.n++
	c.ops = append(c.ops, op)
	hit := c.n == c.at
	c.mu.Unlock()
	if hit {
		c.cancel()
	}
}

// arm starts counting from zero, cancelling with cancel before the at-th
// operation.
func (c *cancelAt) arm(at int, cancel context.CancelFunc) {
	c.mu.Lock()
	c.at, c.n, c.ops, c.cancel = at, 0, nil, cancel
	c.mu.Unlock()
}

func (c *cancelAt) count() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n, append([]string(nil), c.ops...)
}

func (c *cancelAt) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	c.tick("helm config")
	cfg, err := c.Cluster.HelmConfig(ctx, scope)
	if err != nil {
		return nil, err
	}
	cfg.KubeClient = &tickingKube{c: c, kc: cfg.KubeClient}
	// Within one call, Helm's kube client makes one request per object:
	// a cancellation can land between them.
	c.SetFaults(func(op memory.Operation, ref release.ObjectRef) error {
		switch op {
		case memory.OpHelmGet, memory.OpHelmCreate, memory.OpHelmUpdate, memory.OpHelmDelete:
			c.tick(string(op) + " " + ref.Kind)
		}
		return nil
	})
	cfg.Releases.Driver = &tickingDriver{Driver: cfg.Releases.Driver, c: c}
	return cfg, nil
}

func (c *cancelAt) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	c.tick("get " + ref.Kind)
	return c.Cluster.Get(ctx, ref)
}

func (c *cancelAt) List(ctx context.Context, gvk schema.GroupVersionKind, ns string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	c.tick("list " + gvk.Kind)
	return c.Cluster.List(ctx, gvk, ns, sel)
}

func (c *cancelAt) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	c.tick("apply " + obj.GetKind())
	return c.Cluster.Apply(ctx, obj, opts)
}

func (c *cancelAt) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	c.tick("delete " + ref.Kind)
	return c.Cluster.Delete(ctx, ref, opts)
}

func (c *cancelAt) Patch(ctx context.Context, ref release.ObjectRef, patch []byte, opts release.PatchOptions) (*unstructured.Unstructured, error) {
	c.tick("patch " + ref.Kind)
	return c.Cluster.Patch(ctx, ref, patch, opts)
}

// tickingKube counts the calls of Helm's kube client; the in-memory
// client has every optional role Helm looks for.
type tickingKube struct {
	c  *cancelAt
	kc kube.Interface
}

func (k *tickingKube) ext() interface {
	kube.InterfaceExt
	kube.InterfaceDeletionPropagation
	kube.InterfaceLogs
	kube.InterfaceThreeWayMerge
} {
	return k.kc.(interface {
		kube.InterfaceExt
		kube.InterfaceDeletionPropagation
		kube.InterfaceLogs
		kube.InterfaceThreeWayMerge
	})
}

func (k *tickingKube) Create(rl kube.ResourceList) (*kube.Result, error) {
	k.c.tick("kube create")
	return k.kc.Create(rl)
}

func (k *tickingKube) Wait(rl kube.ResourceList, d time.Duration) error {
	k.c.tick("kube wait")
	return k.kc.Wait(rl, d)
}

func (k *tickingKube) WaitWithJobs(rl kube.ResourceList, d time.Duration) error {
	k.c.tick("kube wait with jobs")
	return k.kc.WaitWithJobs(rl, d)
}

func (k *tickingKube) Delete(rl kube.ResourceList) (*kube.Result, []error) {
	k.c.tick("kube delete")
	return k.kc.Delete(rl)
}

func (k *tickingKube) WatchUntilReady(rl kube.ResourceList, d time.Duration) error {
	k.c.tick("kube watch until ready")
	return k.kc.WatchUntilReady(rl, d)
}

func (k *tickingKube) Update(orig, target kube.ResourceList, force bool) (*kube.Result, error) {
	k.c.tick("kube update")
	return k.kc.Update(orig, target, force)
}

func (k *tickingKube) Build(r io.Reader, validate bool) (kube.ResourceList, error) {
	k.c.tick("kube build")
	return k.kc.Build(r, validate)
}

func (k *tickingKube) WaitAndGetCompletedPodPhase(name string, d time.Duration) (corev1.PodPhase, error) {
	k.c.tick("kube pod phase")
	return k.kc.WaitAndGetCompletedPodPhase(name, d)
}

func (k *tickingKube) IsReachable() error {
	k.c.tick("kube reachable")
	return k.kc.IsReachable()
}

func (k *tickingKube) WaitForDelete(rl kube.ResourceList, d time.Duration) error {
	k.c.tick("kube wait for delete")
	return k.ext().WaitForDelete(rl, d)
}

func (k *tickingKube) DeleteWithPropagationPolicy(rl kube.ResourceList, p metav1.DeletionPropagation) (*kube.Result, []error) {
	k.c.tick("kube delete with propagation")
	return k.ext().DeleteWithPropagationPolicy(rl, p)
}

func (k *tickingKube) GetPodList(ns string, opts metav1.ListOptions) (*corev1.PodList, error) {
	k.c.tick("kube pod list")
	return k.ext().GetPodList(ns, opts)
}

func (k *tickingKube) OutputContainerLogsForPodList(pods *corev1.PodList, ns string, w func(string, string, string) io.Writer) error {
	k.c.tick("kube logs")
	return k.ext().OutputContainerLogsForPodList(pods, ns, w)
}

func (k *tickingKube) UpdateThreeWayMerge(orig, target kube.ResourceList, force bool) (*kube.Result, error) {
	k.c.tick("kube update three-way")
	return k.ext().UpdateThreeWayMerge(orig, target, force)
}

// tickingDriver counts the calls of Helm's storage driver.
type tickingDriver struct {
	driver.Driver
	c *cancelAt
}

func (d *tickingDriver) Create(key string, rls *helmrelease.Release) error {
	d.c.tick("storage create")
	return d.Driver.Create(key, rls)
}

func (d *tickingDriver) Update(key string, rls *helmrelease.Release) error {
	d.c.tick("storage update")
	return d.Driver.Update(key, rls)
}

func (d *tickingDriver) Delete(key string) (*helmrelease.Release, error) {
	d.c.tick("storage delete")
	return d.Driver.Delete(key)
}

func (d *tickingDriver) Get(key string) (*helmrelease.Release, error) {
	d.c.tick("storage get")
	return d.Driver.Get(key)
}

func (d *tickingDriver) List(filter func(*helmrelease.Release) bool) ([]*helmrelease.Release, error) {
	d.c.tick("storage list")
	return d.Driver.List(filter)
}

func (d *tickingDriver) Query(l map[string]string) ([]*helmrelease.Release, error) {
	d.c.tick("storage query")
	return d.Driver.Query(l)
}

// cancelScenario is one reconcile whose every operation gets cancelled in
// turn: setup brings a fresh cluster to where the reconcile starts, run
// is the reconcile, fix makes what failed on purpose succeed, and
// converged checks the cluster after a reconcile with a live context.
type cancelScenario struct {
	name      string
	actions   []reconcile.Action // of the uncancelled run
	setup     func(t *testing.T, c *memory.Cluster, h *health, rec *reconcile.Reconciler) *release.Release
	run       func(ctx context.Context, rec *reconcile.Reconciler, c release.Cluster, rel *release.Release) (*reconcile.Result, error)
	fix       func(h *health, rel *release.Release)
	converged func(t *testing.T, c *memory.Cluster, rel *release.Release)
}

func reconcileRun(ctx context.Context, rec *reconcile.Reconciler, c release.Cluster, rel *release.Release) (*reconcile.Result, error) {
	return rec.Reconcile(ctx, c, rel)
}

func uninstallRun(ctx context.Context, rec *reconcile.Reconciler, c release.Cluster, rel *release.Release) (*reconcile.Result, error) {
	return rec.Uninstall(ctx, c, rel)
}

// readyAt checks that the release is Ready with version deployed, the
// latest revision in Helm's storage.
func readyAt(version string) func(t *testing.T, c *memory.Cluster, rel *release.Release) {
	return func(t *testing.T, c *memory.Cluster, rel *release.Release) {
		t.Helper()
		assert.Equal(t, "True/"+rel.Status.GetCondition(release.ConditionReady).Reason, cond(rel, release.ConditionReady))
		last, err := c.Storage("apps").Last("podinfo")
		require.NoError(t, err)
		assert.Equal(t, helmrelease.StatusDeployed, last.Info.Status)
		assert.Equal(t, version, last.Chart.Metadata.Version)
	}
}

func cancelScenarios() []cancelScenario {
	installed := func(t *testing.T, c *memory.Cluster, h *health, rec *reconcile.Reconciler) *release.Release {
		rel := fixture.Release()
		rel.Spec.Timeout = &metav1.Duration{Duration: time.Second}
		_, err := rec.Reconcile(context.Background(), c, rel)
		require.NoError(t, err)
		return rel
	}
	return []cancelScenario{
		{
			name:    "install",
			actions: []reconcile.Action{reconcile.ActionInstall},
			setup: func(t *testing.T, c *memory.Cluster, h *health, rec *reconcile.Reconciler) *release.Release {
				rel := fixture.Release()
				rel.Spec.Timeout = &metav1.Duration{Duration: time.Second}
				return rel
			},
			run:       reconcileRun,
			converged: readyAt("6.5.0"),
		},
		{
			name:    "upgrade",
			actions: []reconcile.Action{reconcile.ActionUpgrade},
			setup: func(t *testing.T, c *memory.Cluster, h *health, rec *reconcile.Reconciler) *release.Release {
				rel := installed(t, c, h, rec)
				rel.Spec.Upgrade = &release.Upgrade{CleanupOnFail: true}
				rel.Spec.Chart.Spec.Version = "6.5.1"
				rel.Spec.Values = map[string]any{"replicaCount": 3, "hooks": map[string]any{"preUpgrade": true}}
				rel.Generation = 2
				return rel
			},
			run:       reconcileRun,
			converged: readyAt("6.5.1"),
		},
		{
			// The upgrade's pre-upgrade Job fails and the reconcile rolls
			// back: the cancellation lands in the upgrade or the rollback.
			name:    "rollback",
			actions: []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionRollback},
			setup: func(t *testing.T, c *memory.Cluster, h *health, rec *reconcile.Reconciler) *release.Release {
				rel := installed(t, c, h, rec)
				// Both clean up on failure: Helm reads what Update
				// created even when Update fails.
				rel.Spec.Upgrade = &release.Upgrade{CleanupOnFail: true, Remediation: &release.UpgradeRemediation{Retries: 3}}
				rel.Spec.Rollback = &release.Rollback{CleanupOnFail: true}
				h.failed = map[string]string{"Job": "migration: relation exists"}
				rel.Spec.Chart.Spec.Version = "6.5.1"
				rel.Spec.Values = map[string]any{"replicaCount": 3, "hooks": map[string]any{"preUpgrade": true}}
				rel.Generation = 2
				return rel
			},
			run:       reconcileRun,
			fix:       func(h *health, _ *release.Release) { h.failed = nil },
			converged: readyAt("6.5.1"),
		},
		{
			name:    "uninstall",
			actions: []reconcile.Action{reconcile.ActionUninstall},
			setup:   installed,
			run:     uninstallRun,
			converged: func(t *testing.T, c *memory.Cluster, rel *release.Release) {
				t.Helper()
				assert.Empty(t, c.Summary(), "the release's objects are gone")
				_, err := c.Storage("apps").Last("podinfo")
				assert.ErrorIs(t, err, driver.ErrReleaseNotFound)
				assert.Equal(t, release.ReasonUninstallSucceeded, rel.Status.GetCondition(release.ConditionReady).Reason)
			},
		},
	}
}

// maxPasses bounds the reconciles after a cancelled one: one that
// remediates what the cancelled one left, one that upgrades.
const maxPasses = 2

// pendingRevisions lists the revisions of podinfo left in a pending
// state (pending-install, pending-upgrade, pending-rollback, uninstalling).
func pendingRevisions(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	hist, err := c.Storage("apps").History("podinfo")
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	require.NoError(t, err)
	var out []string
	for _, h := range hist {
		if h.Info.Status.IsPending() || h.Info.Status == helmrelease.StatusUninstalling {
			out = append(out, fmt.Sprintf("v%d %s", h.Version, h.Info.Status))
		}
	}
	return out
}

// TestCancelAtEveryOperation cancels install, upgrade, rollback and
// uninstall at each operation they make against the cluster in turn:
// none panics, and whatever the cancelled reconcile left — a failed
// revision, a pending one, half the objects — the next reconcile with a
// live context brings the release to where it was going. With -short it
// cancels at every third operation.
func TestCancelAtEveryOperation(t *testing.T) {
	for _, sc := range cancelScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			rec := fixture.Reconciler(t, nil)
			fresh := func() (*cancelAt, *health, *release.Release) {
				h := &health{}
				c := &cancelAt{Cluster: memory.New("member1", memory.WithHealth(h.fn), memory.WithPollInterval(time.Millisecond))}
				rel := sc.setup(t, c.Cluster, h, rec)
				return c, h, rel
			}

			// The uncancelled run counts the operations.
			c, _, rel := fresh()
			c.arm(0, func() {})
			res, _ := sc.run(context.Background(), rec, c, rel)
			require.Equal(t, sc.actions, res.Actions)
			n, ops := c.count()
			require.Greater(t, n, 5, "operations: %v", ops)
			t.Logf("%s: %d operations", sc.name, n)

			step := 1
			if testing.Short() {
				step = 3
			}
			leftPending := 0
			for k := 1; k <= n; k += step {
				c, h, rel := fresh()
				ctx, cancel := context.WithCancel(context.Background())
				c.arm(k, cancel)
				require.NotPanics(t, func() { _, _ = sc.run(ctx, rec, c, rel) }, "cancelled at operation %d (%s)", k, ops[k-1])
				cancel()
				at := fmt.Sprintf("cancelled at operation %d of %d (%s)", k, n, ops[k-1])
				stuck := pendingRevisions(t, c.Cluster)
				if len(stuck) > 0 {
					leftPending++
				}

				if sc.fix != nil {
					sc.fix(h, rel)
				}
				c.arm(0, func() {})
				// A reconcile that only finished what the cancelled one
				// began (a remediation) asks to come back at once, as
				// Flux's does; a controller reconciles again.
				var actions [][]reconcile.Action
				for pass := 0; ; pass++ {
					var res *reconcile.Result
					var err error
					require.NotPanics(t, func() { res, err = sc.run(context.Background(), rec, c, rel) }, at)
					actions = append(actions, res.Actions)
					if res.Next == reconcile.NextRequeue && pass < maxPasses-1 {
						continue
					}
					require.NoError(t, err, "%s: the next reconcile converges (left pending: %v; actions %v)", at, stuck, actions)
					require.Equal(t, reconcile.NextDone, res.Next, "%s: actions %v", at, actions)
					break
				}
				assert.Empty(t, pendingRevisions(t, c.Cluster), "%s: nothing is left pending (was: %v)", at, stuck)
				sc.converged(t, c.Cluster, rel)
			}
			t.Logf("%s: %d cancellation point(s) left a revision pending, each cleared by the next reconcile", sc.name, leftPending)
		})
	}
}
