package unittest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// bake is short: the in-memory members are ready at once, or never.
const bake = 5 * time.Millisecond

// testFleet is the team's fleet in memory: one dev cluster, a prod
// canary and one more prod cluster.
type testFleet struct {
	fleet   *fleet.Fleet
	members map[string]*memory.Cluster
}

// newTestFleet builds the fleet; health scripts readiness per member (nil:
// everything is ready at once).
func newTestFleet(t testing.TB, health map[string]memory.HealthFunc) *testFleet {
	t.Helper()
	tf := &testFleet{members: map[string]*memory.Cluster{}}
	var members []release.Member
	for _, m := range []struct {
		name   string
		labels map[string]string
	}{
		{"dev-1", map[string]string{"env": "dev"}},
		{"prod-eu-1", map[string]string{"env": "prod", "canary": "true"}},
		{"prod-us-1", map[string]string{"env": "prod"}},
	} {
		var opts []memory.Option
		if h := health[m.name]; h != nil {
			opts = append(opts, memory.WithHealth(h))
		}
		c := memory.New(m.name, opts...)
		tf.members[m.name] = c
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Labels: m.labels}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
	require.NoError(t, err)
	tf.fleet = f
	return tf
}

// charts serves the embedded test chart at the version a release asks
// for; a team's tests would serve their own charts the same way.
func charts() reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
		return &reconcile.Chart{Chart: ch}, err
	})
}

// platform decodes testdata/platform.yaml with podinfo at version.
func platform(t testing.TB, version string) fleet.Inputs {
	t.Helper()
	f, err := os.Open("testdata/platform.yaml")
	require.NoError(t, err)
	defer f.Close()
	objs, err := release.Load(f)
	require.NoError(t, err)
	in := fleet.InputsOf(objs)
	for _, r := range in.Releases {
		r.Spec.Chart.Spec.Version = version
	}
	return in
}

// history is `helm history podinfo -n apps` on a member: chart version and
// status per revision, oldest first.
func history(t testing.TB, c *memory.Cluster) []string {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	hs, err := action.NewHistory(cfg).Run("podinfo")
	if err != nil {
		return nil // no release: Helm says "release: not found"
	}
	var out []string
	for _, h := range hs {
		out = append(out, h.Chart.Metadata.Version+" "+h.Info.Status.String())
	}
	return out
}

var deploymentGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}

func podinfoDeployment(t testing.TB, c *memory.Cluster) *unstructured.Unstructured {
	t.Helper()
	dep, err := c.Get(context.Background(), release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	return dep
}

func replicas(t testing.TB, c *memory.Cluster) int64 {
	t.Helper()
	n, _, err := unstructured.NestedInt64(podinfoDeployment(t, c).Object, "spec", "replicas")
	require.NoError(t, err)
	return n
}

// ready is the status of the Ready condition of podinfo on a member, as the
// fleet last recorded it; "" when the fleet never ran it there.
func ready(tf *testFleet, cluster string) string {
	st, ok := tf.fleet.Status(fleet.Key{Cluster: cluster, Namespace: "apps", Name: "podinfo"})
	if !ok {
		return ""
	}
	c := st.GetCondition(release.ConditionReady)
	if c == nil {
		return ""
	}
	return string(c.Status)
}

// brokenVersion keeps the Deployment of one chart version from ever
// becoming ready: a crash-looping image.
func brokenVersion(version string) memory.HealthFunc {
	return func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" && u.GetLabels()["helm.sh/chart"] == "podinfo-"+version {
			return memory.Health{Message: "crash loop back-off"}
		}
		return memory.Health{Ready: true}
	}
}

func unstructuredSet(u *unstructured.Unstructured, v any, fields ...string) error {
	return unstructured.SetNestedField(u.Object, v, fields...)
}

// plaintextRemove is a plaintext overrider that removes path.
func plaintextRemove(path string) policy.PlaintextOverrider {
	return policy.PlaintextOverrider{Path: path, Operator: policy.OverriderOpRemove}
}
