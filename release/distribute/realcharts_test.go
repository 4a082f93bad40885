package distribute_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// realKubeVersion is the Kubernetes version of the test fleets' hub and
// members.
// realKubeVersion is what members run: memory's default.
var realKubeVersion = memory.DefaultKubeVersion()

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
	opts := []memory.Option{memory.WithPollInterval(time.Millisecond), memory.WithSchemas(schemas)}
	f := &realFleet{hub: memory.New("hub", opts...), members: map[string]*memory.Cluster{}, names: []string{"m1", "m2", "m3"}}
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"m1", "prod"}, {"m2", "prod"}, {"m3", "dev"}} {
		c := memory.New(m.name, opts...)
		f.members[m.name] = c
		var rc release.Cluster = c
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

// opaque is a member that has only the roles of release.Cluster: it
// does not report its capabilities, as a caller's own backend may not.
type opaque struct{ release.Cluster }

func realReconciler(t testing.TB, extra ...*chart.Chart) *reconcile.Reconciler {
	t.Helper()
	r, err := reconcile.New(reconcile.Config{Charts: fixture.RealCharts(extra...), PollInterval: time.Millisecond})
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
		{
			chart: testcharts.NodeExporter, ns: "node-exporter", values: map[string]any{},
			policy:   workloadPolicy("prometheus-node-exporter", "node-exporter", "DaemonSet", "prometheus-node-exporter", prodOnly),
			workload: "apps/DaemonSet node-exporter/prometheus-node-exporter", members: []string{"m1", "m2"},
			upgrade: func(v map[string]any) { v["extraArgs"] = []any{"--collector.processes"} },
			upgraded: func(t *testing.T, objs []*unstructured.Unstructured) {
				assert.Contains(t, fmt.Sprint(find(objs, "apps/DaemonSet node-exporter/prometheus-node-exporter").Object), "--collector.processes")
			},
		},
		{
			chart: testcharts.KubeStateMetrics, ns: "ksm", values: map[string]any{},
			policy:   workloadPolicy("kube-state-metrics", "ksm", "Deployment", "kube-state-metrics", prodOnly),
			workload: "apps/Deployment ksm/kube-state-metrics", replicas: 1, duplicated: true, members: []string{"m1", "m2"},
			upgrade: func(v map[string]any) { v["extraArgs"] = []any{"--metric-labels-allowlist=pods=[app]"} },
			upgraded: func(t *testing.T, objs []*unstructured.Unstructured) {
				assert.Contains(t, fmt.Sprint(find(objs, "apps/Deployment ksm/kube-state-metrics").Object), "--metric-labels-allowlist=pods=[app]")
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
// Placements says the same. It returns a row of the object count table:
// the release's objects per member, then what Helm rendered (objects,
// hooks, CRDs).
func checkAgainstOracle(t *testing.T, f *realFleet, tc chartCase, rel *release.Release, crds []*unstructured.Unstructured) []string {
	t.Helper()
	ctx := context.Background()
	caps, err := f.dist.Capabilities(ctx)
	require.NoError(t, err)
	if caps == nil {
		cfg, err := f.hub.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace()})
		require.NoError(t, err)
		caps = cfg.Capabilities
	}
	want, hooks := oracle(t, rel, caps, crds)
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
	row := []string{string(tc.chart) + "/" + tc.ns}
	for _, name := range f.names {
		row = append(row, fmt.Sprint(counts[name]))
	}
	return append(row, fmt.Sprint(len(want)), fmt.Sprint(len(hooks)), fmt.Sprint(len(crds)))
}

func TestRealChartsOnePolicyForTheWorkloads(t *testing.T) {
	ctx := context.Background()
	table := [][]string{{"RELEASE", "m1", "m2", "m3", "RENDERED", "HOOKS", "CRDS"}}
	defer func() { t.Logf("objects of each release per member after install:\n%s", renderRows(table)) }()
	for _, tc := range chartCases() {
		t.Run(string(tc.chart)+"/"+tc.ns, func(t *testing.T) {
			f := newRealFleet(t, tc.policy, false, nil)
			crds := chartCRDs(t, tc.chart)
			rec := realReconciler(t)
			rel := realRelease(tc.chart, tc.ns, tc.values)
			res, err := rec.Reconcile(ctx, f.dist, rel)
			require.NoError(t, err)
			require.Equal(t, reconcile.ActionInstall, res.Last())
			table = append(table, checkAgainstOracle(t, f, tc, rel, crds))
			scope := release.HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: res.Helm.Namespace, HelmReleaseName: res.Helm.Name}
			report, err := f.dist.DetectDrift(ctx, scope, res.Helm.Manifest, nil, drift.ModeEnabled)
			require.NoError(t, err)
			assert.False(t, report.Drifted(), "drift detection places the objects as the install did:\n%s", report)
			for _, w := range f.warnings {
				assert.NotEqual(t, policy.WarnNotPlaced, w.Code, "%s", w)
			}

			rel.Generation++
			tc.upgrade(rel.Spec.Values)
			res, err = rec.Reconcile(ctx, f.dist, rel)
			require.NoError(t, err)
			require.Equal(t, reconcile.ActionUpgrade, res.Last())
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

// renderRows aligns rows in columns.
func renderRows(rows [][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t")+"\t")
	}
	_ = w.Flush()
	return b.String()
}

// With install.createNamespace the release's namespace is created on
// every member its objects go to, as Helm creates it (with its name
// label); Helm writes it before its release record, when the placement
// is not known yet. The hub gets it too, for its records.
func TestRealChartsCreateNamespace(t *testing.T) {
	ctx := context.Background()
	tc := chartCases()[0]
	tc.policy = strings.ReplaceAll(tc.policy, "namespace: apps", "namespace: web")
	f := newRealFleet(t, tc.policy, false, nil)
	rel := realRelease(testcharts.Podinfo, "web", tc.values)
	rel.Spec.Install = &release.Install{CreateNamespace: true}
	_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
	require.NoError(t, err)
	for _, name := range f.names {
		ns, err := f.members[name].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "web"})
		require.NoError(t, err, name)
		assert.Equal(t, "web", ns.GetLabels()["name"], "%s: the namespace as Helm creates it", name)
		assert.Len(t, releaseObjects(f.members[name], rel), 2, name)
	}
	hubObjs := f.hub.Objects()
	require.Len(t, hubObjs, 1, "the hub holds the release record and the namespace it is kept in, nothing of the release's objects")
	assert.Equal(t, "Namespace web", hubObjs[0].GetKind()+" "+hubObjs[0].GetName())
}

// widgetsCRD is a CRD of the widgets test chart's crds/; version says
// which copy a member holds.
func widgetsCRD(version string) string {
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  annotations: {example.com/copy: ` + version + `}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
}

// widgetsChart brings a CRD in crds/, a custom resource of it and a
// Deployment.
func widgetsChart() *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "widgets", Version: "1.0.0"},
		Files:    []*chart.File{{Name: "crds/widgets.yaml", Data: []byte(widgetsCRD("chart"))}},
		Templates: []*chart.File{{Name: "templates/all.yaml", Data: []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: widgets}
spec:
  replicas: 2
  selector: {matchLabels: {app: widgets}}
  template:
    metadata: {labels: {app: widgets}}
    spec: {containers: [{name: c, image: example.com/widgets:1}]}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: default}
spec: {size: 3}
{{- if .Capabilities.APIVersions.Has "example.com/v1/Widget" }}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: widgets-api}
data: {served: "true"}
{{- end }}
`)}},
	}
}

// The CRD policy of a release decides what happens to the chart's crds/
// on the members its objects reach: Create makes those that are missing
// and leaves a member's own copy alone, CreateReplace replaces it too,
// Skip leaves them to someone else (a member without the CRD then fails
// its part, by name). Members the release does not reach get none;
// uninstall leaves them, as Helm does.
func TestDistributorCRDPolicy(t *testing.T) {
	ctx := context.Background()
	crdRef := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, Name: "widgets.example.com"}
	copyOn := func(t *testing.T, m *memory.Cluster) string {
		crd, err := m.Get(ctx, crdRef)
		if err != nil {
			return "none"
		}
		return crd.GetAnnotations()["example.com/copy"]
	}
	tests := []struct {
		policy   release.CRDsPolicy
		m1, m2   string // which copy each member holds after the install
		failOnM2 bool
	}{
		{"", "member", "chart", false},
		{release.Create, "member", "chart", false},
		{release.CreateReplace, "chart", "chart", false},
		{release.Skip, "member", "none", true},
	}
	for _, tt := range tests {
		t.Run(cmp.Or(string(tt.policy), "default"), func(t *testing.T) {
			f := newRealFleet(t, workloadPolicy("widgets", "apps", "Deployment", "widgets", weighted), false, nil)
			own := decodeDocs(t, widgetsCRD("member"))[0]
			_, err := f.members["m1"].Apply(ctx, own, release.ApplyOptions{FieldManager: "kubectl"})
			require.NoError(t, err)
			rel := realRelease("widgets", "apps", nil)
			rel.Spec.Install = &release.Install{CRDs: tt.policy}
			rec := realReconciler(t, widgetsChart())
			_, err = rec.Reconcile(ctx, f.dist, rel)
			if tt.failOnM2 {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "member m2")
				assert.Contains(t, err.Error(), `no matches for kind "Widget"`)
				assert.NotContains(t, err.Error(), "member m1")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.m1, copyOn(t, f.members["m1"]), "m1")
			assert.Equal(t, tt.m2, copyOn(t, f.members["m2"]), "m2")
			assert.Equal(t, "none", copyOn(t, f.members["m3"]), "m3 runs nothing of the release")
			_, err = f.members["m1"].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, Namespace: "apps", Name: "default"})
			assert.NoError(t, err, "the custom resource is on m1")
			// The chart sees its own CRDs' API versions in .Capabilities
			// unless it skips them (no member reports capabilities here).
			_, err = f.members["m1"].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "widgets-api"})
			assert.Equal(t, tt.policy != release.Skip, err == nil, "widgets-api rendered: %v", err)
			if tt.failOnM2 {
				return
			}
			_, err = rec.Uninstall(ctx, f.dist, rel)
			require.NoError(t, err)
			assert.Equal(t, tt.m2, copyOn(t, f.members["m2"]), "uninstall leaves the CRDs of crds/")
			assert.Empty(t, releaseObjects(f.members["m2"], rel))
		})
	}
}

// Helm writes only CRDs and the release's namespace before its release
// record; anything else there is an error that names it.
func TestDistributorOnlyCRDsAndNamespaceBeforeTheRecord(t *testing.T) {
	ctx := context.Background()
	f := newRealFleet(t, "", false, nil)
	cfg, err := f.dist.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	rl, err := cfg.KubeClient.Build(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: early}\n"), false)
	require.NoError(t, err)
	_, err = cfg.KubeClient.Create(rl)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ConfigMap "early" was written before the release record`)
	for _, name := range f.names {
		assert.Empty(t, f.members[name].Objects(), name)
	}
}

