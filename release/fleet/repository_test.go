package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// exampleRepo is a repository in the layout of
// fluxcd/flux2-kustomize-helm-example (GitRepository + HelmRepository):
// clusters/<env> holds the Kustomizations of infrastructure and apps,
// which produce the HelmRepositories and HelmReleases; apps/<env> patches
// the base values per environment. No source is declared outside it.
func exampleRepo() fstest.MapFS {
	ks := func(name, path, extra string) string {
		return "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: " + name +
			", namespace: flux-system}\nspec:\n  interval: 10m\n  path: " + path +
			"\n  prune: true\n  wait: true\n  sourceRef: {kind: GitRepository, name: flux-system}\n" + extra
	}
	hr := func(name, ns, repo, url string) string {
		return `apiVersion: v1
kind: Namespace
metadata: {name: ` + ns + `}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: ` + repo + `, namespace: ` + ns + `}
spec: {interval: 24h, url: "` + url + `"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  interval: 30m
  chart:
    spec:
      chart: ` + name + `
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: ` + repo + `}
  values: {replicaCount: 1}
`
	}
	env := func(e string, replicas string) map[string]*fstest.MapFile {
		return map[string]*fstest.MapFile{
			"clusters/" + e + "/infrastructure.yaml": {Data: []byte(ks("infra-controllers", "./infrastructure/controllers", ""))},
			"clusters/" + e + "/apps.yaml":           {Data: []byte(ks("apps", "./apps/"+e, "  dependsOn: [{name: infra-controllers}]\n"))},
			"apps/" + e + "/kustomization.yaml":      {Data: []byte("resources: [../base/podinfo]\npatches:\n- path: podinfo-values.yaml\n  target: {kind: HelmRelease, name: podinfo}\n")},
			"apps/" + e + "/podinfo-values.yaml":     {Data: []byte("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: podinfo}\nspec:\n  values: {replicaCount: " + replicas + "}\n")},
		}
	}
	tree := fstest.MapFS{
		"infrastructure/controllers/kustomization.yaml": {Data: []byte("resources: [ingress-nginx.yaml]\n")},
		"infrastructure/controllers/ingress-nginx.yaml": {Data: []byte(hr("ingress-nginx", "ingress-nginx", "ingress-nginx", "https://kubernetes.github.io/ingress-nginx"))},
		"apps/base/podinfo/kustomization.yaml":          {Data: []byte("resources: [release.yaml]\n")},
		"apps/base/podinfo/release.yaml":                {Data: []byte(hr("podinfo", "podinfo", "podinfo", "https://stefanprodan.github.io/podinfo"))},
	}
	for _, m := range []map[string]*fstest.MapFile{env("staging", "1"), env("production", "2")} {
		for k, v := range m {
			tree[k] = v
		}
	}
	return tree
}

// bootstrapPolicies are what `flux bootstrap` would apply on each
// cluster, as hub inputs: the flux-system Kustomization, placed on every
// member, at ./clusters/<env> by an override per member.
const bootstrapPolicies = `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 10m
  path: ./clusters/staging
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: flux-system, namespace: flux-system}
spec:
  resourceSelectors: [{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: flux-system}]
  placement: {clusterAffinity: {clusterNames: [staging, production]}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: production-path, namespace: flux-system}
spec:
  resourceSelectors: [{apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: flux-system}]
  overrideRules:
  - targetCluster: {clusterNames: [production]}
    overriders:
      plaintext: [{path: /spec/path, operator: replace, value: ./clusters/production}]
`

// localCharts serves the test chart for any chart whose source was
// found (a HelmRepository or an OCIRepository), records the repository
// URLs asked, and fails those that contain failing, when set.
type localCharts struct {
	failing string
	mu      sync.Mutex
	asked   map[string]bool
}

func (l *localCharts) Resolve(_ context.Context, ref source.Ref) (*source.Chart, error) {
	var url string
	switch {
	case ref.HelmRepository != nil:
		url = ref.HelmRepository.Spec.URL
	case ref.OCIRepository != nil:
		url = ref.OCIRepository.Spec.URL
	default:
		return nil, errors.New("no HelmRepository or OCIRepository")
	}
	l.mu.Lock()
	l.asked[url] = true
	l.mu.Unlock()
	if l.failing != "" && strings.Contains(url, l.failing) {
		return nil, &source.Error{Op: "fetch index", Source: source.Redact(url), Err: source.ErrUnreachable} // as the real resolvers name it
	}
	return &source.Chart{Chart: testchart.MustLoad(ref.Version)}, nil
}

