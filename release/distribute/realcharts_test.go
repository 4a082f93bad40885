package distribute_test

import (
	"context"
	"fmt"
	"reflect"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/memory"
)

// realKubeVersion is the Kubernetes version of the test fleets' hub and
// members.
const realKubeVersion = "v1.36.0"

// realFleet is a hub and three members, m1 and m2 (env prod) and m3 (env
// dev), all of Kubernetes realKubeVersion, and a Distributor over them.
type realFleet struct {
	hub      *memory.Cluster
	members  map[string]*memory.Cluster
	names    []string
	dist     *distribute.Distributor
	warnings []distribute.Warning
}

// newRealFleet makes a realFleet with policies (YAML documents) and cfg's
// Strict. members, when given, replace the memory members (wrapped, for
// instance, to report capabilities).
func newRealFleet(t testing.TB, policies string, strict bool, wrap func(*memory.Cluster) release.Cluster) *realFleet {
	t.Helper()
	schemas := memory.NewSchemas()
	opts := []memory.Option{memory.WithKubeVersion(realKubeVersion), memory.WithPollInterval(time.Millisecond), memory.WithSchemas(schemas)}
	f := &realFleet{hub: memory.New("hub", opts...), members: map[string]*memory.Cluster{}, names: []string{"m1", "m2", "m3"}}
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"m1", "prod"}, {"m2", "prod"}, {"m3", "dev"}} {
		c := memory.New(m.name, opts...)
		f.members[m.name] = c
		var rc release.Cluster = allocating{c}
		if wrap != nil {
			rc = wrap(c)
		}
		members = append(members, release.Member{Cluster: rc, Facts: policy.Cluster{Labels: map[string]string{"env": m.env}}})
	}
	d, err := distribute.New(distribute.Config{
		Hub: f.hub, Members: members, Policies: fixture.PolicySet(t, policies), PollInterval: time.Millisecond,
		Strict: strict, OnWarning: func(w distribute.Warning) { f.warnings = append(f.warnings, w) },
	})
	require.NoError(t, err)
	f.dist = d
	return f
}

// allocating is a memory member that shows Services with the cluster IP
// an API server allocates (release/memory leaves spec.clusterIP empty,
// and kstatus holds a LoadBalancer Service without one InProgress).
type allocating struct{ *memory.Cluster }

func (a allocating) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	o, err := a.Cluster.Get(ctx, ref)
	if err == nil {
		allocate(o)
	}
	return o, err
}

func (a allocating) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	list, err := a.Cluster.List(ctx, gvk, namespace, selector)
	for _, o := range list {
		allocate(o)
	}
	return list, err
}

func allocate(o *unstructured.Unstructured) {
	if o.GetKind() != "Service" {
		return
	}
	if ip, _, _ := unstructured.NestedString(o.Object, "spec", "clusterIP"); ip == "" {
		_ = unstructured.SetNestedField(o.Object, "10.96.0.10", "spec", "clusterIP")
	}
}

// realCharts serves the vendored community charts by name.
func realCharts() release.ChartGetter {
	return release.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*release.Chart, error) {
		c, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
		return &release.Chart{Chart: c}, err
	})
}