// Strict turns an object that would go to no member into an error that
// names it, before anything is written; without it the object is a
// warning, given to OnWarning and shown by Placements.
func TestRealChartsStrict(t *testing.T) {
	ctx := context.Background()
	// The policy names a Deployment the chart does not have.
	typo := workloadPolicy("podinfo", "apps", "Deployment", "podinfo-web", weighted)
	t.Run("strict", func(t *testing.T) {
		f := newRealFleet(t, typo, true, nil)
		rel := realRelease(testcharts.Podinfo, "apps", nil)
		_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
		require.Error(t, err)
		var ue *distribute.UnplacedError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, "apps/podinfo", ue.Release)
		assert.Contains(t, err.Error(), "Deployment apps/podinfo goes to no cluster: no propagation policy selects it, it follows no placed object, and there is no default placement")
		assert.Contains(t, err.Error(), "Service apps/podinfo goes to no cluster")
		for _, name := range f.names {
			assert.Empty(t, f.members[name].Objects(), "nothing is written to %s", name)
		}
	})
	t.Run("warning", func(t *testing.T) {
		f := newRealFleet(t, typo, false, nil)
		rel := realRelease(testcharts.Podinfo, "apps", nil)
		_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
		require.NoError(t, err)
		var unplaced []string
		for _, w := range f.warnings {
			assert.Equal(t, "apps/podinfo", w.Release)
			if w.Code == policy.WarnNotPlaced {
				unplaced = append(unplaced, w.Object.String())
			}
		}
		assert.Equal(t, []string{"Deployment apps/podinfo", "Service apps/podinfo"}, unplaced)
		p, err := f.dist.Placements(ctx, rel)
		require.NoError(t, err)
		assert.Contains(t, p.Table(), "NOT PLACED")
		var codes []string
		for _, w := range p.Warnings {
			codes = append(codes, string(w.Code))
		}
		assert.Contains(t, codes, string(policy.WarnNotPlaced))
		x, err := p.Explain(release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apps", Kind: "Deployment"}, Namespace: "apps", Name: "podinfo"}, "m1")
		require.NoError(t, err)
		assert.False(t, x.Placed)
		assert.Contains(t, x.String(), "goes to no cluster")
	})
}

