package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/kubeharness"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// The real-chart tests run the community charts of internal/testcharts
// (podinfo, prometheus-node-exporter, kube-state-metrics, ingress-nginx and
// kube-prometheus-stack with its subcharts) through the fleet on member1 and member2, as their
// authors wrote them, and hold what lands on each member against Helm's own
// rendering for that member.
//
// The control planes run a kube-apiserver and nothing else: no kubelet and
// no controller-manager. Nothing ever becomes ready, so the releases
// disable Helm's wait (install.disableWait, upgrade.disableWait); and no
// Job ever runs, so completeJobs stands in for the Job controller and marks
// the charts' hook Jobs (their admission webhook certificate jobs) complete,
// which Helm waits for whatever the wait settings say.
//
// The file's name sorts before integration_test.go on purpose: Go runs
// tests in file order, and TestMemberGoesAway there stops member2.

var (
	daemonSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "DaemonSet"}
	jobGVR       = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	crdGVR       = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// realChart is one vendored chart, the value its upgrade changes and how
// the change shows on a member.
type realChart struct {
	name testcharts.Name
	// change sets the upgrade's value in vals.
	change func(vals map[string]any)
	// After the upgrade, one object of kind has want at field.
	kind  schema.GroupVersionKind
	field []string
	want  any
}

var realCharts = []realChart{
	{
		name:   testcharts.Podinfo,
		change: func(v map[string]any) { v["replicaCount"] = 3 },
		kind:   deploymentGVK, field: []string{"spec", "replicas"}, want: int64(3),
	},
	{
		name:   testcharts.NodeExporter,
		change: func(v map[string]any) { v["podAnnotations"] = map[string]any{"helmfleet.io/revision": "two"} },
		kind:   daemonSetGVK, field: []string{"spec", "template", "metadata", "annotations", "helmfleet.io/revision"}, want: "two",
	},
	{
		name:   testcharts.KubeStateMetrics,
		change: func(v map[string]any) { v["podAnnotations"] = map[string]any{"helmfleet.io/revision": "two"} },
		kind:   deploymentGVK, field: []string{"spec", "template", "metadata", "annotations", "helmfleet.io/revision"}, want: "two",
	},
	{
		name:   testcharts.IngressNginx,
		change: func(v map[string]any) { v["controller"] = map[string]any{"replicaCount": 2} },
		kind:   deploymentGVK, field: []string{"spec", "replicas"}, want: int64(2),
	},
	{
		name: testcharts.KubePrometheusStack,
		change: func(v map[string]any) {
			v["prometheus"] = map[string]any{"prometheusSpec": map[string]any{"retention": "3d"}}
		},
		kind:  schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "Prometheus"},
		field: []string{"spec", "retention"}, want: "3d",
	},
}

// realChartGetter serves the vendored chart that a release names, or the
// chart in overrides under that name.
func realChartGetter(overrides map[string]*chart.Chart) reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		if c, ok := overrides[rel.Spec.Chart.Spec.Chart]; ok {
			return &reconcile.Chart{Chart: c}, nil
		}
		c, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
		return &reconcile.Chart{Chart: c}, err
	})
}

// realRelease is the Release of chart n in namespace ns with Flux's
// defaults but for waiting (see the top of this file); tests are off, as
// by default.
func realRelease(n testcharts.Name, ns string, vals map[string]any) *release.Release {
	return &release.Release{
		TypeMeta:   metav1.TypeMeta{APIVersion: release.APIVersion, Kind: release.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: string(n), Namespace: ns, Generation: 1},
		Spec: release.Spec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Chart: &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{
				Chart: string(n), SourceRef: release.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"},
			}},
			Install: &release.Install{DisableWait: true},
			Upgrade: &release.Upgrade{DisableWait: true},
			Values:  vals,
		},
	}
}