func realReconciler(t testing.TB) *release.Reconciler {
	t.Helper()
	r, err := release.NewReconciler(release.ReconcilerConfig{Charts: realCharts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	return r
}

// realRelease is a Release of one vendored chart in namespace ns, with
// the chart's test values under values.
func realRelease(name testcharts.Name, ns string, values map[string]any) *release.Release {
	vals := testcharts.DefaultValues(name)
	for k, v := range values {
		vals[k] = v
	}
	return &release.Release{
		TypeMeta:   metav1.TypeMeta{APIVersion: release.APIVersion, Kind: release.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: string(name), Namespace: ns, Generation: 1},
		Spec: release.Spec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Timeout:  &metav1.Duration{Duration: 5 * time.Second},
			Chart: &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{
				Chart: string(name), Version: "*",
				SourceRef: release.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
			Values: vals,
		},
	}
}

// chartCRDs decodes the CRDs of a chart's crds/.
func chartCRDs(t testing.TB, name testcharts.Name) []*unstructured.Unstructured {
	t.Helper()
	c, err := testcharts.Load(name)
	require.NoError(t, err)
	var out []*unstructured.Unstructured
	for _, crd := range c.CRDObjects() {
		out = append(out, decodeDocs(t, string(crd.File.Data))...)
	}
	return out
}

// oracle renders rel's chart with Helm itself (a client-only dry run)
// for capabilities caps and returns its manifest's objects, with the
// namespace each lands in (custom resources by the scope of crds), and
// its hooks.
func oracle(t testing.TB, rel *release.Release, caps *chartutil.Capabilities, crds []*unstructured.Unstructured) (objs, hooks []*unstructured.Unstructured) {
	t.Helper()
	c, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
	require.NoError(t, err)
	i := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	i.DryRun, i.ClientOnly, i.ReleaseName, i.Namespace = true, true, rel.GetReleaseName(), rel.GetTargetNamespace()
	i.KubeVersion = &caps.KubeVersion
	i.APIVersions = caps.APIVersions
	h, err := i.Run(c, rel.Spec.Values)
	require.NoError(t, err)
	crdScope := map[string]bool{} // group/Kind -> namespaced
	for _, o := range crds {
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		crdScope[group+"/"+kind] = scope != "Cluster"
	}
	place := func(list []*unstructured.Unstructured) []*unstructured.Unstructured {
		for _, o := range list {
			namespaced, isCR := crdScope[o.GroupVersionKind().Group+"/"+o.GetKind()]
			if !isCR {
				namespaced = !clusterScoped[o.GetKind()]
			}
			switch {
			case !namespaced:
				o.SetNamespace("")
			case o.GetNamespace() == "":
				o.SetNamespace(rel.GetTargetNamespace())
			}
		}
		return list
	}
	objs = place(decodeDocs(t, h.Manifest))
	for _, hk := range h.Hooks {
		hooks = append(hooks, place(decodeDocs(t, hk.Manifest))...)
	}
	return objs, hooks
}

// clusterScoped are the built-in kinds the charts render without a
// namespace.
var clusterScoped = map[string]bool{
	"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"IngressClass": true, "ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"PriorityClass": true, "StorageClass": true, "APIService": true, "PersistentVolume": true,
}

func decodeDocs(t testing.TB, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range releaseutil.SplitManifests(manifest) {
		o := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &o.Object))
		if len(o.Object) == 0 {
			continue
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return refKey(out[i]) < refKey(out[j]) })
	return out
}

// refKey names an object by group, kind, namespace and name.
func refKey(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s %s/%s", o.GroupVersionKind().Group, o.GetKind(), o.GetNamespace(), o.GetName())
}

// chartCase is one community chart spread by one propagation policy that
// names only its workloads.
type chartCase struct {
	chart  testcharts.Name
	ns     string
	values map[string]any
	// policy names the workloads only.
	policy string
	// workload is the workload whose members every object goes to, and
	// replicas its total (0 for a DaemonSet), each member's when
	// duplicated.
	workload   string
	replicas   int64
	duplicated bool
	// members that run the workload.
	members []string
	// upgrade changes a value, and upgraded checks the change on a
	// member's copies.
	upgrade  func(values map[string]any)
	upgraded func(t *testing.T, objs []*unstructured.Unstructured)
}

func workloadPolicy(name, ns, kind, workload, placement string) string {
	return fmt.Sprintf(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %s, namespace: %s}
spec:
  propagateDeps: true
  resourceSelectors:
    - {apiVersion: apps/v1, kind: %s, name: %s}
  placement:
%s`, name, ns, kind, workload, placement)
}

const weighted = `    clusterAffinity:
      labelSelector: {matchLabels: {env: prod}}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [m1]}, weight: 1}
          - {targetCluster: {clusterNames: [m2]}, weight: 2}
`

const weightedThree = `    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [m1]}, weight: 1}
          - {targetCluster: {clusterNames: [m2, m3]}, weight: 2}
`

const prodOnly = `    clusterAffinity:
      labelSelector: {matchLabels: {env: prod}}