// Strict gives the caller its typed error for a chart with pre-install
// hooks too (Helm formats a hook's error with %s), and the error counts
// every object that would go to no member, hooks and manifest, as
// Placements does; nothing is written, the hub's record included.
func TestRealChartsStrictWithHooks(t *testing.T) {
	ctx := context.Background()
	typo := workloadPolicy("kube-prometheus-stack", "monitoring", "Deployment", "kube-prometheus-stack-operatr", prodOnly)
	rel := realRelease(testcharts.KubePrometheusStack, "monitoring", nil)

	// Without Strict the release is recorded (its hook runs nowhere, which
	// fails it), so Placements tells what goes nowhere.
	lax := newRealFleet(t, typo, false, nil)
	_, err := realReconciler(t).Reconcile(ctx, lax.dist, rel.DeepCopy())
	require.ErrorContains(t, err, "pre-install", "the chart has pre-install hooks")
	p, err := lax.dist.Placements(ctx, rel)
	require.NoError(t, err)
	var want []string
	for _, w := range p.Warnings {
		if w.Code == policy.WarnNotPlaced {
			want = append(want, w.Object.String())
		}
	}
	require.Greater(t, len(want), 1)
	t.Logf("%d objects go nowhere", len(want))

	f := newRealFleet(t, typo, true, nil)
	_, err = realReconciler(t).Reconcile(ctx, f.dist, rel.DeepCopy())
	var ue *distribute.UnplacedError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "monitoring/kube-prometheus-stack", ue.Release)
	var got []string
	for _, w := range ue.Warnings {
		got = append(got, w.Object.String())
	}
	assert.Equal(t, want, got, "every object that goes nowhere, as Placements lists them")
	assert.Contains(t, err.Error(), fmt.Sprintf("%d object(s) would go to no member (strict)", len(want)))
	assert.Contains(t, err.Error(), "Job monitoring/kube-prometheus-stack-admission-create goes to no cluster", "a hook")
	assert.Contains(t, err.Error(), "Deployment monitoring/kube-prometheus-stack-operator goes to no cluster", "an object of the manifest")
	var told []string
	for _, w := range f.warnings {
		if w.Code == policy.WarnNotPlaced {
			told = append(told, w.Object.String())
		}
	}
	assert.Equal(t, want, told, "OnWarning is told each, once")
	for _, name := range f.names {
		assert.Empty(t, f.members[name].Objects(), "nothing is written to %s", name)
	}
	_, err = f.hub.Storage("monitoring").Last("kube-prometheus-stack")
	assert.Error(t, err, "the hub stores no record")
}

