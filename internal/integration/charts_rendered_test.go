package integration

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// The rendered-manifest tests run the same charts through a
// release/distribute Distributor: Helm renders each chart once on the hub,
// which keeps the release record, and the Distributor spreads the objects
// over member1 and member2 with one PropagationPolicy that names only the
// chart's workloads. As in charts_test.go the control planes run no
// kubelet and no controller-manager, so the releases disable Helm's wait
// (realRelease) and completeJobs stands in for the Job controller on the
// members, where the hooks run.
//
// The file's name sorts before integration_test.go on purpose: Go runs
// tests in file order, and TestMemberGoesAway there stops member2.

// renderedChart is one chart of the rendered-manifest test: the
// per-cluster test's chart and change (realCharts), its release
// namespace, the values it installs with, and the policy placing its
// workloads.
type renderedChart struct {
	realChart
	ns     string
	values map[string]any
	policy string
	// workload is the Deployment whose replicas are checked, or the
	// DaemonSet (daemonSet; it has no replicas) the policy places;
	// divided says whether the policy divides the replicas over the
	// members (else each member runs them all).
	workload  string
	daemonSet bool
	divided   bool
	// shares are the workload's replicas on member1 and member2 at
	// revision 1 (install) and 2 (upgrade).
	shares map[int][2]int64
}

// renderedPolicy is a PropagationPolicy of namespace ns that selects the
// workload of kind (apps/v1) and name workload, with propagateDeps, and
// places it on member1 and member2 (by their env label) with
// replicaScheduling.
func renderedPolicy(ns, kind, workload, replicaScheduling string) string {
	return fmt.Sprintf(`apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %s, namespace: %s}
spec:
  propagateDeps: true
  resourceSelectors:
    - {apiVersion: apps/v1, kind: %s, name: %s}
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {env: rendered}}
%s`, workload, ns, kind, workload, replicaScheduling)
}

// renderedCharts are the charts, each in a namespace of its own ("rd-…";
// the per-cluster tests use "rc-…"). podinfo's replicas are divided 1:2
// over member1 and member2: 2 at install (1 and 1), 3 after the upgrade
// (1 and 2); the others are duplicated (prometheus-node-exporter's
// DaemonSet has no replicas).
func renderedCharts(t *testing.T) []renderedChart {
	out := make([]renderedChart, 0, len(realCharts))
	for _, rc := range realCharts {
		c := renderedChart{realChart: rc, values: testcharts.DefaultValues(rc.name)}
		switch rc.name {
		case testcharts.Podinfo:
			c.ns, c.workload, c.divided = "rd-podinfo", "podinfo", true
			// Webster over weights 1:2: 2 replicas give 1 and 1, 3 give 1 and 2.
			c.shares = map[int][2]int64{1: {1, 1}, 2: {1, 2}}
			c.values["replicaCount"] = 2
			c.policy = renderedPolicy(c.ns, "Deployment", c.workload, `    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
          - {targetCluster: {clusterNames: [member1]}, weight: 1}
          - {targetCluster: {clusterNames: [member2]}, weight: 2}
`)
		case testcharts.NodeExporter:
			c.ns, c.workload, c.daemonSet = "rd-node-exporter", "prometheus-node-exporter", true
			c.policy = renderedPolicy(c.ns, "DaemonSet", c.workload, "")
		case testcharts.KubeStateMetrics:
			c.ns, c.workload = "rd-ksm", "kube-state-metrics"
			c.shares = map[int][2]int64{1: {1, 1}, 2: {1, 1}}
			c.policy = renderedPolicy(c.ns, "Deployment", c.workload, "")
		case testcharts.IngressNginx:
			c.ns, c.workload = "rd-ingress-nginx", "ingress-nginx-controller"
			c.shares = map[int][2]int64{1: {1, 1}, 2: {2, 2}}
			c.policy = renderedPolicy(c.ns, "Deployment", c.workload, "")
		case testcharts.KubePrometheusStack:
			c.ns, c.workload = "rd-kps", "kube-prometheus-stack-operator"
			c.shares = map[int][2]int64{1: {1, 1}, 2: {1, 1}}
			c.policy = renderedPolicy(c.ns, "Deployment", c.workload, "")
		default:
			t.Fatalf("no rendered-mode case for chart %s", rc.name)
		}
		out = append(out, c)
	}
	return out
}

