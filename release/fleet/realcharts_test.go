package fleet_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// realChartFleet is three in-memory members with default settings:
// m1 and m2 (prod), m3 (dev).
func realChartFleet(t testing.TB) (*fleet.Fleet, map[string]*memory.Cluster) {
	t.Helper()
	clusters := map[string]*memory.Cluster{}
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"m1", "prod"}, {"m2", "prod"}, {"m3", "dev"}} {
		c := memory.New(m.name, memory.WithPollInterval(time.Millisecond))
		clusters[m.name] = c
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env}}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.RealCharts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
	require.NoError(t, err)
	return f, clusters
}

// realChartInputs is one HelmRelease of chart n with values, placed on
// every member by one PropagationPolicy (extra is appended to the
// policy's metadata and spec.placement, for replica division).
func realChartInputs(t *testing.T, n testcharts.Name, values map[string]any, annotations, scheduling string) fleet.Inputs {
	t.Helper()
	c, err := testcharts.Load(n)
	require.NoError(t, err)
	vals, err := yaml.Marshal(values)
	require.NoError(t, err)
	doc := fmt.Sprintf(`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %[1]s, namespace: apps}
spec:
  interval: 10m
  # Waits are on (the default); a bound shorter than Helm's 5m keeps a
  # failing run short.
  timeout: 1m
  chart:
    spec:
      chart: %[1]s
      version: %[2]q
      sourceRef: {kind: HelmRepository, name: community}
  values:
%[3]s
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: %[1]s
  namespace: apps
  annotations: {%[4]s}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: %[1]s}
  placement:
    clusterAffinity: {clusterNames: [m1, m2, m3]}
%[5]s
`, n, c.Metadata.Version, indent(string(vals), "    "), annotations, scheduling)
	return decodeInputs(t, doc)
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// oracle renders chart n with Helm's own install (client-side dry run)
// for c's capabilities and returns "Kind namespace/name" of every object
// that is not a hook, sorted.
func oracle(t testing.TB, c *memory.Cluster, n testcharts.Name, values map[string]any) []string {
	t.Helper()
	ch, err := testcharts.Load(n)
	require.NoError(t, err)
	var caps *chartutil.Capabilities
	if cr, ok := any(c).(release.CapabilitiesReader); ok {
		caps, err = cr.Capabilities(context.Background())
		require.NoError(t, err)
	} else {
		cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps"})
		require.NoError(t, err)
		caps = cfg.Capabilities
	}
	crds, err := reconcile.CRDVersions(crdDocs(ch)...)
	require.NoError(t, err)
	i := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	i.DryRun, i.ClientOnly, i.ReleaseName, i.Namespace = true, true, string(n), "apps"
	i.KubeVersion = &caps.KubeVersion
	i.APIVersions = append(append([]string(nil), caps.APIVersions...), crds...)
	rel, err := i.Run(ch, values)
	require.NoError(t, err)
	var out []string
	for _, doc := range releaseutil.SplitManifests(rel.Manifest) {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		if u.Object == nil {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" && namespaced(u.GetKind()) {
			ns = "apps"
		}
		out = append(out, objectID(u.GetKind(), ns, u.GetName()))
	}
	sort.Strings(out)
	return out
}

// crdDocs returns the documents of a chart's crds/, its subcharts' too.
func crdDocs(ch *chart.Chart) [][]byte {
	var out [][]byte
	for _, crd := range ch.CRDObjects() {
		out = append(out, crd.File.Data)
	}
	return out
}

// clusterScoped are the cluster-scoped kinds of the charts.
var clusterScoped = map[string]bool{
	"ClusterRole": true, "ClusterRoleBinding": true, "IngressClass": true, "Namespace": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true, "CustomResourceDefinition": true,
}

func namespaced(kind string) bool { return !clusterScoped[kind] }

func objectID(kind, ns, name string) string {
	if ns == "" {
		return kind + " " + name
	}
	return kind + " " + ns + "/" + name
}

// releaseObjects returns "Kind namespace/name" of the objects on c that
// Helm's ownership annotations give to release name, sorted.
func releaseObjects(c *memory.Cluster, name string) []string {
	var out []string
	for _, o := range c.Objects() {
		if o.GetAnnotations()["meta.helm.sh/release-name"] == name {
			out = append(out, objectID(o.GetKind(), o.GetNamespace(), o.GetName()))
		}
	}
	sort.Strings(out)
	return out
}

// realChartCase is one chart of the matrix: its values, a value to change
// on upgrade and how to see the change on a member.
type realChartCase struct {
	name    testcharts.Name
	values  map[string]any
	upgrade func(map[string]any)
	changed func(t *testing.T, c *memory.Cluster)
}

func realChartCases() []realChartCase {
	return []realChartCase{{
		name:    testcharts.Podinfo,
		values:  map[string]any{"replicaCount": 6},
		upgrade: func(v map[string]any) { v["ui"] = map[string]any{"message": "revision two"} },
		changed: func(t *testing.T, c *memory.Cluster) {
			assert.Contains(t, containerEnv(t, c, "Deployment", "apps", "podinfo"), "PODINFO_UI_MESSAGE=revision two")
		},
	}, {
		name:    testcharts.NodeExporter,
		values:  map[string]any{},
		upgrade: func(v map[string]any) { v["extraArgs"] = []any{"--collector.processes"} },
		changed: func(t *testing.T, c *memory.Cluster) {
			assert.Contains(t, containerArgs(t, c, "DaemonSet", "apps", "prometheus-node-exporter"), "--collector.processes")
		},
	}, {
		name:    testcharts.KubeStateMetrics,
		values:  map[string]any{},
		upgrade: func(v map[string]any) { v["extraArgs"] = []any{"--metric-labels-allowlist=pods=[app]"} },
		changed: func(t *testing.T, c *memory.Cluster) {
			assert.Contains(t, containerArgs(t, c, "Deployment", "apps", "kube-state-metrics"), "--metric-labels-allowlist=pods=[app]")
		},
	}, {
		name:    testcharts.IngressNginx,
		values:  map[string]any{},
		upgrade: func(v map[string]any) { v["controller"] = map[string]any{"electionID": "fleet-leader"} },
		changed: func(t *testing.T, c *memory.Cluster) {
			assert.Contains(t, containerArgs(t, c, "Deployment", "apps", "ingress-nginx-controller"), "--election-id=fleet-leader")
		},
	}, {
		name:   testcharts.KubePrometheusStack,
		values: testcharts.DefaultValues(testcharts.KubePrometheusStack),
		upgrade: func(v map[string]any) {
			v["prometheus"] = map[string]any{"prometheusSpec": map[string]any{"retention": "3d"}}
		},
		changed: func(t *testing.T, c *memory.Cluster) {
			obj := getObject(t, c, "Prometheus", "apps", "kube-prometheus-stack-prometheus")
			got, _, _ := unstructured.NestedString(obj.Object, "spec", "retention")
			assert.Equal(t, "3d", got)
		},
	}}
}

// TestRealChartsPerClusterOnMemory is the per-cluster row of the matrix on
// release/memory: each community chart, with default member settings and
// waits on, is planned (no errors, the chart's objects as Helm renders
// them), installed on three members, upgraded with a changed value and
// garbage-collected, the objects on every member compared with Helm's own
// rendering at each step.
func TestRealChartsPerClusterOnMemory(t *testing.T) {
	var names []testcharts.Name
	for _, tc := range realChartCases() {
		names = append(names, tc.name)
	}
	require.Equal(t, testcharts.All, names, "a case for every vendored chart")
	for _, tc := range realChartCases() {
		t.Run(string(tc.name), func(t *testing.T) {
			ctx := context.Background()
			f, clusters := realChartFleet(t)
			in := realChartInputs(t, tc.name, tc.values, "", "")

			plan, err := f.Plan(ctx, in)
			require.NoError(t, err)
			require.Empty(t, plan.Errors, plan.Table())
			require.Len(t, plan.Items, 3)
			for _, it := range plan.Items {
				want := oracle(t, clusters[it.Cluster], tc.name, tc.values)
				var got []string
				for _, o := range it.Objects {
					got = append(got, objectID(o.GetKind(), o.GetNamespace(), o.GetName()))
				}
				sort.Strings(got)
				assert.Equal(t, want, got, "plan of %s on %s", tc.name, it.Cluster)
				assert.Equal(t, reconcile.CapabilitiesFromCluster, it.CapabilitiesFrom)
			}

			rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.NoError(t, err, rep.Table())
			counts := map[string]int{}
			for name, c := range clusters {
				want := oracle(t, c, tc.name, tc.values)
				assert.Equal(t, want, releaseObjects(c, string(tc.name)), "objects of %s on %s", tc.name, name)
				counts[name] = len(want)
			}
			t.Logf("%s per-cluster on memory: objects per member %v", tc.name, counts)
			if tc.name == testcharts.KubePrometheusStack {
				for name, c := range clusters {
					assert.Len(t, kindOf(c, "CustomResourceDefinition"), 10, "CRDs of crds/ on %s", name)
				}
			}

			// Upgrade with a changed value: revision 2 everywhere.
			vals := copyValues(tc.values)
			tc.upgrade(vals)
			in = realChartInputs(t, tc.name, vals, "", "")
			plan, err = f.Plan(ctx, in)
			require.NoError(t, err)
			require.Empty(t, plan.Errors, plan.Table())
			rep, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.NoError(t, err, rep.Table())
			for name, c := range clusters {
				assert.Equal(t, []string{string(tc.name) + " 2 deployed"}, helmRevisions(t, c), name)
				tc.changed(t, c)
				assert.Equal(t, oracle(t, c, tc.name, vals), releaseObjects(c, string(tc.name)), "after upgrade on %s", name)
			}

			// Removed from the inputs: garbage-collected everywhere.
			plan, err = f.Plan(ctx, fleet.Inputs{})
			require.NoError(t, err)
			rep, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.NoError(t, err, rep.Table())
			for name, c := range clusters {
				assert.Empty(t, releaseObjects(c, string(tc.name)), "nothing of the release is left on %s", name)
				assert.Empty(t, helmRevisions(t, c), name)
				if tc.name == testcharts.KubePrometheusStack {
					assert.Len(t, kindOf(c, "CustomResourceDefinition"), 10, "Helm leaves the CRDs of crds/ on %s", name)
				}
			}
		})
	}
}

// TestRealChartDividedPerCluster: a Divided policy on podinfo's
// HelmRelease that names replicaCount gives each member its share.
func TestRealChartDividedPerCluster(t *testing.T) {
	ctx := context.Background()
	f, clusters := realChartFleet(t)
	in := realChartInputs(t, testcharts.Podinfo, map[string]any{"replicaCount": 6},
		policy.ReplicasValuesPathAnnotation+": replicaCount", `
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [m1]}, weight: 1}
          - {targetCluster: {clusterNames: [m2]}, weight: 2}
          - {targetCluster: {clusterNames: [m3]}, weight: 3}`)
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Empty(t, plan.Warnings)
	for _, it := range plan.Items {
		assert.EqualValues(t, map[string]int{"m1": 1, "m2": 2, "m3": 3}[it.Cluster], it.Values.Values["replicaCount"], it.Cluster)
	}
	_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	for name, want := range map[string]int64{"m1": 1, "m2": 2, "m3": 3} {
		obj := getObject(t, clusters[name], "Deployment", "apps", "podinfo")
		got, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		assert.Equal(t, want, got, name)
	}

	// Without the annotation the plan says Divided does nothing here.
	in = realChartInputs(t, testcharts.Podinfo, map[string]any{"replicaCount": 6}, "", `
    replicaScheduling: {replicaSchedulingType: Divided}`)
	plan, err = f.Plan(ctx, in)
	require.NoError(t, err)
	require.Len(t, plan.Warnings, 1)
	assert.Equal(t, policy.WarnDividedWithoutReplicas, plan.Warnings[0].Code)
	assert.Contains(t, plan.Table(), "warning: policy PropagationPolicy apps/podinfo divides replicas")
}

// TestRealChartKubeVersionRefused: a member older than the chart's
// kubeVersion fails its item with an error naming chart, constraint and
// the member's version, in Plan.Errors too.
func TestRealChartKubeVersionRefused(t *testing.T) {
	old := memory.New("old", memory.WithKubeVersion("v1.20.0"))
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.RealCharts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: []release.Member{{Cluster: old}}, Reconciler: rec})
	require.NoError(t, err)
	in := realChartInputs(t, testcharts.Podinfo, map[string]any{}, "", "")
	in.Policies.Propagation[0].Spec.Placement.ClusterAffinity.ClusterNames = []string{"old"}
	plan, err := f.Plan(context.Background(), in)
	require.NoError(t, err)
	require.Len(t, plan.Errors, 1)
	var kv *release.KubeVersionError
	require.ErrorAs(t, plan.Errors[0], &kv)
	assert.Equal(t, &release.KubeVersionError{Chart: "podinfo", Version: "6.14.1", Constraint: ">=1.23.0-0", Cluster: "old", KubeVersion: "v1.20.0"}, kv)
	var item *fleet.ItemError
	require.ErrorAs(t, plan.Errors[0], &item)
	assert.Equal(t, "old", item.Key.Cluster)

	_, err = f.Apply(context.Background(), plan, fleet.ApplyOptions{})
	require.ErrorAs(t, err, &kv)
	assert.Empty(t, old.Objects(), "nothing is installed")
}