// placeOn returns the policies placing every HelmRelease of namespace ns
// on members.
func placeOn(t *testing.T, ns string, members ...string) *release.Objects {
	t.Helper()
	objs, err := release.Decode(strings.NewReader(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: charts, namespace: ` + ns + `}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease}
  placement:
    clusterAffinity: {clusterNames: [` + strings.Join(members, ", ") + `]}
`))
	require.NoError(t, err)
	return objs
}

// discoveryCount counts a client's discovery GETs: /version, /api, /apis
// and the resource list of each group version.
type discoveryCount struct{ version, groups, resources atomic.Int64 }

func (d *discoveryCount) String() string {
	return fmt.Sprintf("%d (version %d, group lists %d, resource lists %d)", d.total(), d.version.Load(), d.groups.Load(), d.resources.Load())
}

func (d *discoveryCount) total() int64 {
	return d.version.Load() + d.groups.Load() + d.resources.Load()
}

func (d *discoveryCount) reset() {
	d.version.Store(0)
	d.groups.Store(0)
	d.resources.Store(0)
}

// countDiscovery returns cfg counting its discovery requests in n.
func countDiscovery(cfg *rest.Config, n *discoveryCount) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodGet {
				segs := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
				switch {
				case req.URL.Path == "/version":
					n.version.Add(1)
				case req.URL.Path == "/api" || req.URL.Path == "/apis":
					n.groups.Add(1)
				case segs[0] == "api" && len(segs) == 2, segs[0] == "apis" && len(segs) == 3:
					n.resources.Add(1)
				}
			}
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

// completeJobs stands in for the Job controller on the given control
// planes until the test ends: every Job that has not finished is marked
// succeeded, so that Helm's wait for hook Jobs ends.
func completeJobs(t *testing.T, members ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, name := range members {
		dyn, err := dynamic.NewForConfig(unthrottled(controlPlane(t, name).Admin))
		require.NoError(t, err)
		wg.Go(func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				list, err := dyn.Resource(jobGVR).List(ctx, metav1.ListOptions{})
				if err != nil {
					continue
				}
				for i := range list.Items {
					job := &list.Items[i]
					if conds, _, _ := unstructured.NestedSlice(job.Object, "status", "conditions"); len(conds) > 0 {
						continue
					}
					now := time.Now().UTC().Format(time.RFC3339)
					cond := func(typ string) any {
						return map[string]any{"type": typ, "status": "True", "lastProbeTime": now, "lastTransitionTime": now, "reason": "CompletedByTest"}
					}
					job.Object["status"] = map[string]any{
						"startTime": now, "completionTime": now, "succeeded": int64(1),
						"conditions": []any{cond("SuccessCriteriaMet"), cond("Complete")},
					}
					if _, err := dyn.Resource(jobGVR).Namespace(job.GetNamespace()).UpdateStatus(ctx, job, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
						t.Logf("%s: complete job %s/%s: %v", name, job.GetNamespace(), job.GetName(), err)
					}
				}
			}
		})
	}
}

// unthrottled returns cfg without client-side rate limiting (the checks
// list every kind a member serves) and without deprecation warnings (they
// list Endpoints and ComponentStatuses too).
func unthrottled(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WarningHandler = rest.NoWarnings{}
	return cfg
}

// apiKind is one kind a member serves.
type apiKind struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

// serverKinds returns the kinds a member serves now, by group and kind,
// at their preferred version, from a fresh discovery.
func serverKinds(t *testing.T, cfg *rest.Config) map[schema.GroupKind]apiKind {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(unthrottled(cfg))
	require.NoError(t, err)
	lists, err := dc.ServerPreferredResources()
	require.NoError(t, err)
	out := map[schema.GroupKind]apiKind{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			out[schema.GroupKind{Group: gv.Group, Kind: r.Kind}] = apiKind{gvr: gv.WithResource(r.Name), namespaced: r.Namespaced}
		}
	}
	return out
}

// objectKey names an object by group, kind, namespace and name.
func objectKey(gk schema.GroupKind, ns, name string) string {
	if ns == "" {
		return gk.String() + " " + name
	}
	return gk.String() + " " + ns + "/" + name
}

func keysOf(objs []*unstructured.Unstructured) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, objectKey(o.GroupVersionKind().GroupKind(), o.GetNamespace(), o.GetName()))
	}
	sort.Strings(out)
	return out
}

// manifestKeys returns the objects of a rendered manifest, namespaced kinds
// without a namespace in ns, as Helm creates them.
func manifestKeys(t *testing.T, manifest, ns string, kinds map[schema.GroupKind]apiKind) []string {
	t.Helper()
	var out []string
	for _, doc := range releaseutil.SplitManifests(manifest) {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
		if len(u.Object) == 0 {
			continue
		}
		gk := u.GroupVersionKind().GroupKind()
		k, ok := kinds[gk]
		require.True(t, ok, "the member serves %s", gk)
		switch {
		case k.namespaced && u.GetNamespace() == "":
			u.SetNamespace(ns)
		case !k.namespaced:
			u.SetNamespace("")
		}
		out = append(out, objectKey(gk, u.GetNamespace(), u.GetName()))
	}
	sort.Strings(out)
	return out
}

// helmOracle is Helm's own rendering of chart c for a member: a client-only
// dry-run install with the member's Kubernetes version and API versions,
// read from its discovery now.
func helmOracle(t *testing.T, cfg *rest.Config, c *chart.Chart, name, ns string, vals map[string]any) *helmrelease.Release {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(unthrottled(cfg))
	require.NoError(t, err)
	v, err := dc.ServerVersion()
	require.NoError(t, err)
	set, err := action.GetVersionSet(dc)
	require.NoError(t, err)
	i := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	i.DryRun, i.ClientOnly, i.ReleaseName, i.Namespace = true, true, name, ns
	i.KubeVersion = &chartutil.KubeVersion{Version: v.GitVersion, Major: v.Major, Minor: v.Minor}
	i.APIVersions = set
	rel, err := i.Run(c, vals)
	require.NoError(t, err)
	return rel
}

// releaseObjects lists, over every kind the member serves, the objects
// Helm's ownership metadata gives to release name of namespace ns. The
// kinds are listed in parallel: the first list of a custom resource
// takes the API server about a second.
func releaseObjects(t *testing.T, cfg *rest.Config, kinds map[schema.GroupKind]apiKind, name, ns string) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(unthrottled(cfg))
	require.NoError(t, err)
	var (
		mu  sync.Mutex
		out []string
		g   errgroup.Group
	)
	g.SetLimit(16)
	for gk, k := range kinds {
		g.Go(func() error {
			list, err := dyn.Resource(k.gvr).List(ctx(t), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=Helm"})
			if err != nil {
				return fmt.Errorf("list %s: %w", gk, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, o := range list.Items {
				a := o.GetAnnotations()
				if a["meta.helm.sh/release-name"] == name && a["meta.helm.sh/release-namespace"] == ns {
					out = append(out, objectKey(gk, o.GetNamespace(), o.GetName()))
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	sort.Strings(out)
	return out
}

// TestRealCharts installs, upgrades and uninstalls each vendored chart
// through the fleet on member1 and member2 with each engine (engines),
// and holds the plan and what
// lands on each member against Helm's rendering for that member.
func TestRealCharts(t *testing.T) {
	names := []string{"member1", "member2"}
	counts := map[string]*discoveryCount{}
	var members []release.Member
	for _, m := range names {
		counts[m] = &discoveryCount{}
		c, err := kube.New(kube.Config{Name: m, REST: countDiscovery(controlPlane(t, m).Admin, counts[m])})
		require.NoError(t, err)
		members = append(members, release.Member{Cluster: c})
	}
	completeJobs(t, names...)
	rows := []string{fmt.Sprintf("%-13s  %-8s  %-24s  %7s  %9s  %9s  %8s  %s", "ENGINE", "MEMBER", "CHART", "PLANNED", "INSTALLED", "HOOKS RUN", "UPGRADED", "LEFT AFTER UNINSTALL")}
	for _, e := range engines() {
		rec, err := reconcile.New(reconcile.Config{Charts: realChartGetter(nil), PollInterval: 100 * time.Millisecond, Engine: e.engine})
		require.NoError(t, err)
		for _, rc := range realCharts {
			t.Run(e.name+"/"+string(rc.name), func(t *testing.T) {
				skipLargeChartUnderRace(t, rc.name)
				for _, r := range realChartLifecycle(t, rc, rec, members, counts) {
					rows = append(rows, fmt.Sprintf("%-13s  %-8s  %-24s  %7d  %9d  %9d  %8d  %s", e.name, r.member, rc.name, r.planned, r.installed, r.hooks, r.upgraded, r.left))
				}
			})
		}
	}
	t.Logf("objects of each release per member (hooks: run by install and deleted by Helm when they succeeded):\n%s", strings.Join(rows, "\n"))
}

// skipLargeChartUnderRace skips every chart but podinfo under -race.
// kube-prometheus-stack and ingress-nginx run the same code paths as
// podinfo with more objects, and under the race detector on two cores
// they took most of CI's time (about 13 of the suite's 18 minutes): .ci/run
// runs them on every engine in a step of their own without -race, and
// podinfo keeps the paths under the race detector.
func skipLargeChartUnderRace(t *testing.T, name testcharts.Name) {
	t.Helper()
	if raceDetector && name != testcharts.Podinfo {
		t.Skipf("%s is run without -race (.ci/run's real-chart step); podinfo runs under -race", name)
	}
}

// lifecycleRow is what one chart's lifecycle did on one member.
type lifecycleRow struct {
	member                              string
	planned, installed, hooks, upgraded int
	left                                string
}

// realChartLifecycle plans, installs, upgrades and uninstalls one chart on
// members through a fleet, checking each step on every member.
func realChartLifecycle(t *testing.T, rc realChart, rec *reconcile.Reconciler, members []release.Member, counts map[string]*discoveryCount) []lifecycleRow {
	ns, name := "rc-"+string(rc.name), string(rc.name)
	if rc.name == testcharts.KubePrometheusStack {
		ns = "rc-kps"
	}
	rows := map[string]*lifecycleRow{}
	for _, m := range members {
		namespace(t, m.Cluster, ns)
		rows[m.Cluster.Name()] = &lifecycleRow{member: m.Cluster.Name()}
	}
	fl, err := fleet.New(fleet.Config{Reconciler: rec, Members: members})
	require.NoError(t, err)
	ch, err := testcharts.Load(rc.name)
	require.NoError(t, err)
	vals := testcharts.DefaultValues(rc.name)
	objs := placeOn(t, ns, "member1", "member2")
	objs.Releases = []*release.Release{realRelease(rc.name, ns, vals)}
	apply := func(what string, plan *fleet.Plan) {
		t.Helper()
		start := time.Now()
		// kube-prometheus-stack's install takes about a minute under -race
		// on two cores: a longer bound than ctx's minute.
		actx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		rep, err := fl.Apply(actx, plan, fleet.ApplyOptions{})
		require.NoError(t, err, rep.Table())
		t.Logf("%s of %s on both members took %v", what, name, time.Since(start).Round(time.Millisecond))
	}

	// Plan and install.
	plan := planEverywhere(t, fl, objs, counts, reconcile.ActionInstall)
	for _, it := range plan.Items {
		assert.Equal(t, reconcile.CapabilitiesFromCluster, it.CapabilitiesFrom, it.Cluster)
		assert.Equal(t, "v"+kubeharness.KubeVersion, it.KubeVersion, it.Cluster)
	}
	apply("install", plan)
	for _, m := range members {
		member := m.Cluster.Name()
		cp := controlPlane(t, member)
		// After the install, discovery serves the CRDs of crds/ as it did
		// when Helm rendered the chart.
		oracle, kinds, got := checkRevision(t, m, plan, ch, ns, vals, 1)
		ran, left := installHooks(t, oracle, ns, kinds)
		assert.Equal(t, left, remaining(t, cp.Admin, kinds, left), "%s: hooks that stay", member)
		assert.Empty(t, remaining(t, cp.Admin, kinds, ran), "%s: hooks deleted once they succeeded", member)
		it, _ := plan.Item(fleet.Key{Cluster: member, Namespace: ns, Name: name})
		rows[member].planned, rows[member].installed, rows[member].hooks = len(it.Objects), len(got), len(ran)+len(left)
	}
	if rc.name == testcharts.KubePrometheusStack {
		kpsInstalled(t, ch, members, ns)
	}

	// Upgrade with a changed value.
	upVals := testcharts.DefaultValues(rc.name)
	rc.change(upVals)
	objs.Releases = []*release.Release{realRelease(rc.name, ns, upVals)}
	objs.Releases[0].Generation = 2
	plan = planEverywhere(t, fl, objs, counts, reconcile.ActionUpgrade)
	for _, it := range plan.Items {
		assert.NotEmpty(t, it.Diff, it.Cluster)
	}
	apply("upgrade", plan)
	for _, m := range members {
		member := m.Cluster.Name()
		_, _, got := checkRevision(t, m, plan, ch, ns, upVals, 2)
		rows[member].upgraded = len(got)
		list, err := m.Cluster.List(ctx(t), rc.kind, ns, nil)
		require.NoError(t, err)
		var changed []string
		for _, o := range list {
			if v, ok, _ := unstructured.NestedFieldNoCopy(o.Object, rc.field...); ok && v == rc.want {
				changed = append(changed, o.GetName())
			}
		}
		assert.Len(t, changed, 1, "%s: one %s has %s = %v", member, rc.kind.Kind, strings.Join(rc.field, "."), rc.want)
	}

	// Uninstall: the release leaves the fleet's inputs, and the fleet
	// collects it.
	objs.Releases = nil
	plan, err = fl.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	require.Len(t, plan.Items, 2)
	for _, it := range plan.Items {
		assert.Equal(t, reconcile.ActionUninstall, it.Action, it.Cluster)
	}
	apply("uninstall", plan)
	crds := crdsOf(t, ch)
	nsKey := objectKey(schema.GroupKind{Kind: "Namespace"}, "", ns)
	for _, m := range members {
		member := m.Cluster.Name()
		cp := controlPlane(t, member)
		kinds := serverKinds(t, cp.Admin)
		assert.Empty(t, releaseObjects(t, cp.Admin, kinds, name, ns), "%s: nothing the release created remains", member)
		// Helm never deletes the CRDs of crds/, and leaves the namespace,
		// which it did not create.
		assert.Equal(t, crds, remaining(t, cp.Admin, kinds, crds), "%s: Helm leaves the CRDs of crds/", member)
		assert.Equal(t, []string{nsKey}, remaining(t, cp.Admin, kinds, []string{nsKey}), member)
		cfg, err := m.Cluster.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: ns, Namespace: ns})
		require.NoError(t, err)
		listed, err := action.NewList(cfg).Run()
		require.NoError(t, err)
		assert.Empty(t, listed, "%s: helm ls", member)
		rows[member].left = "the namespace"
		if len(crds) > 0 {
			rows[member].left += fmt.Sprintf(", %d CRDs of crds/", len(crds))
		}
	}
	var out []lifecycleRow
	for _, m := range members {
		out = append(out, *rows[m.Cluster.Name()])
	}
	return out
}

// planEverywhere plans objs with fl: every member's item plans act
// without error. It logs the discovery requests each member's plan made.
func planEverywhere(t *testing.T, fl *fleet.Fleet, objs *release.Objects, counts map[string]*discoveryCount, act reconcile.Action) *fleet.Plan {
	t.Helper()
	for _, c := range counts {
		c.reset()
	}
	plan, err := fl.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Len(t, plan.Items, len(counts))
	for _, it := range plan.Items {
		require.NoError(t, it.Err, "%s: plan", it.Cluster)
		assert.Equal(t, act, it.Action, it.Cluster)
		t.Logf("%s: %s plan of %s: discovery requests %s", it.Cluster, act, it.Release.Name, counts[it.Cluster])
	}
	return plan
}

// checkRevision checks the release of ch in ns on member m after an Apply
// of plan: Helm's record is revision rev and deployed, and the plan's
// objects, Helm's record and the objects the release owns on the member
// are each exactly Helm's own rendering of vals for the member. It
// returns that rendering, the member's kinds and the owned objects.
func checkRevision(t *testing.T, m release.Member, plan *fleet.Plan, ch *chart.Chart, ns string, vals map[string]any, rev int) (*helmrelease.Release, map[schema.GroupKind]apiKind, []string) {
	t.Helper()
	member, name := m.Cluster.Name(), ch.Metadata.Name
	cp := controlPlane(t, member)
	kinds := serverKinds(t, cp.Admin)
	oracle := helmOracle(t, cp.Admin, ch, name, ns, vals)
	want := manifestKeys(t, oracle.Manifest, ns, kinds)
	it, ok := plan.Item(fleet.Key{Cluster: member, Namespace: ns, Name: name})
	require.True(t, ok)
	assert.Equal(t, want, keysOf(it.Objects), "%s: the plan's objects are Helm's", member)
	stored := helmRelease(t, m.Cluster, ns, name)
	assert.Equal(t, rev, stored.Version, member)
	assert.Equal(t, helmrelease.StatusDeployed, stored.Info.Status, member)
	assert.Equal(t, want, manifestKeys(t, stored.Manifest, ns, kinds), "%s: Helm's record holds what Helm renders", member)
	got := releaseObjects(t, cp.Admin, kinds, name, ns)
	assert.Equal(t, want, got, "%s: the release's objects are Helm's, nothing more", member)
	return oracle, kinds, got
}

// installHooks returns the objects of the hooks an install runs: those
// Helm deletes once they succeed, and those that stay.
func installHooks(t *testing.T, rel *helmrelease.Release, ns string, kinds map[schema.GroupKind]apiKind) (deleted, left []string) {
	t.Helper()
	for _, h := range rel.Hooks {
		if !slices.Contains(h.Events, helmrelease.HookPreInstall) && !slices.Contains(h.Events, helmrelease.HookPostInstall) {
			continue
		}
		keys := manifestKeys(t, h.Manifest, ns, kinds)
		if slices.Contains(h.DeletePolicies, helmrelease.HookSucceeded) {
			deleted = append(deleted, keys...)
		} else {
			left = append(left, keys...)
		}
	}
	sort.Strings(deleted)
	sort.Strings(left)
	return deleted, left
}

// kpsInstalled checks kube-prometheus-stack's CRDs are served and its
// Alertmanager, Prometheus and ServiceMonitors exist on each member, and
// that each member's capabilities now show them.
func kpsInstalled(t *testing.T, ch *chart.Chart, members []release.Member, ns string) {
	t.Helper()
	monitoring := func(kind string) schema.GroupVersionKind {
		return schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: kind}
	}
	for _, m := range members {
		kinds := serverKinds(t, controlPlane(t, m.Cluster.Name()).Admin)
		for _, crd := range crdsOf(t, ch) {
			assert.Contains(t, remaining(t, controlPlane(t, m.Cluster.Name()).Admin, kinds, []string{crd}), crd)
		}
		for kind, min := range map[string]int{"Alertmanager": 1, "Prometheus": 1, "ServiceMonitor": 5} {
			list, err := m.Cluster.List(ctx(t), monitoring(kind), ns, nil)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, len(list), min, "%s: %s objects", m.Cluster.Name(), kind)
		}
		caps, err := m.Cluster.(release.CapabilitiesReader).Capabilities(ctx(t))
		require.NoError(t, err)
		assert.Contains(t, caps.APIVersions, "monitoring.coreos.com/v1/Prometheus", "%s: capabilities after Helm installed crds/", m.Cluster.Name())
	}
}

// crdsOf returns the CRDs of the chart's crds/ directories.
func crdsOf(t *testing.T, ch *chart.Chart) []string {
	t.Helper()
	var out []string
	for _, crd := range ch.CRDObjects() {
		for _, doc := range releaseutil.SplitManifests(string(crd.File.Data)) {
			u := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
			if len(u.Object) > 0 {
				out = append(out, objectKey(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "", u.GetName()))
			}
		}
	}
	sort.Strings(out)
	return out
}

// remaining returns those of keys whose objects exist on the member.
func remaining(t *testing.T, cfg *rest.Config, kinds map[schema.GroupKind]apiKind, keys []string) []string {
	t.Helper()
	dyn, err := dynamic.NewForConfig(unthrottled(cfg))
	require.NoError(t, err)
	var out []string
	for _, key := range keys {
		gkText, ref, _ := strings.Cut(key, " ")
		gk := schema.ParseGroupKind(gkText)
		k, ok := kinds[gk]
		if !ok {
			continue
		}
		ns, name, found := strings.Cut(ref, "/")
		if !found {
			ns, name = "", ref
		}
		var ri dynamic.ResourceInterface = dyn.Resource(k.gvr)
		if ns != "" {
			ri = dyn.Resource(k.gvr).Namespace(ns)
		}
		if _, err := ri.Get(ctx(t), name, metav1.GetOptions{}); err == nil {
			out = append(out, key)
		}
	}
	return out
}

// helmRelease returns Helm's record of the release on c.
func helmRelease(t *testing.T, c release.Cluster, ns, name string) *helmrelease.Release {
	t.Helper()
	cfg, err := c.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: ns, Namespace: ns})
	require.NoError(t, err)
	rel, err := action.NewGet(cfg).Run(name)
	require.NoError(t, err)
	return rel
}

// TestRealChartKubeVersion plans a chart whose kubeVersion the members do
// not satisfy: every member's item is a *release.KubeVersionError naming
// the chart, its constraint and the member's real version.
func TestRealChartKubeVersion(t *testing.T) {
	members := []string{"member1", "member2"}
	old, err := testcharts.Load(testcharts.Podinfo)
	require.NoError(t, err)
	old.Metadata.KubeVersion = "<1.20.0"
	rec, err := reconcile.New(reconcile.Config{Charts: realChartGetter(map[string]*chart.Chart{"podinfo": old})})
	require.NoError(t, err)
	var fm []release.Member
	for _, m := range members {
		c := admin(t, m)
		namespace(t, c, "rc-old")
		fm = append(fm, release.Member{Cluster: c})
	}
	fl, err := fleet.New(fleet.Config{Reconciler: rec, Members: fm})
	require.NoError(t, err)
	objs := placeOn(t, "rc-old", members...)
	objs.Releases = []*release.Release{realRelease(testcharts.Podinfo, "rc-old", nil)}
	plan, err := fl.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	require.Len(t, plan.Items, 2)
	for _, it := range plan.Items {
		dc, err := discovery.NewDiscoveryClientForConfig(controlPlane(t, it.Cluster).Admin)
		require.NoError(t, err)
		v, err := dc.ServerVersion()
		require.NoError(t, err)
		var kv *release.KubeVersionError
		require.ErrorAs(t, it.Err, &kv, it.Cluster)
		assert.Equal(t, &release.KubeVersionError{Chart: "podinfo", Version: old.Metadata.Version, Constraint: "<1.20.0", Cluster: it.Cluster, KubeVersion: v.GitVersion}, kv)
		assert.True(t, strings.HasPrefix(v.GitVersion, "v1.37."), v.GitVersion)
		t.Logf("%s: %v", it.Cluster, it.Err)
	}
	_, err = fl.Apply(ctx(t), plan, fleet.ApplyOptions{})
	require.Error(t, err, "nothing is installed")
	var kv *release.KubeVersionError
	assert.ErrorAs(t, err, &kv)
	for _, m := range fm {
		cfg, err := m.Cluster.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: "rc-old", Namespace: "rc-old"})
		require.NoError(t, err)
		listed, err := action.NewList(cfg).Run()
		require.NoError(t, err)
		assert.Empty(t, listed, "%s: helm ls", m.Cluster.Name())
	}
}

// TestCapabilitiesOnRealCluster: a member's capabilities are Helm's, cost
// one request of /apis once cached, and show a CRD another client creates.
func TestCapabilitiesOnRealCluster(t *testing.T) {
	cp := controlPlane(t, "member1")
	n := &discoveryCount{}
	c, err := kube.New(kube.Config{Name: "member1", REST: countDiscovery(cp.Admin, n)})
	require.NoError(t, err)
	caps, err := c.Capabilities(ctx(t))
	require.NoError(t, err)
	t.Logf("first Capabilities: discovery requests %s", n)
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Admin)
	require.NoError(t, err)
	helm, err := action.GetVersionSet(dc)
	require.NoError(t, err)
	slices.Sort(helm)
	assert.Equal(t, []string(helm), []string(caps.APIVersions), "Helm's API versions")
	v, err := dc.ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, v.GitVersion, caps.KubeVersion.Version)

	n.reset()
	for range 5 {
		_, err = c.Capabilities(ctx(t))
		require.NoError(t, err)
	}
	assert.Equal(t, int64(5), n.total(), "one request per call: %s", n)
	assert.Equal(t, int64(5), n.groups.Load(), "GET /apis, answered 304 Not Modified")

	// Another client creates a CRD.
	dyn, err := dynamic.NewForConfig(cp.Admin)
	require.NoError(t, err)
	crd := gadgetCRD("gadgets.helmfleet.io")
	_, err = dyn.Resource(crdGVR).Create(ctx(t), crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = dyn.Resource(crdGVR).Delete(context.WithoutCancel(t.Context()), crd.GetName(), metav1.DeleteOptions{})
	})
	require.Eventually(t, func() bool {
		caps, err := c.Capabilities(ctx(t))
		return err == nil && caps.APIVersions.Has("gadgets.helmfleet.io/v1/Gadget")
	}, 30*time.Second, 100*time.Millisecond, "the CRD shows in Capabilities")
}

// gadgetCRD is the CRD of a namespaced kind Gadget in group.
func gadgetCRD(group string) *unstructured.Unstructured {
	return object(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, "", "gadgets."+group, map[string]any{
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
			}},
		},
	})
}

// withoutCapabilities hides the CapabilitiesReader of a cluster: the
// reconciler then reads capabilities through the discovery client of the
// Helm configuration on every plan, as it did before release/kube cached
// them.
type withoutCapabilities struct{ release.Cluster }

// TestPlanDiscoveryRequests measures the discovery requests a fleet Plan of
// kube-prometheus-stack makes on one member, without and with the
// cluster's cached capabilities: cold, warm, and after another client
// created a CRD.
func TestPlanDiscoveryRequests(t *testing.T) {
	cp := controlPlane(t, "member1")
	dyn, err := dynamic.NewForConfig(cp.Admin)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Admin)
	require.NoError(t, err)
	const ns = "rc-measure"
	namespace(t, admin(t, "member1"), ns)
	rec, err := reconcile.New(reconcile.Config{Charts: realChartGetter(nil)})
	require.NoError(t, err)
	objs := placeOn(t, ns, "member1")
	// Six plans of kube-prometheus-stack took two and a half minutes
	// under -race on two cores; there the count is taken with podinfo, and
	// .ci/run's step without -race takes it with kube-prometheus-stack.
	chart := testcharts.KubePrometheusStack
	if raceDetector {
		chart = testcharts.Podinfo
	}
	objs.Releases = []*release.Release{realRelease(chart, ns, testcharts.DefaultValues(chart))}
	rows := []string{fmt.Sprintf("%-30s  %-6s  %-6s  %s", "CLUSTER", "COLD", "WARM", "AFTER ANOTHER CLIENT'S CRD")}
	for _, mode := range []struct {
		name, group string
		cached      bool
	}{
		{name: "before: discovery per plan", group: "before.helmfleet.io"},
		{name: "after: cached capabilities", group: "after.helmfleet.io", cached: true},
	} {
		n := &discoveryCount{}
		c, err := kube.New(kube.Config{Name: "member1", REST: countDiscovery(cp.Admin, n)})
		require.NoError(t, err)
		var member release.Cluster = withoutCapabilities{c}
		if mode.cached {
			member = c
		}
		fl, err := fleet.New(fleet.Config{Reconciler: rec, Members: []release.Member{{Cluster: member}}})
		require.NoError(t, err)
		planned := func() int64 {
			n.reset()
			plan, err := fl.Plan(ctx(t), fleet.InputsOf(objs))
			require.NoError(t, err)
			require.Len(t, plan.Items, 1)
			require.NoError(t, plan.Items[0].Err)
			return n.total()
		}
		cold, warm := planned(), planned()
		crd := gadgetCRD(mode.group)
		_, err = dyn.Resource(crdGVR).Create(ctx(t), crd, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = dyn.Resource(crdGVR).Delete(context.WithoutCancel(t.Context()), crd.GetName(), metav1.DeleteOptions{})
		})
		require.Eventually(t, func() bool {
			// The aggregated discovery document lists the group.
			groups, err := dc.ServerGroups()
			return err == nil && slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == mode.group })
		}, 30*time.Second, 50*time.Millisecond, "the member serves the CRD")
		after := planned()
		rows = append(rows, fmt.Sprintf("%-30s  %-6d  %-6d  %d", mode.name, cold, warm, after))
		if mode.cached {
			assert.Equal(t, int64(1), warm, "a warm plan makes one conditional request")
			assert.Greater(t, after, int64(1), "another client's CRD is rediscovered")
			caps, err := c.Capabilities(ctx(t))
			require.NoError(t, err)
			assert.Contains(t, caps.APIVersions, mode.group+"/v1/Gadget")
		}
	}
	t.Logf("discovery requests of a fleet Plan of %s on member1:\n%s", chart, strings.Join(rows, "\n"))
}