// renderedRow is what one chart's lifecycle did on one member.
type renderedRow struct {
	engine, member, chart             string
	installed, hooksPlaced, hooksLeft int
	upgraded                          int
	replicas                          string
	left                              string
}

// TestRealChartsRendered installs, upgrades and uninstalls each vendored
// chart in rendered-manifest mode with Helm v3 and Helm v4 (engines,
// less the native kube client, which the hub cannot divert), the release
// on the hub and its objects on member1 and member2, and holds each member against the Distributor's
// placements and the members together against Helm's own rendering.
func TestRealChartsRendered(t *testing.T) {
	start := time.Now()
	memberNames := []string{"member1", "member2"}
	completeJobs(t, memberNames...)
	var rows []renderedRow
	var rendered []string
	for _, e := range engines() {
		if e.short == "v4n" {
			// Helm v4's native kube client writes straight to the hub's
			// API server, past the Distributor's client that diverts the
			// hub's writes to the members: not a rendered-mode engine.
			continue
		}
		rec, err := reconcile.New(reconcile.Config{Charts: realChartGetter(nil), PollInterval: 100 * time.Millisecond, Engine: e.engine})
		require.NoError(t, err)
		for _, rc := range renderedCharts(t) {
			t.Run(e.name+"/"+string(rc.name), func(t *testing.T) {
				skipLargeChartUnderRace(t, rc.name)
				r, n := renderedLifecycle(t, rc, rec, memberNames)
				for i := range r {
					r[i].engine = e.name
				}
				rows = append(rows, r...)
				rendered = append(rendered, e.name+" "+n)
			})
		}
	}
	lines := []string{fmt.Sprintf("%-13s  %-8s  %-24s  %9s  %9s  %10s  %8s  %-10s  %s", "ENGINE", "MEMBER", "CHART", "INSTALLED", "HOOKS", "HOOKS LEFT", "UPGRADED", "REPLICAS", "LEFT AFTER UNINSTALL")}
	for _, r := range rows {
		lines = append(lines, fmt.Sprintf("%-13s  %-8s  %-24s  %9d  %9d  %10d  %8d  %-10s  %s", r.engine, r.member, r.chart, r.installed, r.hooksPlaced, r.hooksLeft, r.upgraded, r.replicas, r.left))
	}
	t.Logf("rendered mode: the objects of each release per member (by inventory labels, hooks aside; hooks: the hook objects of the install revision Placements puts there, test hooks included though tests are off; replicas of the workload at install → upgrade); Helm rendered %s; %v in all:\n%s",
		strings.Join(rendered, "; "), time.Since(start).Round(time.Millisecond), strings.Join(lines, "\n"))
}

