package reconcile_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// storageCounts counts the requests a Helm storage driver makes of its
// backend. Over Helm's Secret and ConfigMap drivers each Query and List
// is a list of every record in the storage namespace, so lists are what
// grows with the number of releases.
type storageCounts struct {
	mu                  sync.Mutex
	lists, gets, writes int
}

func (n *storageCounts) take() (lists, gets, writes int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	lists, gets, writes = n.lists, n.gets, n.writes
	n.lists, n.gets, n.writes = 0, 0, 0
	return
}

func (n *storageCounts) add(p *int) {
	n.mu.Lock()
	*p++
	n.mu.Unlock()
}

type countingDriver struct {
	driver.Driver
	n *storageCounts
}

func (d countingDriver) Get(key string) (*helmrelease.Release, error) {
	d.n.add(&d.n.gets)
	return d.Driver.Get(key)
}

func (d countingDriver) List(f func(*helmrelease.Release) bool) ([]*helmrelease.Release, error) {
	d.n.add(&d.n.lists)
	return d.Driver.List(f)
}

func (d countingDriver) Query(l map[string]string) ([]*helmrelease.Release, error) {
	d.n.add(&d.n.lists)
	return d.Driver.Query(l)
}

func (d countingDriver) Create(key string, r *helmrelease.Release) error {
	d.n.add(&d.n.writes)
	return d.Driver.Create(key, r)
}

func (d countingDriver) Update(key string, r *helmrelease.Release) error {
	d.n.add(&d.n.writes)
	return d.Driver.Update(key, r)
}

func (d countingDriver) Delete(key string) (*helmrelease.Release, error) {
	d.n.add(&d.n.writes)
	return d.Driver.Delete(key)
}

// countingCluster is a memory cluster whose Helm storage counts requests.
type countingCluster struct {
	*memory.Cluster
	n *storageCounts
}

func (c countingCluster) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	cfg, err := c.Cluster.HelmConfig(ctx, scope)
	if err != nil {
		return nil, err
	}
	cfg.Releases.Driver = countingDriver{Driver: cfg.Releases.Driver, n: c.n}
	return cfg, nil
}

// TestReconcileStorageRequests pins how often a reconcile reads Helm's
// storage, against Helm's own install of the same chart: the reconciler
// reads a release's history once per reconcile and again only after an
// action wrote it, instead of before and after each step.
func TestReconcileStorageRequests(t *testing.T) {
	ctx := context.Background()

	// Helm's own install of the same chart and values, one at a time.
	helm := countingCluster{Cluster: memory.New("helm"), n: &storageCounts{}}
	cfg, err := helm.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	ch, err := testchart.Load("6.5.0")
	require.NoError(t, err)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "podinfo", "apps"
	_, err = install.Run(ch, map[string]any{"replicaCount": 2})
	require.NoError(t, err)
	helmLists, _, helmWrites := helm.n.take()
	require.Positive(t, helmLists)

	c := countingCluster{Cluster: memory.New("member1"), n: &storageCounts{}}
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()

	// reconcile runs one reconcile that must take action, checks that it
	// read storage at most as often as Helm's install and made no single
	// record reads, and returns its writes.
	reconcileOnce := func(step string, action reconcile.Action) (writes int) {
		t.Helper()
		res, err := rec.Reconcile(ctx, c, rel)
		require.NoError(t, err)
		require.Equal(t, action, res.Last(), step)
		lists, gets, writes := c.n.take()
		t.Logf("%s: %d lists, %d gets, %d writes; Helm's install: %d lists, %d writes", step, lists, gets, writes, helmLists, helmWrites)
		assert.LessOrEqual(t, lists, helmLists, "%s: storage lists", step)
		assert.Zero(t, gets, "%s: storage gets", step)
		return writes
	}

	// Install: one read to observe the absent release; Helm's install
	// and the outcome use what it read and what Helm wrote.
	assert.Equal(t, helmWrites, reconcileOnce("install", reconcile.ActionInstall), "install writes what Helm's install writes")
	// No-op: one read to observe the release in sync.
	assert.Zero(t, reconcileOnce("no-op reconcile", reconcile.ActionNone), "no-op reconcile writes nothing")
	// Upgrade: one read to observe; Helm's reads of the last and the
	// deployed record, and the outcome, use it and what Helm wrote.
	rel.Spec.Values = map[string]any{"replicaCount": 3}
	rel.Generation = 2
	assert.Equal(t, 3, reconcileOnce("upgrade", reconcile.ActionUpgrade), "upgrade creates a record and updates two")
	assert.Equal(t, []string{"6.5.0 superseded", "6.5.0 deployed"}, history(t, c.Cluster))
}