// A hook that would run on no member fails the action even without
// Strict: the release must not pass a step it never took.
func TestRealChartsHookThatRunsNowhere(t *testing.T) {
	ctx := context.Background()
	f := newRealFleet(t, workloadPolicy("ingress-nginx", "ingress", "Deployment", "not-in-the-chart", weighted), false, nil)
	rel := realRelease(testcharts.IngressNginx, "ingress", nil)
	_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pre-install")
	assert.Contains(t, err.Error(), "a hook that runs nowhere: ServiceAccount ingress/ingress-nginx-admission goes to no cluster")
	for _, name := range f.names {
		assert.Empty(t, f.members[name].Objects(), name)
	}
}

// watching records, each time the Distributor reads a hook Job of a
// member (while Helm waits for it), which of the objects the Job needs the
// member holds at that moment.
type watching struct {
	opaque
	needs []release.ObjectRef
	mu    *sync.Mutex
	seen  map[string][]string // "member/Job" -> objects present
}

func (w watching) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	o, err := w.opaque.Get(ctx, ref)
	if err == nil && ref.Kind == "Job" {
		var present []string
		for _, n := range w.needs {
			if _, err := w.Cluster.Get(ctx, n); err == nil {
				present = append(present, n.Kind)
			}
		}
		w.mu.Lock()
		w.seen[w.Name()+"/"+ref.Name] = present
		w.mu.Unlock()
	}
	return o, err
}

