package fleet_test

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// tenantRelease is a HelmRelease ns/name of chart podinfo 6.5.0 from the
// HelmRepository repoNS/podinfo, or from the chartRef when chartRef is
// set.
func tenantRelease(ns, name, repoNS, extra string) string {
	chart := fmt.Sprintf("  chart:\n    spec:\n      chart: podinfo\n      version: \"6.5.0\"\n      sourceRef: {kind: HelmRepository, name: podinfo, namespace: %q}\n", repoNS)
	if strings.Contains(extra, "chartRef") {
		chart = ""
	}
	return fmt.Sprintf("---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: %s, namespace: %s}\nspec:\n  interval: 10m\n%s%s", name, ns, chart, extra)
}

// placeAll places every unit of kind in namespace ns on every member.
func placeAll(ns, apiVersion, kind string) string {
	return fmt.Sprintf("---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: all-%s, namespace: %s}\nspec:\n  resourceSelectors:\n    - {apiVersion: %s, kind: %s}\n  placement:\n    clusterAffinity: {clusterNames: [m1, m2]}\n",
		strings.ToLower(kind), ns, apiVersion, kind)
}

// tenantSources are a HelmRepository podinfo in tenant-a and tenant-b
// each (with distinct URLs) and a HelmChart podinfo in tenant-b, served
// through reconcile.Charts; it records, for each release a chart was
// resolved for, the repository's URL.
type tenantSources struct {
	mu    sync.Mutex
	asked map[string]bool
}

func (s *tenantSources) charts() reconcile.ChartGetter {
	objs := &release.Objects{}
	for _, ns := range []string{"tenant-a", "tenant-b"} {
		objs.HelmRepositories = append(objs.HelmRepositories, &source.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"},
			Spec:       source.HelmRepositorySpec{URL: "https://" + ns + ".example.com"},
		})
	}
	objs.HelmCharts = append(objs.HelmCharts, &source.HelmChart{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "podinfo"},
		Spec:       source.HelmChartSpec{Chart: "podinfo", Version: "6.5.0", SourceRef: source.LocalHelmChartSourceReference{Kind: source.KindHelmRepository, Name: "podinfo"}},
	})
	return reconcile.ChartGetterFunc(func(ctx context.Context, rel *release.Release) (*reconcile.Chart, error) {
		resolver := source.ResolverFunc(func(_ context.Context, ref source.Ref) (*source.Chart, error) {
			s.mu.Lock()
			s.asked[rel.Namespace+"/"+rel.Name+" <- "+ref.HelmRepository.Spec.URL] = true
			s.mu.Unlock()
			return &source.Chart{Chart: testchart.MustLoad("6.5.0")}, nil
		})
		return reconcile.Charts(resolver, objs).GetChart(ctx, rel)
	})
}

// of lists the repositories charts of release ref were resolved from.
func (s *tenantSources) of(ref string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for a := range s.asked {
		if r, url, _ := strings.Cut(a, " <- "); r == ref {
			out = append(out, url)
		}
	}
	sort.Strings(out)
	return out
}

// tenantFleet is a fleet of members m1 and m2 over the tenants' sources,
// on which the Deployments in namespace broken are never healthy.
func tenantFleet(t *testing.T, src *tenantSources, on bool, kust *kustomize.ReconcilerConfig, broken string) *fleet.Fleet {
	t.Helper()
	var members []release.Member
	for _, name := range []string{"m1", "m2"} {
		c := memory.New(name, memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
			if u.GetKind() == "Deployment" && u.GetNamespace() == broken {
				return memory.Health{Message: "crash loop"}
			}
			return memory.Health{Ready: true}
		}))
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Name: name}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: src.charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: members, Reconciler: rec, KustomizeConfig: kust, NoCrossNamespaceRefs: on})
	require.NoError(t, err)
	return f
}

// tenantInputs are tenant-a/base, tenant-a/app with appSpec (its chart
// from repoNS unless appSpec has a chartRef), tenant-b/db unless
// withoutDB, all placed on both members.
func tenantInputs(t *testing.T, repoNS, appSpec string, withoutDB bool) fleet.Inputs {
	t.Helper()
	y := placeAll("tenant-a", release.APIVersion, release.Kind) + placeAll("tenant-b", release.APIVersion, release.Kind) +
		tenantRelease("tenant-a", "base", "", "") + tenantRelease("tenant-a", "app", repoNS, appSpec)
	if !withoutDB {
		// A broken db fails fast.
		y += tenantRelease("tenant-b", "db", "tenant-b", "  timeout: 50ms\n")
	}
	return decodeInputs(t, y)
}