// renderedLifecycle installs, upgrades and uninstalls one chart with a
// Distributor over members, checking each step on the hub and on every
// member. It returns a row per member and what Helm rendered.
func renderedLifecycle(t *testing.T, rc renderedChart, rec *reconcile.Reconciler, memberNames []string) ([]renderedRow, string) {
	hub := admin(t, "hub")
	var members []release.Member
	for _, m := range memberNames {
		members = append(members, release.Member{Cluster: admin(t, m), Facts: policy.Cluster{Labels: map[string]string{"env": "rendered"}}})
	}
	var warnings []distribute.Warning
	var mu sync.Mutex
	d, err := distribute.New(distribute.Config{
		Hub: hub, Members: members, Policies: fixture.PolicySet(t, rc.policy), PollInterval: 100 * time.Millisecond,
		OnWarning: func(w distribute.Warning) { mu.Lock(); warnings = append(warnings, w); mu.Unlock() },
	})
	require.NoError(t, err)
	ch, err := testcharts.Load(rc.name)
	require.NoError(t, err)
	name := ch.Metadata.Name
	rows := map[string]*renderedRow{}
	for _, m := range memberNames {
		rows[m] = &renderedRow{member: m, chart: name}
	}
	rel := realRelease(rc.name, rc.ns, rc.values)
	// The hub lacks the namespace of the release records too: the
	// Distributor makes it there, and on the members where objects go.
	rel.Spec.Install.CreateNamespace = true
	reconcileOnce := func(what string, want reconcile.Action) *reconcile.Result {
		t.Helper()
		start := time.Now()
		// A longer bound than ctx's minute: kube-prometheus-stack under
		// -race on two cores comes close to it.
		rctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		res, err := rec.Reconcile(rctx, d, rel)
		require.NoError(t, err, what)
		require.Equal(t, want, res.Last(), what)
		t.Logf("%s of %s over both members took %v", what, name, time.Since(start).Round(time.Millisecond))
		return res
	}

	// Install.
	res := reconcileOnce("install", reconcile.ActionInstall)
	assert.Equal(t, 1, res.Helm.Version)
	oracle := renderedRevision(t, d, hub, ch, rc, rel, 1, rows)
	mu.Lock()
	for _, w := range warnings {
		assert.NotEqual(t, policy.WarnNotPlaced, w.Code, "%s", w)
	}
	mu.Unlock()
	hookKinds := serverKinds(t, controlPlane(t, "member1").Admin)
	hooksDeleted, hooksLeft := installHooks(t, oracle, rc.ns, hookKinds)
	for _, m := range memberNames {
		hooks := inventoryObjects(t, controlPlane(t, m).Admin, serverKinds(t, controlPlane(t, m).Admin), name, rc.ns, true)
		assert.Equal(t, hooksLeft, hooks, "%s: the hooks left are those without a delete policy that removes them", m)
		rows[m].hooksLeft = len(hooks)
	}
	if rc.name == testcharts.KubePrometheusStack {
		kpsInstalled(t, ch, members, rc.ns)
	}

	// Upgrade with the per-cluster test's change.
	rel.Generation++
	upVals := testcharts.DefaultValues(rc.name)
	for k, v := range rc.values {
		upVals[k] = v
	}
	rc.change(upVals)
	rel.Spec.Values = upVals
	res = reconcileOnce("upgrade", reconcile.ActionUpgrade)
	assert.Equal(t, 2, res.Helm.Version)
	renderedRevision(t, d, hub, ch, rc, rel, 2, rows)
	if !rc.divided {
		for _, m := range members {
			list, err := m.Cluster.List(ctx(t), rc.kind, rc.ns, nil)
			require.NoError(t, err)
			var changed []string
			for _, o := range list {
				if v, ok, _ := unstructured.NestedFieldNoCopy(o.Object, rc.field...); ok && v == rc.want {
					changed = append(changed, o.GetName())
				}
			}
			assert.Len(t, changed, 1, "%s: one %s has %s = %v", m.Cluster.Name(), rc.kind.Kind, strings.Join(rc.field, "."), rc.want)
		}
	}

	// Uninstall: nothing with the release's inventory labels is left on
	// any member; the CRDs of crds/ and the namespaces stay, as Helm
	// leaves them (the Distributor created the namespaces for the
	// objects, and never deletes one: other releases may live there).
	_, err = rec.Uninstall(ctx(t), d, rel)
	require.NoError(t, err)
	crds := crdsOf(t, ch)
	nsKey := objectKey(schema.GroupKind{Kind: "Namespace"}, "", rc.ns)
	for _, m := range memberNames {
		cp := controlPlane(t, m)
		kinds := serverKinds(t, cp.Admin)
		assert.Empty(t, inventoryObjects(t, cp.Admin, kinds, name, rc.ns, false), "%s: nothing of the release remains", m)
		assert.Empty(t, inventoryObjects(t, cp.Admin, kinds, name, rc.ns, true), "%s: no hook of the release remains", m)
		assert.Equal(t, crds, remaining(t, cp.Admin, kinds, crds), "%s: the CRDs of crds/ stay", m)
		assert.Equal(t, []string{nsKey}, remaining(t, cp.Admin, kinds, []string{nsKey}), "%s: the namespace stays", m)
		rows[m].left = "the namespace"
		if len(crds) > 0 {
			rows[m].left += fmt.Sprintf(", %d CRDs of crds/", len(crds))
		}
	}
	cfg, err := d.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: rc.ns, Namespace: rc.ns})
	require.NoError(t, err)
	listed, err := action.NewList(cfg).Run()
	require.NoError(t, err)
	assert.Empty(t, listed, "hub: helm ls")

	var out []renderedRow
	for _, m := range memberNames {
		out = append(out, *rows[m])
	}
	return out, fmt.Sprintf("%s %d objects, %d install hook objects, %d CRDs", name, len(manifestKeys(t, oracle.Manifest, rc.ns, hookKinds)), len(hooksDeleted)+len(hooksLeft), len(crds))
}