// A hook runs with what it uses: its ServiceAccount and RBAC reach every
// member the hook Job runs on before it runs (the Job goes where the
// release's workloads go, or where a policy of its own puts it), and its
// delete policy (hook-succeeded) removes all of it from every member.
func TestRealChartsHooksRunWithWhatTheyUse(t *testing.T) {
	ctx := context.Background()
	ns := "ingress"
	rbac := func(kind, namespace string) release.ObjectRef {
		return release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: kind}, Namespace: namespace, Name: "ingress-nginx-admission"}
	}
	needs := []release.ObjectRef{
		{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, Namespace: ns, Name: "ingress-nginx-admission"},
		rbac("Role", ns), rbac("RoleBinding", ns), rbac("ClusterRole", ""), rbac("ClusterRoleBinding", ""),
	}
	all := []string{"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
	tests := []struct {
		name   string
		extra  string // policies beside the workload's
		expect map[string][]string
	}{
		{"where the workloads go", "", map[string][]string{
			"m1/ingress-nginx-admission-create": all, "m2/ingress-nginx-admission-create": all,
			"m1/ingress-nginx-admission-patch": all, "m2/ingress-nginx-admission-patch": all,
		}},
		{"where its own policy puts it", `
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: admission-create, namespace: ingress}
spec:
  resourceSelectors: [{apiVersion: batch/v1, kind: Job, name: ingress-nginx-admission-create}]
  placement: {clusterAffinity: {clusterNames: [m3]}}
`, map[string][]string{
			"m3/ingress-nginx-admission-create": all,
			"m1/ingress-nginx-admission-patch":  all, "m2/ingress-nginx-admission-patch": all,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string][]string{}
			f := newRealFleet(t, workloadPolicy("ingress-nginx", ns, "Deployment", "ingress-nginx-controller", weighted)+tt.extra, false,
				func(c *memory.Cluster) release.Cluster {
					return watching{opaque: opaque{c}, needs: needs, mu: &mu, seen: seen}
				})
			rel := realRelease(testcharts.IngressNginx, ns, map[string]any{"controller": map[string]any{"replicaCount": 3}})
			_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
			require.NoError(t, err)
			mu.Lock()
			assert.Equal(t, tt.expect, seen)
			mu.Unlock()
			for _, name := range f.names {
				for _, o := range f.members[name].Objects() {
					assert.Empty(t, o.GetLabels()[distribute.InventoryHookLabel], "%s: hook object %s left after hook-succeeded", name, refKey(o))
				}
			}
		})
	}
}

// reporting is a member that reports its capabilities.
type reporting struct {
	opaque
	caps *chartutil.Capabilities
	err  error
}

func (r reporting) Capabilities(context.Context) (*chartutil.Capabilities, error) {
	if r.err != nil {
		return nil, r.err
	}
	return r.caps.Copy(), nil
}

func capsOf(t testing.TB, version string, drop ...string) *chartutil.Capabilities {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(version)
	require.NoError(t, err)
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	caps.APIVersions = nil
	for _, v := range chartutil.DefaultVersionSet {
		if !slices.Contains(drop, v) {
			caps.APIVersions = append(caps.APIVersions, v)
		}
	}
	return caps
}