func copyValues(v map[string]any) map[string]any {
	data, _ := yaml.Marshal(v)
	out := map[string]any{}
	_ = yaml.Unmarshal(data, &out)
	return out
}

func helmRevisions(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	l := action.NewList(cfg)
	rels, err := l.Run()
	require.NoError(t, err)
	var out []string
	for _, r := range rels {
		out = append(out, fmt.Sprintf("%s %d %s", r.Name, r.Version, r.Info.Status))
	}
	return out
}

func kindOf(c *memory.Cluster, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range c.Objects() {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func getObject(t *testing.T, c *memory.Cluster, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range c.Objects() {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("%s has no %s %s/%s", c.Name(), kind, ns, name)
	return nil
}

func firstContainer(t *testing.T, c *memory.Cluster, kind, ns, name string) map[string]any {
	t.Helper()
	cs, _, _ := unstructured.NestedSlice(getObject(t, c, kind, ns, name).Object, "spec", "template", "spec", "containers")
	require.NotEmpty(t, cs)
	return cs[0].(map[string]any)
}

func containerArgs(t *testing.T, c *memory.Cluster, kind, ns, name string) []string {
	args, _, _ := unstructured.NestedStringSlice(firstContainer(t, c, kind, ns, name), "args")
	return args
}

func containerEnv(t *testing.T, c *memory.Cluster, kind, ns, name string) []string {
	env, _, _ := unstructured.NestedSlice(firstContainer(t, c, kind, ns, name), "env")
	var out []string
	for _, e := range env {
		m := e.(map[string]any)
		out = append(out, fmt.Sprint(m["name"], "=", m["value"]))
	}
	return out
}