// TestFleetNoCrossNamespaceRefs: with Config.NoCrossNamespaceRefs, a
// release whose chart.spec.sourceRef, chartRef or dependsOn names
// another namespace fails on every member with a
// *release.AccessDeniedError, in Plan and in Apply, without its chart
// being resolved or anything installed; references in its own namespace
// work; with the option off (the default) cross-namespace references
// work as in Flux.
func TestFleetNoCrossNamespaceRefs(t *testing.T) {
	const denied = "HelmRelease tenant-a/app: %s: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"
	const repoA, repoB = "https://tenant-a.example.com", "https://tenant-b.example.com"
	for _, tc := range []struct {
		name    string
		on      bool
		repoNS  string
		appSpec string
		field   string   // the refused field; "" when app installs
		repos   []string // the repositories app's chart comes from
	}{
		{"on: chart sourceRef", true, "tenant-b", "", "spec.chart.spec.sourceRef.namespace", nil},
		{"on: chartRef to a HelmChart", true, "", "  chartRef: {kind: HelmChart, name: podinfo, namespace: tenant-b}\n", "spec.chartRef.namespace", nil},
		{"on: dependsOn", true, "tenant-a", "  dependsOn: [{name: base}, {name: db, namespace: tenant-b}]\n", "spec.dependsOn[1].namespace", nil},
		{"on: own namespace spelled out", true, "tenant-a", "  dependsOn: [{name: base, namespace: tenant-a}]\n", "", []string{repoA}},
		{"on: own namespace unset", true, "", "  dependsOn: [{name: base}]\n", "", []string{repoA}},
		{"off: chart sourceRef", false, "tenant-b", "", "", []string{repoB}},
		{"off: chartRef to a HelmChart, whose repository is the HelmChart's", false, "", "  chartRef: {kind: HelmChart, name: podinfo, namespace: tenant-b}\n", "", []string{repoB}},
		{"off: dependsOn", false, "tenant-a", "  dependsOn: [{name: db, namespace: tenant-b}]\n", "", []string{repoA}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			src := &tenantSources{asked: map[string]bool{}}
			f := tenantFleet(t, src, tc.on, nil, "")
			plan, err := f.Plan(ctx, tenantInputs(t, tc.repoNS, tc.appSpec, false))
			require.NoError(t, err)
			rep, applyErr := f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.NotNil(t, rep)
			for _, m := range []string{"m1", "m2"} {
				k := fleet.Key{Cluster: m, Namespace: "tenant-a", Name: "app"}
				item, ok := plan.Item(k)
				require.True(t, ok)
				got := reportOf(t, rep, k)
				if tc.field == "" {
					assert.NoError(t, item.Err)
					assert.Equal(t, depgraph.Succeeded, got.State, "%v", got.Err)
					assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, got.Actions)
					continue
				}
				assert.Equal(t, reconcile.ActionNone, item.Action)
				assert.Empty(t, got.Actions, "nothing installed")
				_, applied := f.Status(k)
				assertRefused(t, fmt.Sprintf(denied, tc.field), item.Err, got, applied, applyErr)
			}
			if tc.field != "" {
				for _, e := range plan.Errors {
					var ad *release.AccessDeniedError
					assert.ErrorAs(t, e, &ad, "the refusal is the plan's only error: %v", e)
				}
			} else {
				assert.Empty(t, plan.Errors)
				require.NoError(t, applyErr)
			}
			assert.Equal(t, tc.repos, src.of("tenant-a/app"), "where app's chart came from")
		})
	}
}

// TestFleetNoCrossNamespaceRefsRevealsNothing: the report of a release
// refused its dependsOn on tenant-b/db is the same whether db is absent,
// ready or failing.
func TestFleetNoCrossNamespaceRefsRevealsNothing(t *testing.T) {
	type outcome struct {
		planErrs, report []string
		table            string
	}
	run := func(t *testing.T, withoutDB bool, broken string) outcome {
		src := &tenantSources{asked: map[string]bool{}}
		f := tenantFleet(t, src, true, nil, broken)
		plan, err := f.Plan(t.Context(), tenantInputs(t, "", "  dependsOn: [{name: db, namespace: tenant-b}]\n", withoutDB))
		require.NoError(t, err)
		rep, _ := f.Apply(t.Context(), plan, fleet.ApplyOptions{})
		require.NotNil(t, rep)
		var out outcome
		for _, e := range plan.Errors {
			out.planErrs = append(out.planErrs, e.Error())
		}
		for _, line := range strings.Split(plan.Table(), "\n") {
			if strings.Contains(line, "tenant-a/app") {
				out.table += line + "\n"
			}
		}
		for _, m := range []string{"m1", "m2"} {
			got := reportOf(t, rep, fleet.Key{Cluster: m, Namespace: "tenant-a", Name: "app"})
			out.report = append(out.report, fmt.Sprintf("%s %v %v", got.State, got.Actions, got.Err))
		}
		return out
	}
	absent := run(t, true, "")
	require.Len(t, absent.report, 2)
	assert.Contains(t, absent.report[0], "cross-namespace reference to tenant-b is not allowed")
	assert.Equal(t, absent, run(t, false, ""), "db ready")
	assert.Equal(t, absent, run(t, false, "tenant-b"), "db failing")
}