// A chart rendered once for all members must be valid on each: the
// Distributor renders for the lowest Kubernetes version among the members
// that report theirs and the API versions all of them serve, says which
// member set the version and why a member did not count, and a chart
// whose kubeVersion one member does not satisfy is refused.
func TestDistributorCapabilities(t *testing.T) {
	ctx := context.Background()
	fleet := func(t *testing.T, versions map[string]*chartutil.Capabilities, errs map[string]error, policies string) *realFleet {
		return newRealFleet(t, policies, false, func(c *memory.Cluster) release.Cluster {
			if caps, ok := versions[c.Name()]; ok || errs[c.Name()] != nil {
				return reporting{opaque: opaque{c}, caps: caps, err: errs[c.Name()]}
			}
			return opaque{c}
		})
	}
	policies := workloadPolicy("ingress-nginx", "ingress", "Deployment", "ingress-nginx-controller", weighted)

	t.Run("lowest version, common API versions", func(t *testing.T) {
		f := fleet(t, map[string]*chartutil.Capabilities{"m1": capsOf(t, "v1.36.0"), "m2": capsOf(t, "v1.32.3", "batch/v1beta1")}, nil, policies)
		caps, report, err := f.dist.CapabilitiesOf(ctx)
		require.NoError(t, err)
		assert.Equal(t, "v1.32.3", caps.KubeVersion.Version)
		assert.False(t, caps.APIVersions.Has("batch/v1beta1"), "m2 does not serve it")
		assert.True(t, caps.APIVersions.Has("apps/v1"))
		assert.Equal(t, []string{"m2"}, report.Lowest)
		assert.Equal(t, "it does not implement release.CapabilitiesReader", report.Members[2].Ignored)
		assert.Equal(t, distribute.MemberCapabilities{Member: "m1", KubeVersion: "v1.36.0", APIVersions: len(chartutil.DefaultVersionSet)}, report.Members[0])
		cfg, err := f.dist.HelmConfig(ctx, release.HelmScope{StorageNamespace: "ingress", Namespace: "ingress"})
		require.NoError(t, err)
		assert.Equal(t, "v1.32.3", cfg.Capabilities.KubeVersion.Version, "Helm's own actions render for it too")

		// ingress-nginx sets resizePolicy only for Kubernetes 1.33 and
		// later: m2 runs 1.32, so no member gets it.
		rel := realRelease(testcharts.IngressNginx, "ingress", map[string]any{"controller": map[string]any{"replicaCount": 3, "resizePolicy": []any{map[string]any{"resourceName": "cpu", "restartPolicy": "NotRequired"}}}})
		_, err = realReconciler(t).Reconcile(ctx, f.dist, rel)
		require.NoError(t, err)
		dep := find(releaseObjects(f.members["m1"], rel), "apps/Deployment ingress/ingress-nginx-controller")
		assert.NotContains(t, fmt.Sprint(dep.Object), "resizePolicy")
	})

	t.Run("every member new enough", func(t *testing.T) {
		f := fleet(t, map[string]*chartutil.Capabilities{"m1": capsOf(t, "v1.36.0"), "m2": capsOf(t, "v1.33.1")}, map[string]error{"m3": errors.New("connection refused")}, policies)
		_, report, err := f.dist.CapabilitiesOf(ctx)
		require.NoError(t, err)
		assert.Equal(t, "v1.33.1", report.KubeVersion)
		assert.Equal(t, "its capabilities could not be read: connection refused", report.Members[2].Ignored)
		rel := realRelease(testcharts.IngressNginx, "ingress", map[string]any{"controller": map[string]any{"replicaCount": 3, "resizePolicy": []any{map[string]any{"resourceName": "cpu", "restartPolicy": "NotRequired"}}}})
		_, err = realReconciler(t).Reconcile(ctx, f.dist, rel)
		require.NoError(t, err)
		dep := find(releaseObjects(f.members["m1"], rel), "apps/Deployment ingress/ingress-nginx-controller")
		assert.Contains(t, fmt.Sprint(dep.Object), "resizePolicy")
	})

	t.Run("no member reports: the hub's", func(t *testing.T) {
		f := newRealFleet(t, policies, false, func(c *memory.Cluster) release.Cluster { return opaque{c} })
		caps, report, err := f.dist.CapabilitiesOf(ctx)
		require.NoError(t, err)
		require.NotNil(t, caps, "the hub reports its own")
		assert.Equal(t, realKubeVersion, caps.KubeVersion.Version)
		assert.True(t, report.FromHub)
		cfg, err := f.dist.HelmConfig(ctx, release.HelmScope{StorageNamespace: "ingress", Namespace: "ingress"})
		require.NoError(t, err)
		assert.Equal(t, realKubeVersion, cfg.Capabilities.KubeVersion.Version)
	})

	t.Run("a member below the chart's kubeVersion", func(t *testing.T) {
		f := fleet(t, map[string]*chartutil.Capabilities{"m1": capsOf(t, "v1.36.0"), "m2": capsOf(t, "v1.24.0")}, nil,
			workloadPolicy("kube-prometheus-stack", "monitoring", "Deployment", "kube-prometheus-stack-operator", prodOnly))
		rel := realRelease(testcharts.KubePrometheusStack, "monitoring", nil)
		_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
		var kv *release.KubeVersionError
		require.ErrorAs(t, err, &kv)
		assert.Equal(t, "v1.24.0", kv.KubeVersion)
		assert.Equal(t, ">=1.25.0-0", kv.Constraint)
		for _, name := range f.names {
			assert.Empty(t, f.members[name].Objects(), name)
		}
	})
}