// renderedRevision checks revision rev of rel after an install or upgrade
// through d: the hub holds Helm's record (deployed) and none of the
// chart's objects; each member holds, by the release's inventory labels,
// exactly what d.Placements puts there; the members together hold every
// object of Helm's own rendering for d's capabilities, and nothing else;
// the workload's replicas are those of Placements and sum to the total.
// It fills rows and returns Helm's rendering.
func renderedRevision(t *testing.T, d *distribute.Distributor, hub release.Cluster, ch *chart.Chart, rc renderedChart, rel *release.Release, rev int, rows map[string]*renderedRow) *helmrelease.Release {
	t.Helper()
	name, ns := ch.Metadata.Name, rc.ns
	stored := helmRelease(t, hub, ns, name)
	assert.Equal(t, rev, stored.Version, "hub: Helm's record")
	assert.Equal(t, helmrelease.StatusDeployed, stored.Info.Status, "hub: Helm's record")
	hubCP := controlPlane(t, "hub")
	hubKinds := serverKinds(t, hubCP.Admin)
	assert.Empty(t, releaseObjects(t, hubCP.Admin, hubKinds, name, ns), "hub: none of the chart's objects")
	assert.Empty(t, inventoryObjects(t, hubCP.Admin, hubKinds, name, ns, false), "hub: none of the chart's objects")
	assert.Empty(t, remaining(t, hubCP.Admin, hubKinds, crdsOf(t, ch)), "hub: none of the chart's CRDs")

	oracle := distributorOracle(t, d, ch, name, ns, rel.Spec.Values)
	kinds := serverKinds(t, controlPlane(t, "member1").Admin)
	want := manifestKeys(t, oracle.Manifest, ns, kinds)
	assert.Equal(t, want, manifestKeys(t, stored.Manifest, ns, kinds), "hub: Helm's record holds what Helm renders")

	pl, err := d.Placements(ctx(t), rel)
	require.NoError(t, err)
	assert.Equal(t, rev, pl.Revision)
	placed := map[string][]string{}
	replicas := map[string]int64{}
	hooks := map[string]int{}
	for _, op := range pl.Objects {
		require.NoError(t, op.Err, "Placements: %s", op.Object)
		if op.Source == distribute.SourceHook {
			assert.Equal(t, pl.Members, op.MemberNames(), "Placements: hook %s runs where the workloads go, with what it uses", op.Object)
			for _, m := range op.MemberNames() {
				hooks[m]++
			}
		}
		if op.Source != distribute.SourceManifest {
			continue
		}
		key := objectKey(op.Object.GroupKind(), op.Object.Namespace, op.Object.Name)
		for _, mp := range op.Members {
			placed[mp.Member] = append(placed[mp.Member], key)
			if op.Object.Kind == "Deployment" && op.Object.Name == rc.workload && mp.Replicas != nil {
				replicas[mp.Member] = *mp.Replicas
			}
		}
	}
	union := map[string]bool{}
	var sum int64
	for _, m := range pl.Members {
		cp := controlPlane(t, m)
		got := inventoryObjects(t, cp.Admin, serverKinds(t, cp.Admin), name, ns, false)
		sort.Strings(placed[m])
		assert.Equal(t, placed[m], got, "%s: the release's objects there are those Placements puts there", m)
		for _, k := range got {
			union[k] = true
		}
		dep, err := dynamic.NewForConfig(unthrottled(cp.Admin))
		require.NoError(t, err)
		resource := "deployments"
		if rc.daemonSet {
			resource = "daemonsets"
		}
		live, err := dep.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: resource}).Namespace(ns).Get(ctx(t), rc.workload, metav1.GetOptions{})
		require.NoError(t, err, "%s: the workload", m)
		row := rows[m]
		if rc.daemonSet {
			if rev == 1 {
				row.installed, row.hooksPlaced, row.replicas = len(got), hooks[m], "-"
			} else {
				row.upgraded = len(got)
			}
			continue
		}
		n, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
		assert.Equal(t, replicas[m], n, "%s: the workload's replicas are those of Placements", m)
		sum += n
		if rev == 1 {
			row.installed, row.hooksPlaced, row.replicas = len(got), hooks[m], fmt.Sprint(n)
		} else {
			row.upgraded, row.replicas = len(got), row.replicas+" → "+fmt.Sprint(n)
		}
	}
	assert.Equal(t, []string{"member1", "member2"}, pl.Members)
	assert.Equal(t, want, slices.Sorted(func(yield func(string) bool) {
		for k := range union {
			if !yield(k) {
				return
			}
		}
	}), "the members together hold every object Helm rendered, and nothing else")
	if rc.daemonSet {
		assert.Empty(t, replicas, "a DaemonSet's placements divide no replicas")
		return oracle
	}
	// JSON numbers decode as float64.
	rendered, _, _ := unstructured.NestedFieldNoCopy(findObject(t, oracle.Manifest, "Deployment", rc.workload), "spec", "replicas")
	total := int64(rendered.(float64))
	if !rc.divided {
		total *= int64(len(pl.Members))
	}
	assert.Equal(t, total, sum, "the members' replicas of %s sum to the total", rc.workload)
	assert.Equal(t, map[string]int64{"member1": rc.shares[rev][0], "member2": rc.shares[rev][1]}, replicas, "the workload's replicas per member")
	return oracle
}

