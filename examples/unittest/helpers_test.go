package unittest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
)

// bake is short: the in-memory members are ready at once, or never.
const bake = 5 * time.Millisecond

// newTestFleet builds the team's fleet in memory: one dev cluster, a prod
// canary and one more prod cluster; health scripts readiness per member
// (nil: everything is ready at once).
func newTestFleet(t testing.TB, health map[string]memory.HealthFunc) *fleettest.Fleet {
	t.Helper()
	f, err := fleettest.New(fleettest.Config{
		Members: []fleettest.Member{
			{Name: "dev-1", Labels: map[string]string{"env": "dev"}, Health: health["dev-1"]},
			{Name: "prod-eu-1", Labels: map[string]string{"env": "prod", "canary": "true"}, Health: health["prod-eu-1"]},
			{Name: "prod-us-1", Labels: map[string]string{"env": "prod"}, Health: health["prod-us-1"]},
		},
		Charts: fleettest.NewCharts(fleettest.Podinfo("6.5.0"), fleettest.Podinfo("6.5.1")),
	})
	require.NoError(t, err)
	return f
}

// platform decodes testdata/platform.yaml with podinfo at version.
func platform(t testing.TB, version string) fleet.Inputs {
	t.Helper()
	data, err := os.ReadFile("testdata/platform.yaml")
	require.NoError(t, err)
	in, err := fleettest.Inputs(string(data))
	require.NoError(t, err)
	for _, r := range in.Releases {
		r.Spec.Chart.Spec.Version = version
	}
	return in
}

// history is `helm history podinfo -n apps` on a member: chart version and
// status per revision, oldest first.
func history(t testing.TB, c *memory.Cluster) []string {
	t.Helper()
	revs, err := fleettest.Revisions(context.Background(), c, "apps", "podinfo")
	require.NoError(t, err)
	return revs
}

func podinfoDeployment(t testing.TB, c *memory.Cluster) *unstructured.Unstructured {
	t.Helper()
	dep, err := fleettest.Object(context.Background(), c, "apps/v1", "Deployment", "apps", "podinfo")
	require.NoError(t, err)
	return dep
}

func replicas(t testing.TB, c *memory.Cluster) int64 {
	t.Helper()
	n, _, err := unstructured.NestedInt64(podinfoDeployment(t, c).Object, "spec", "replicas")
	require.NoError(t, err)
	return n
}

// plaintextRemove is a plaintext overrider that removes path.
func plaintextRemove(path string) policy.PlaintextOverrider {
	return policy.PlaintextOverrider{Path: path, Operator: policy.OverriderOpRemove}
}