// "Why is this object on that member?" has one answer, down to the
// policy or the default, the same on every call.
func TestRealChartsExplain(t *testing.T) {
	ctx := context.Background()
	tc := chartCases()[1]
	f := newRealFleet(t, tc.policy, false, nil)
	rel := realRelease(tc.chart, tc.ns, tc.values)
	_, err := realReconciler(t).Reconcile(ctx, f.dist, rel)
	require.NoError(t, err)
	clusterRole := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"}, Name: "ingress-nginx"}
	var first string
	for range 2 {
		p, err := f.dist.Placements(ctx, rel)
		require.NoError(t, err)
		x, err := p.Explain(clusterRole, "m2")
		require.NoError(t, err)
		if first == "" {
			first = x.String()
			continue
		}
		assert.Equal(t, first, x.String())
	}
	assert.Equal(t, `rbac.authorization.k8s.io/v1 ClusterRole ingress-nginx is on member m2:
  - it follows ClusterRoleBinding ingress-nginx via roleRef, which is there because it follows ServiceAccount ingress/ingress-nginx via ClusterRoleBinding subjects, which is there because it follows Deployment ingress/ingress-nginx-controller via serviceAccountName, which is there because PropagationPolicy ingress/ingress-nginx places it there (only matching policy (matched by name))
`, first)

	p, err := f.dist.Placements(ctx, rel)
	require.NoError(t, err)
	x, err := p.Explain(release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Kind: "ConfigMap"}, Namespace: "ingress", Name: "ingress-nginx-controller"}, "m3")
	require.NoError(t, err)
	assert.False(t, x.Placed)
	assert.Equal(t, []string{"it follows only Deployment ingress/ingress-nginx-controller, which does not go there"}, x.Reasons)
	x, err = p.Explain(release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "batch", Kind: "Job"}, Namespace: "ingress", Name: "ingress-nginx-admission-create"}, "m1")
	require.NoError(t, err)
	assert.Equal(t, distribute.SourceHook, x.Source)
	assert.Equal(t, []string{"no propagation policy selects it and it follows no placed object, so it goes by default: it goes where the release's workloads go (Deployment ingress/ingress-nginx-controller)"}, x.Reasons)
	x, err = p.Explain(release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Kind: "Namespace"}, Name: "ingress"}, "m2")
	require.NoError(t, err)
	assert.True(t, x.Placed)
	_, err = p.Explain(clusterRole, "m9")
	assert.Error(t, err)
	t.Logf("placements of %s:\n%s", p.Release, p.Table())
}

// BenchmarkRealChartInstall installs each vendored chart, waits on, with
// one policy naming its workloads: helmfleet is the Distributor over the
// three members of newRealFleet (render once on the hub, place, apply to
// each member its objects); helm-one-cluster, the baseline, is the same
// Reconciler installing the chart on one in-memory cluster (what each
// member would cost with per-cluster releases).
func BenchmarkRealChartInstall(b *testing.B) {
	ctx := context.Background()
	for _, tc := range chartCases() {
		name := string(tc.chart) + "/" + tc.ns
		b.Run(name+"/helmfleet", func(b *testing.B) {
			rec := realReconciler(b)
			for b.Loop() {
				b.StopTimer()
				f := newRealFleet(b, tc.policy, false, nil)
				rel := realRelease(tc.chart, tc.ns, tc.values)
				b.StartTimer()
				if _, err := rec.Reconcile(ctx, f.dist, rel); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/helm-one-cluster", func(b *testing.B) {
			rec := realReconciler(b)
			for b.Loop() {
				b.StopTimer()
				c := memory.New("one", memory.WithPollInterval(time.Millisecond))
				rel := realRelease(tc.chart, tc.ns, tc.values)
				b.StartTimer()
				if _, err := rec.Reconcile(ctx, c, rel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