// TestFleetNoCrossNamespaceRefsKustomization: a Kustomization whose
// sourceRef or dependsOn names another namespace is refused on every
// member (its source is not built, nothing applied); with the option
// off it is applied from the other namespace's source.
func TestFleetNoCrossNamespaceRefsKustomization(t *testing.T) {
	tree := fstest.MapFS{
		"app/kustomization.yaml": {Data: []byte("resources: [cm.yaml]\n")},
		"app/cm.yaml":            {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: tenant-a}\ndata: {k: v}\n")},
	}
	ks := func(extra string) string {
		return "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: tenant-a}\nspec:\n  interval: 10m\n  path: ./app\n  prune: true\n" + extra
	}
	for _, tc := range []struct {
		name, spec, field string
		on                bool
	}{
		{"on: sourceRef", "  sourceRef: {kind: GitRepository, name: repo, namespace: tenant-b}\n", "spec.sourceRef.namespace", true},
		{"on: dependsOn", "  sourceRef: {kind: GitRepository, name: repo}\n  dependsOn: [{name: infra, namespace: tenant-b}]\n", "spec.dependsOn[0].namespace", true},
		{"on: own namespace", "  sourceRef: {kind: GitRepository, name: repo, namespace: tenant-a}\n", "", true},
		{"off: sourceRef", "  sourceRef: {kind: GitRepository, name: repo, namespace: tenant-b}\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reads sync.Map
			sources := kustomize.SourcesFunc(func(_ context.Context, k *release.Kustomization) (fs.FS, string, error) {
				reads.Store(k.Namespace+"/"+k.Name, true)
				return tree, "main@sha1:1", nil
			})
			src := &tenantSources{asked: map[string]bool{}}
			f := tenantFleet(t, src, tc.on, &kustomize.ReconcilerConfig{Sources: sources, PollInterval: time.Millisecond}, "")
			y := placeAll("tenant-a", release.KustomizationAPIVersion, release.KustomizationKind) + ks(tc.spec)
			if strings.Contains(tc.spec, "infra") {
				// tenant-b's Kustomization, which tenant-a's may not wait for.
				y += placeAll("tenant-b", release.KustomizationAPIVersion, release.KustomizationKind) +
					strings.ReplaceAll(strings.ReplaceAll(ks("  sourceRef: {kind: GitRepository, name: repo}\n"), "name: apps", "name: infra"), "namespace: tenant-a", "namespace: tenant-b")
			}
			plan, err := f.Plan(t.Context(), decodeInputs(t, y))
			require.NoError(t, err)
			rep, applyErr := f.Apply(t.Context(), plan, fleet.ApplyOptions{})
			require.NotNil(t, rep)
			for _, m := range []string{"m1", "m2"} {
				k := fleet.Key{Cluster: m, Namespace: "tenant-a", Name: "apps", Kind: fleet.KindKustomization}
				kp, ok := plan.Kustomization(k)
				require.True(t, ok)
				got := reportOf(t, rep, k)
				if tc.field == "" {
					assert.NoError(t, kp.Err)
					assert.Equal(t, depgraph.Succeeded, got.State, "%v", got.Err)
					continue
				}
				assert.Empty(t, kp.Objects)
				_, applied := f.KustomizationStatus(k)
				want := fmt.Sprintf("member %s: Kustomization tenant-a/apps: %s: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)", m, tc.field)
				assertRefused(t, want, kp.Err, got, applied, applyErr)
			}
			_, read := reads.Load("tenant-a/apps")
			assert.Equal(t, tc.field == "", read, "the source is read only when allowed")
		})
	}
}

// reportOf is the report of k.
func reportOf(t *testing.T, rep *fleet.ApplyReport, k fleet.Key) fleet.ItemReport {
	t.Helper()
	for _, it := range rep.Items {
		if it.Key == k {
			return it
		}
	}
	require.Failf(t, "no report", "%s", k)
	return fleet.ItemReport{}
}

// assertRefused checks a unit refused with message want: its plan error
// planErr, its report got (failed at once with the refusal, whatever its
// dependencies), that it was never applied, and that Apply's error
// names it.
func assertRefused(t *testing.T, want string, planErr error, got fleet.ItemReport, applied bool, applyErr error) {
	t.Helper()
	var ad *release.AccessDeniedError
	require.ErrorAs(t, planErr, &ad)
	assert.EqualError(t, planErr, want)
	assert.Equal(t, depgraph.Failed, got.State)
	assert.EqualError(t, got.Err, want)
	assert.False(t, applied, "never applied")
	assert.ErrorContains(t, applyErr, want)
}