func (l *localCharts) urls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for u := range l.asked {
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

// repoFleet is the whole glue a user writes for a repository: members,
// the repository, charts served locally.
func repoFleet(t *testing.T, repo *fleet.Repository) (*fleet.Fleet, map[string]*memory.Cluster) {
	t.Helper()
	cs := map[string]*memory.Cluster{"staging": memory.New("staging"), "production": memory.New("production")}
	f, err := fleet.New(fleet.Config{
		Members: []release.Member{
			{Cluster: cs["staging"], Facts: policy.Cluster{Labels: map[string]string{"env": "staging"}}},
			{Cluster: cs["production"], Facts: policy.Cluster{Labels: map[string]string{"env": "production"}}},
		},
		Repository:       repo,
		ReconcilerConfig: &reconcile.Config{PollInterval: time.Millisecond},
	})
	require.NoError(t, err)
	return f, cs
}

func TestRepositoryRunsProducedSourcesPerMember(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}}
	f, cs := repoFleet(t, &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:1", Charts: charts})
	in := decodeInputs(t, bootstrapPolicies)

	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	for _, m := range []string{"staging", "production"} {
		for _, k := range []fleet.Key{{Cluster: m, Namespace: "podinfo", Name: "podinfo"}, {Cluster: m, Namespace: "ingress-nginx", Name: "ingress-nginx"}} {
			p, ok := plan.Item(k)
			require.True(t, ok, "%s planned", k)
			assert.NoError(t, p.Err, "%s: its HelmRepository, produced by a Kustomization, is a source", k)
		}
	}
	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	assert.Equal(t, []string{"https://kubernetes.github.io/ingress-nginx", "https://stefanprodan.github.io/podinfo"}, charts.urls())
	for m, want := range map[string]string{"staging": "1", "production": "2"} {
		k := fleet.Key{Cluster: m, Namespace: "podinfo", Name: "podinfo"}
		p, _ := plan.Item(k)
		assert.Equal(t, want, fmt.Sprint(p.Release.Spec.Values["replicaCount"]), "%s: values of apps/%s", k, m)
		st, ok := f.Status(k)
		require.True(t, ok, m)
		assert.True(t, st.IsConditionTrue(release.ConditionReady), m)
		_, err := cs[m].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "podinfo"})
		assert.NoError(t, err, "%s: the apps Kustomization applied its Namespace", m)
	}

	again, err := f.Plan(ctx, in)
	require.NoError(t, err)
	assert.Empty(t, again.Errors)
	for _, p := range again.Items {
		assert.Equal(t, reconcile.ActionNone, p.Action, "%s/%s on %s", p.Release.Namespace, p.Release.Name, p.Cluster)
	}
}

// generatorRepo is a repository in Flux 2.7's layout: clusters/staging
// (and clusters/production) holds an ArtifactGenerator whose ExternalArtifact "apps" the apps
// Kustomization builds from.
func generatorRepo() fstest.MapFS {
	y := []byte(`apiVersion: source.extensions.fluxcd.io/v1beta1
kind: ArtifactGenerator
metadata: {name: apps, namespace: flux-system}
spec:
  sources: [{alias: repo, kind: GitRepository, name: flux-system}]
  artifacts:
  - name: apps
    copy: [{from: "@repo/apps/**", to: "@artifact/"}]
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./
  prune: true
  sourceRef: {kind: ExternalArtifact, name: apps}
`)
	return fstest.MapFS{"clusters/staging/generator.yaml": {Data: y}, "clusters/production/generator.yaml": {Data: y}}
}

// appsArtifact is the ExternalArtifact's tree.
var appsArtifact = fstest.MapFS{
	"kustomization.yaml": {Data: []byte("resources: [config.yaml]\n")},
	"config.yaml":        {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config, namespace: flux-system}\ndata: {greeting: hello}\n")},
}

func TestRepositoryArtifactGenerator(t *testing.T) {
	ctx := context.Background()
	in := decodeInputs(t, bootstrapPolicies)
	charts := &localCharts{asked: map[string]bool{}}
	generator := fleet.Key{Cluster: "staging", Namespace: "flux-system", Name: "flux-system", Kind: fleet.KindKustomization}

	t.Run("unserved artifact is a plan error naming the generator", func(t *testing.T) {
		f, _ := repoFleet(t, &fleet.Repository{Root: generatorRepo(), Charts: charts,
			MemberSources: map[string]kustomize.MapSources{"production": {"ExternalArtifact/flux-system/apps": {FS: appsArtifact}}}})
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		kp, ok := plan.Kustomization(generator)
		require.True(t, ok)
		var ue *fleet.UnservedArtifactError
		require.ErrorAs(t, kp.Err, &ue, plan.Table())
		assert.Equal(t, "flux-system/apps", ue.Generator)
		assert.Equal(t, "spec.artifacts[0].name", ue.Field)
		assert.Contains(t, kp.Err.Error(), "member staging: ArtifactGenerator flux-system/apps")
		for _, o := range kp.Objects {
			assert.NotEqual(t, fleet.ArtifactGeneratorKind, o.Object.Kind, "the generator is not applied (no `Absent apply`)")
		}
		// On production, where the member's sources serve it, it runs.
		kp, ok = plan.Kustomization(fleet.Key{Cluster: "production", Namespace: "flux-system", Name: "apps", Kind: fleet.KindKustomization})
		require.True(t, ok)
		assert.NoError(t, kp.Err)
		// On staging, what the Kustomization names is unserved: a plan
		// error naming the kind and the object.
		kp, ok = plan.Kustomization(fleet.Key{Cluster: "staging", Namespace: "flux-system", Name: "apps", Kind: fleet.KindKustomization})
		require.True(t, ok)
		require.Error(t, kp.Err)
		assert.Contains(t, kp.Err.Error(), "ExternalArtifact/flux-system/apps")
	})

	t.Run("served artifact runs", func(t *testing.T) {
		f, cs := repoFleet(t, &fleet.Repository{Root: generatorRepo(), Charts: charts,
			Sources: kustomize.MapSources{"ExternalArtifact/flux-system/apps": {FS: appsArtifact, Revision: "latest@sha256:1"}}})
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		require.Empty(t, plan.Errors, plan.Table())
		rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
		require.NoError(t, err, rep.Table())
		for m, c := range cs {
			_, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "flux-system", Name: "app-config"})
			assert.NoError(t, err, "%s: the ExternalArtifact's Kustomization ran", m)
		}
	})
}

func TestRepositoryServesInputSources(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}}
	f, _ := repoFleet(t, &fleet.Repository{Root: fstest.MapFS{}, Charts: charts})
	in := decodeInputs(t, `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {url: "https://charts.example.com"}
`+widgetsYAML(""))
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, "a release placed directly finds the HelmRepository decoded beside it")
	assert.Equal(t, []string{"https://charts.example.com"}, charts.urls())
}