`

func chartCases() []chartCase {
	return []chartCase{
		{
			chart: testcharts.Podinfo, ns: "apps", values: map[string]any{"replicaCount": 5},
			policy:   workloadPolicy("podinfo", "apps", "Deployment", "podinfo", weightedThree),
			workload: "apps/Deployment apps/podinfo", replicas: 5, members: []string{"m1", "m2", "m3"},
			upgrade: func(v map[string]any) { v["ui"] = map[string]any{"color": "#ff0000"} },
			upgraded: func(t *testing.T, objs []*unstructured.Unstructured) {
				assert.Contains(t, fmt.Sprint(find(objs, "apps/Deployment apps/podinfo").Object), "#ff0000")
			},
		},
		{
			chart: testcharts.IngressNginx, ns: "ingress", values: map[string]any{"controller": map[string]any{"replicaCount": 3}},
			policy:   workloadPolicy("ingress-nginx", "ingress", "Deployment", "ingress-nginx-controller", weighted),
			workload: "apps/Deployment ingress/ingress-nginx-controller", replicas: 3, members: []string{"m1", "m2"},
			upgrade: func(v map[string]any) {
				v["controller"] = map[string]any{"replicaCount": 3, "config": map[string]any{"use-gzip": "true"}}
			},
			upgraded: func(t *testing.T, objs []*unstructured.Unstructured) {
				data, _, _ := unstructured.NestedStringMap(find(objs, "/ConfigMap ingress/ingress-nginx-controller").Object, "data")
				assert.Equal(t, "true", data["use-gzip"])
			},
		},
		{
			chart: testcharts.IngressNginx, ns: "edge", values: map[string]any{"controller": map[string]any{"kind": "DaemonSet"}},
			policy:   workloadPolicy("ingress-nginx", "edge", "DaemonSet", "ingress-nginx-controller", prodOnly),
			workload: "apps/DaemonSet edge/ingress-nginx-controller", members: []string{"m1", "m2"},
			upgrade: func(v map[string]any) {
				v["controller"] = map[string]any{"kind": "DaemonSet", "config": map[string]any{"use-gzip": "true"}}
			},
			upgraded: func(t *testing.T, objs []*unstructured.Unstructured) {
				data, _, _ := unstructured.NestedStringMap(find(objs, "/ConfigMap edge/ingress-nginx-controller").Object, "data")
				assert.Equal(t, "true", data["use-gzip"])
			},
		},
		{
			chart: testcharts.KubePrometheusStack, ns: "monitoring",
			policy:   workloadPolicy("kube-prometheus-stack", "monitoring", "Deployment", "kube-prometheus-stack-operator", prodOnly),
			workload: "apps/Deployment monitoring/kube-prometheus-stack-operator", replicas: 1, duplicated: true, members: []string{"m1", "m2"},
			upgrade: func(v map[string]any) {
				v["prometheus"] = map[string]any{"prometheusSpec": map[string]any{"retention": "3d"}}
			},
			upgraded: func(t *testing.T, objs []*unstructured.Unstructured) {
				retention, _, _ := unstructured.NestedString(find(objs, "monitoring.coreos.com/Prometheus monitoring/kube-prometheus-stack-prometheus").Object, "spec", "retention")
				assert.Equal(t, "3d", retention)
			},
		},
	}
}

func find(objs []*unstructured.Unstructured, key string) *unstructured.Unstructured {
	for _, o := range objs {
		if refKey(o) == key {
			return o
		}
	}
	return &unstructured.Unstructured{Object: map[string]any{}}
}

// releaseObjects returns what a member holds of a release (its inventory
// labels), hooks aside, sorted.
func releaseObjects(m *memory.Cluster, rel *release.Release) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.Objects() {
		l := o.GetLabels()
		if l[distribute.InventoryNameLabel] == rel.GetReleaseName() && l[distribute.InventoryNamespaceLabel] == rel.GetTargetNamespace() && l[distribute.InventoryHookLabel] == "" {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return refKey(out[i]) < refKey(out[j]) })
	return out
}

// subset reports the first path where want (the oracle's object) is not
// found in got (a member's copy): every field Helm rendered must be there
// with the same value, but for the paths skip.
func subset(want, got any, path string, skip map[string]bool) string {
	if skip[path] {
		return ""
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path
		}
		for k, v := range w {
			if v == nil {
				continue // Helm renders null for "unset"; the API server drops it
			}
			if p := subset(v, g[k], path+"/"+k, skip); p != "" {
				return p
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path
		}
		for i := range w {
			if p := subset(w[i], g[i], fmt.Sprintf("%s/%d", path, i), skip); p != "" {
				return p
			}
		}
		return ""
	default:
		if fmt.Sprint(want) != fmt.Sprint(got) || reflect.TypeOf(want).Kind() == reflect.String && reflect.TypeOf(got) != reflect.TypeOf(want) {
			return path
		}
		return ""
	}
}

// checkAgainstOracle compares every member's copies of rel with Helm's own
// rendering: each rendered object is on exactly the members of tc (where
// the workload runs), equal but for the replicas the policy divided, the
// replicas sum to the total, nothing else of the release is there, and
// Placements says the same. It returns the object count per member.
func checkAgainstOracle(t *testing.T, f *realFleet, tc chartCase, rel *release.Release, crds []*unstructured.Unstructured) map[string]int {
	t.Helper()
	ctx := context.Background()
	caps, err := f.dist.Capabilities(ctx)
	require.NoError(t, err)
	if caps == nil {
		cfg, err := f.hub.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace()})
		require.NoError(t, err)
		caps = cfg.Capabilities
	}
	want, _ := oracle(t, rel, caps, crds)
	require.NotEmpty(t, want)
	pl, err := f.dist.Placements(ctx, rel)
	require.NoError(t, err)
	on := map[string]bool{}
	for _, m := range tc.members {
		on[m] = true
	}
	counts := map[string]int{}
	var total int64
	for _, name := range f.names {
		got := releaseObjects(f.members[name], rel)
		counts[name] = len(got)
		if !on[name] {
			assert.Empty(t, got, "%s runs no %s and gets nothing of the release", name, tc.workload)
			continue
		}
		gotKeys := make([]string, len(got))
		for i, o := range got {
			gotKeys[i] = refKey(o)
		}
		wantKeys := make([]string, len(want))
		for i, o := range want {
			wantKeys[i] = refKey(o)
		}
		require.Equal(t, wantKeys, gotKeys, "member %s holds every rendered object and nothing else", name)
		for i, w := range want {
			skip := map[string]bool{}
			if refKey(w) == tc.workload && tc.replicas > 0 {
				skip["/spec/replicas"] = true
				n, _, _ := unstructured.NestedInt64(got[i].Object, "spec", "replicas")
				total += n
			}
			assert.Empty(t, subset(w.Object, got[i].Object, "", skip), "member %s: %s differs from Helm's rendering at this path", name, refKey(w))
		}
		for _, crd := range crds {
			_, err := f.members[name].Get(ctx, release.RefOf(crd))
			assert.NoError(t, err, "member %s has the chart's CRD %s", name, crd.GetName())
		}
	}
	wantTotal := tc.replicas
	if tc.duplicated {
		wantTotal *= int64(len(tc.members))
	}
	assert.Equal(t, wantTotal, total, "the members' replicas of %s sum to the total", tc.workload)
	for _, op := range pl.Objects {
		if op.Source != distribute.SourceManifest {
			continue
		}
		assert.Equal(t, tc.members, op.MemberNames(), "Placements: %s", op.Object)
	}
	return counts
}

func TestRealChartsOnePolicyForTheWorkloads(t *testing.T) {
	ctx := context.Background()
	for _, tc := range chartCases() {
		t.Run(string(tc.chart)+"/"+tc.ns, func(t *testing.T) {
			f := newRealFleet(t, tc.policy, false, nil)
			crds := chartCRDs(t, tc.chart)
			rec := realReconciler(t)
			rel := realRelease(tc.chart, tc.ns, tc.values)
			res, err := rec.Reconcile(ctx, f.dist, rel)
			require.NoError(t, err)
			require.Equal(t, release.ActionInstall, res.Action)
			counts := checkAgainstOracle(t, f, tc, rel, crds)
			t.Logf("%s after install: %s", tc.chart, countTable(f.names, counts))
			for _, w := range f.warnings {
				assert.NotEqual(t, policy.WarnNotPlaced, w.Code, "%s", w)
			}

			rel.Generation++
			tc.upgrade(rel.Spec.Values)
			res, err = rec.Reconcile(ctx, f.dist, rel)
			require.NoError(t, err)
			require.Equal(t, release.ActionUpgrade, res.Action)
			assert.Equal(t, 2, res.Helm.Version, "revision 2 on the hub")
			checkAgainstOracle(t, f, tc, rel, crds)
			for _, m := range tc.members {
				tc.upgraded(t, releaseObjects(f.members[m], rel))
			}

			_, err = rec.Uninstall(ctx, f.dist, rel)
			require.NoError(t, err)
			for _, name := range f.names {
				for _, o := range f.members[name].Objects() {
					switch o.GetKind() {
					case "Namespace", "CustomResourceDefinition":
						// Helm leaves the namespaces and the CRDs of crds/.
						assert.Empty(t, o.GetLabels()[distribute.InventoryNameLabel], "%s on %s", refKey(o), name)
					default:
						assert.Fail(t, "left after uninstall", "%s on %s", refKey(o), name)
					}
				}
			}
		})
	}
}

// countTable renders object counts per member.
func countTable(names []string, counts map[string]int) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s=%d ", n, counts[n])
	}
	return strings.TrimSpace(b.String())
}

var _ = chart.Chart{}