// distributorOracle is Helm's own rendering of chart c for the
// Distributor: a client-only dry-run install with the capabilities its
// render-once uses, to which every member contributed.
func distributorOracle(t *testing.T, d *distribute.Distributor, c *chart.Chart, name, ns string, vals map[string]any) *helmrelease.Release {
	t.Helper()
	caps, report, err := d.CapabilitiesOf(ctx(t))
	require.NoError(t, err)
	require.NotNil(t, caps)
	assert.False(t, report.FromHub)
	for _, m := range report.Members {
		assert.Empty(t, m.Ignored, "%s's capabilities count", m.Member)
	}
	i := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	i.DryRun, i.ClientOnly, i.ReleaseName, i.Namespace = true, true, name, ns
	i.KubeVersion = &caps.KubeVersion
	i.APIVersions = caps.APIVersions
	rel, err := i.Run(c, vals)
	require.NoError(t, err)
	return rel
}

// findObject returns the object of a manifest with the given kind and
// name.
func findObject(t *testing.T, manifest, kind, name string) map[string]any {
	t.Helper()
	for _, doc := range releaseutil.SplitManifests(manifest) {
		o := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &o.Object))
		if o.GetKind() == kind && o.GetName() == name {
			return o.Object
		}
	}
	require.Failf(t, "not rendered", "%s %s", kind, name)
	return nil
}

// inventoryObjects lists, over every kind the member serves, the copies
// the Distributor put there for release name of namespace ns (its
// inventory labels): its hook copies if hooks, else the others.
func inventoryObjects(t *testing.T, cfg *rest.Config, kinds map[schema.GroupKind]apiKind, name, ns string, hooks bool) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(unthrottled(cfg))
	require.NoError(t, err)
	selector := distribute.InventoryNameLabel + "=" + name + "," + distribute.InventoryNamespaceLabel + "=" + ns + ","
	if hooks {
		selector += distribute.InventoryHookLabel
	} else {
		selector += "!" + distribute.InventoryHookLabel
	}
	var (
		mu  sync.Mutex
		out []string
		g   errgroup.Group
	)
	g.SetLimit(16)
	for gk, k := range kinds {
		g.Go(func() error {
			list, err := dyn.Resource(k.gvr).List(ctx(t), metav1.ListOptions{LabelSelector: selector})
			if err != nil {
				return fmt.Errorf("list %s: %w", gk, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, o := range list.Items {
				out = append(out, objectKey(gk, o.GetNamespace(), o.GetName()))
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	sort.Strings(out)
	return out
}
