package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

// fakeClock stands still until a test advances it, so requeue times are
// exact whatever the machine's speed.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestRun(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, time.Millisecond, clock.Now))
	got := out.String()
	for _, want := range []string{
		"poll 1: due: apps/podinfo (generation 1)\n",
		"  plan dev-1 apps/podinfo: install podinfo@6.5.0\n",
		"  plan prod-1 apps/podinfo: error: release apps/podinfo on cluster prod-1: helm configuration: cluster prod-1 unreachable",
		"  status apps/podinfo: Ready=False ReconciliationFailed: ready on 1/2 members; prod-1: ",
		"; next: requeue\n",
		"poll 2: due: apps/podinfo (requeue)\n",
		"  plan prod-1 apps/podinfo: install podinfo@6.5.0\n",
		"  status apps/podinfo: Ready=True ReconciliationSucceeded: ready on 2/2 members: dev-1, prod-1; next: done\n",
		"poll 3: due: apps/podinfo (generation 2)\n",
		"  plan prod-1 apps/podinfo: upgrade podinfo@6.5.1\n",
		"poll 4: nothing due; next: apps/podinfo in 10m0s\n",
		"stopped: context canceled\n",
		"hub apps/podinfo: generation 2, observedGeneration 2\n",
		"  Ready=True ReconciliationSucceeded: ready on 2/2 members: dev-1, prod-1\n",
		"  managed by helmfleet-controller (Apply)\n",
		"  managed by platform-team (Apply)\n",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "poll 5", "the demo stops after four polls")
}

// newTestController is a controller over a hub holding y and one dev
// member with the given health.
func newTestController(t *testing.T, y string, health memory.HealthFunc, clock *fakeClock, out *bytes.Buffer) (*Controller, *memory.Cluster, *memory.Cluster) {
	t.Helper()
	ctx := context.Background()
	hub, err := newHub(ctx, y)
	require.NoError(t, err)
	dev := memory.New("dev-1", memory.WithHealth(health))
	fleet, err := newFleet(clock.Now, map[*memory.Cluster]string{dev: "dev"})
	require.NoError(t, err)
	return &Controller{Hub: hub, Fleet: fleet, Poll: time.Millisecond, Now: clock.Now, Log: out}, hub, dev
}

func TestStalledReleaseWaitsForAChange(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	// 6.5.0's Deployment never becomes ready; the install gives up fast.
	never := func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" && u.GetLabels()["helm.sh/chart"] == "podinfo-6.5.0" {
			return memory.Health{Message: "image pull back-off"}
		}
		return memory.Health{Ready: true}
	}
	y := strings.Replace(teamYAML, "interval: 10m", "interval: 10m\n  timeout: 20ms", 1)
	var out bytes.Buffer
	c, hub, dev := newTestController(t, y, never, clock, &out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.AfterPoll = func(n int) {
		clock.advance(time.Hour)
		switch n {
		case 2:
			// The team fixes the release: a new generation is due at once.
			require.NoError(t, applyYAML(ctx, hub, "platform-team", strings.Replace(y, `version: "6.5.0"`, `version: "6.5.1"`, 1)))
		case 3:
			cancel()
		}
	}
	require.NoError(t, c.Run(ctx))
	got := out.String()
	assert.Contains(t, got, "poll 1: due: apps/podinfo (generation 1)")
	assert.Contains(t, got, "Ready=False ReconciliationFailed: ready on 0/1 members; dev-1: ")
	assert.Contains(t, got, "; next: stalled\n")
	assert.Contains(t, got, "poll 2: nothing due; next: apps/podinfo stalled until it changes\n", "an hour later it is still not retried")
	assert.Contains(t, got, "poll 3: due: apps/podinfo (generation 2)")
	assert.Contains(t, got, "Ready=True ReconciliationSucceeded: ready on 1/1 members: dev-1; next: done")

	hr, err := hub.Get(context.Background(), release.ObjectRef{GroupVersionKind: helmReleaseGVK, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	obs, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
	assert.Equal(t, int64(2), obs)
	replicas, _, _ := unstructured.NestedInt64(hr.Object, "spec", "values", "replicaCount")
	assert.Equal(t, int64(1), replicas, "the controller's status writes leave the team's spec alone")
	assert.Contains(t, dev.Summary(), "Deployment apps/podinfo")
}

func TestRunStopsOnCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	clock := &fakeClock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
	var out bytes.Buffer
	c, _, _ := newTestController(t, teamYAML, memory.AlwaysReady, clock, &out)
	c.Poll = time.Hour // only cancellation can end the wait
	ctx, cancel := context.WithCancel(context.Background())
	polled := make(chan struct{})
	c.AfterPoll = func(int) { close(polled) }
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	<-polled
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	assert.Contains(t, out.String(), "poll 1: due: apps/podinfo (generation 1)")
	assert.True(t, strings.HasSuffix(out.String(), "stopped: context canceled\n"))
}
