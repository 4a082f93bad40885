package fleet_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// euMirrors mirror ghcr.io and the podinfo repository on the members
// labelled region=eu.
var euMirrors = []fleet.Mirror{{
	Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
	Rewrites: []fleet.Rewrite{
		{From: "oci://ghcr.io/", To: "oci://registry.eu.example/ghcr/"},
		{From: "https://stefanprodan.github.io/podinfo", To: "https://mirror.eu.example/podinfo"},
	},
}}

// mirroredFleet is repoFleet's fleet, staging in region eu, with mirrors.
func mirroredFleet(t *testing.T, repo *fleet.Repository, mirrors []fleet.Mirror) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(fleet.Config{
		Members: []release.Member{
			{Cluster: memory.New("staging"), Facts: policy.Cluster{Labels: map[string]string{"env": "staging", "region": "eu"}}},
			{Cluster: memory.New("production"), Facts: policy.Cluster{Labels: map[string]string{"env": "production", "region": "us"}}},
		},
		Repository:       repo,
		Mirrors:          mirrors,
		ReconcilerConfig: &reconcile.Config{PollInterval: time.Millisecond},
	})
	require.NoError(t, err)
	return f
}

// An OCIRepository among the inputs, charted by a release on every member.
const ociInput = `apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: podinfo-oci, namespace: apps}
spec:
  url: oci://ghcr.io/stefanprodan/charts/podinfo
  ref: {tag: "6.5.0"}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: widgets, namespace: apps}
spec:
  interval: 10m
  chartRef: {kind: OCIRepository, name: podinfo-oci}
`

// The mirror rules of the members labelled region=eu rewrite, there
// only, the HelmRepository a Kustomization produces and the
// OCIRepository of the inputs; the plan lists each rewrite.
func TestMirrorsRewriteSourcesPerMember(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}}
	f := mirroredFleet(t, &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:1", Charts: charts}, euMirrors)
	in := decodeInputs(t, bootstrapPolicies+"---\n"+ociInput+placeOn("widgets", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", everywhere))

	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	assert.ElementsMatch(t, []string{
		"https://kubernetes.github.io/ingress-nginx",                 // no rule matches it
		"https://stefanprodan.github.io/podinfo",                     // production
		"https://mirror.eu.example/podinfo",                          // staging
		"oci://ghcr.io/stefanprodan/charts/podinfo",                  // production
		"oci://registry.eu.example/ghcr/stefanprodan/charts/podinfo", // staging
	}, charts.urls())
	assert.Equal(t, []fleet.MirroredSource{
		{Member: "staging", Source: "OCIRepository apps/podinfo-oci", Field: "spec.url",
			URL: "oci://ghcr.io/stefanprodan/charts/podinfo", Effective: "oci://registry.eu.example/ghcr/stefanprodan/charts/podinfo", By: "Mirrors[0].Rewrites[0]"},
		{Member: "staging", Source: "HelmRepository podinfo/podinfo", Field: "spec.url",
			URL: "https://stefanprodan.github.io/podinfo", Effective: "https://mirror.eu.example/podinfo", By: "Mirrors[0].Rewrites[1]"},
	}, plan.Mirrored)
	assert.Contains(t, plan.Table(), "mirror: member staging: HelmRepository podinfo/podinfo: spec.url: https://stefanprodan.github.io/podinfo mirrored to https://mirror.eu.example/podinfo (Mirrors[0].Rewrites[1])\n")
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"mirrored":[{"member":"staging","source":"OCIRepository apps/podinfo-oci","field":"spec.url","url":"oci://ghcr.io/stefanprodan/charts/podinfo","effective":"oci://registry.eu.example/ghcr/stefanprodan/charts/podinfo","by":"Mirrors[0].Rewrites[0]"}`)
	for _, p := range in.Sources.OCIRepositories {
		assert.Equal(t, "oci://ghcr.io/stefanprodan/charts/podinfo", p.Spec.URL, "the inputs are not modified")
	}
}

// A chart that fails through a mirror names the member, the source and
// both URLs.
func TestMirrorsFailureNamesBothURLs(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}, failing: "mirror.eu.example"}
	f := mirroredFleet(t, &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:1", Charts: charts}, euMirrors)
	plan, err := f.Plan(ctx, decodeInputs(t, bootstrapPolicies))
	require.NoError(t, err)
	it, ok := plan.Item(fleet.Key{Cluster: "staging", Namespace: "podinfo", Name: "podinfo"})
	require.True(t, ok)
	var me *fleet.MirrorError
	require.ErrorAs(t, it.Err, &me, plan.Table())
	assert.Equal(t, fleet.MirrorError{Member: "staging", Source: "HelmRepository podinfo/podinfo",
		URL: "https://stefanprodan.github.io/podinfo", Effective: "https://mirror.eu.example/podinfo", Err: me.Err}, *me)
	assert.ErrorIs(t, it.Err, source.ErrUnreachable)
	assert.Contains(t, it.Err.Error(), "member staging: HelmRepository podinfo/podinfo: mirror of https://stefanprodan.github.io/podinfo at https://mirror.eu.example/podinfo: ")
	it, _ = plan.Item(fleet.Key{Cluster: "production", Namespace: "podinfo", Name: "podinfo"})
	assert.NoError(t, it.Err, "production has no mirror")
}

// An index on the mirror that lists absolute chart URLs on the original
// host: the chart is downloaded from the mirror, and the original host
// is never asked (air-gapped).
func TestMirrorsRewriteChartURLsOfAnIndex(t *testing.T) {
	ctx := context.Background()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the original host was asked for %s", r.URL)
		http.Error(w, "air-gapped", http.StatusForbidden)
	}))
	defer origin.Close()
	ch := testchart.MustLoad("1.0.0")
	ch.Metadata.Name = "widgets"
	path, err := chartutil.Save(ch, t.TempDir())
	require.NoError(t, err)
	archive, err := os.ReadFile(path)
	require.NoError(t, err)
	sum := sha256.Sum256(archive)
	index := "apiVersion: v1\nentries:\n  widgets:\n  - {name: widgets, version: 1.0.0, apiVersion: v2, digest: " + hex.EncodeToString(sum[:]) +
		", urls: [\"" + origin.URL + "/charts/widgets-1.0.0.tgz\"]}\n"
	var mu sync.Mutex
	var served []string
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.URL.Path)
		mu.Unlock()
		switch r.URL.Path {
		case "/origin/charts/index.yaml":
			_, _ = w.Write([]byte(index))
		case "/origin/charts/widgets-1.0.0.tgz":
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	defer mirror.Close()

	resolver := source.NewHTTPResolver(http.DefaultClient, source.HTTPOptions{})
	mirrors := []fleet.Mirror{{Members: []string{"staging"}, Rewrites: []fleet.Rewrite{{From: origin.URL, To: mirror.URL + "/origin"}}}}
	f := mirroredFleet(t, &fleet.Repository{Root: fstest.MapFS{}, Charts: resolver}, mirrors)
	in := decodeInputs(t, `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: apps}
spec: {url: "`+origin.URL+`/charts"}
`+widgetsYAML(""))
	in.Policies.Propagation[0].Spec.Placement.ClusterAffinity.ClusterNames = []string{"staging"}
	in.Policies.Propagation[0].Spec.Placement.ClusterAffinity.LabelSelector = nil
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	it, ok := plan.Item(fleet.Key{Cluster: "staging", Namespace: "apps", Name: "widgets"})
	require.True(t, ok)
	assert.Equal(t, "1.0.0", it.Version)
	mu.Lock()
	assert.Equal(t, []string{"/origin/charts/index.yaml", "/origin/charts/widgets-1.0.0.tgz"}, served)
	mu.Unlock()

	// A mirror without the archive: the error names the chart URL the
	// index listed and where it was asked.
	index = strings.ReplaceAll(index, "widgets-1.0.0.tgz", "widgets-gone.tgz")
	resolver = source.NewHTTPResolver(http.DefaultClient, source.HTTPOptions{})
	f = mirroredFleet(t, &fleet.Repository{Root: fstest.MapFS{}, Charts: resolver}, mirrors)
	plan, err = f.Plan(ctx, in)
	require.NoError(t, err)
	it, _ = plan.Item(fleet.Key{Cluster: "staging", Namespace: "apps", Name: "widgets"})
	var me *fleet.MirrorError
	require.True(t, errors.As(it.Err, &me), "%v", it.Err)
	assert.Equal(t, origin.URL+"/charts/widgets-gone.tgz", me.URL)
	assert.Equal(t, mirror.URL+"/origin/charts/widgets-gone.tgz", me.Effective)
	assert.ErrorIs(t, it.Err, source.ErrNotFound)
}

// Mirrors are refused when they would do nothing or change a source's
// kind.
func TestMirrorsConfig(t *testing.T) {
	members := []release.Member{{Cluster: memory.New("staging")}}
	repo := &fleet.Repository{Root: fstest.MapFS{}, Charts: &localCharts{asked: map[string]bool{}}}
	for name, tc := range map[string]struct {
		repo    *fleet.Repository
		mirrors []fleet.Mirror
		want    string
	}{
		"without repository": {nil, euMirrors, "fleet: config: Mirrors: they need Repository, whose sources the fleet resolves charts from"},
		"scheme change": {repo, []fleet.Mirror{{Rewrites: []fleet.Rewrite{{From: "oci://ghcr.io/", To: "https://mirror/"}}}},
			`fleet: config: Mirrors[0].Rewrites[0]: To: "https://mirror/" turns From "oci://ghcr.io/" into another kind of source`},
		"no host": {repo, []fleet.Mirror{{Rewrites: []fleet.Rewrite{{From: "ghcr.io/", To: "oci://mirror/"}}}},
			`fleet: config: Mirrors[0].Rewrites[0]: From: "ghcr.io/" is not an oci://, https:// or http:// URL prefix with a host`},
		"unknown member": {repo, []fleet.Mirror{{Members: []string{"prod"}}}, `fleet: config: Mirrors[0].Members: "prod" is not a member`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := fleet.New(fleet.Config{Members: members, Repository: tc.repo, Mirrors: tc.mirrors})
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
		})
	}
}

// Karmada's override policies reach the chart sources: an OverridePolicy
// that selects the HelmRepository a Kustomization produces rewrites its
// URL on the members it targets, before the mirror rules, and the plan
// names the policy.
func TestMirrorsOverridePolicyReachesSources(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}}
	f := mirroredFleet(t, &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:1", Charts: charts}, euMirrors)
	in := decodeInputs(t, bootstrapPolicies+podinfoURLOverride("production, staging", "https://stefanprodan.github.io/podinfo/us"))
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	assert.ElementsMatch(t, []string{
		"https://kubernetes.github.io/ingress-nginx",
		"https://stefanprodan.github.io/podinfo/us", // production: the policy
		"https://mirror.eu.example/podinfo/us",      // staging: the policy, then the mirror
	}, charts.urls())
	assert.Equal(t, []fleet.MirroredSource{
		{Member: "production", Source: "HelmRepository podinfo/podinfo", Field: "spec.url",
			URL: "https://stefanprodan.github.io/podinfo", Effective: "https://stefanprodan.github.io/podinfo/us", By: "OverridePolicy podinfo/podinfo-mirror"},
		{Member: "staging", Source: "HelmRepository podinfo/podinfo", Field: "spec.url",
			URL: "https://stefanprodan.github.io/podinfo", Effective: "https://mirror.eu.example/podinfo/us",
			By: "OverridePolicy podinfo/podinfo-mirror, then Mirrors[0].Rewrites[1]"},
	}, plan.Mirrored)
}

// An override policy that breaks a source is a plan error naming the
// member, the source and the field, and the source is not served there:
// nothing is fetched from a URL the policies did not mean.
func TestMirrorsOverridePolicyBreakingASource(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}}
	f := mirroredFleet(t, &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:1", Charts: charts}, nil)
	in := decodeInputs(t, bootstrapPolicies+podinfoURLOverride("production", "ftp://charts.example/podinfo"))
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	var msgs []string
	for _, e := range plan.Errors {
		msgs = append(msgs, e.Error())
	}
	joined := strings.Join(msgs, "\n")
	assert.Contains(t, joined, "member production: HelmRepository podinfo/podinfo: after override policies: ")
	assert.Contains(t, joined, "spec.url")
	assert.NotContains(t, charts.urls(), "ftp://charts.example/podinfo")
	it, _ := plan.Item(fleet.Key{Cluster: "production", Namespace: "podinfo", Name: "podinfo"})
	require.Error(t, it.Err)
	assert.Contains(t, it.Err.Error(), "HelmRepository podinfo/podinfo not found among the sources")
	it, _ = plan.Item(fleet.Key{Cluster: "staging", Namespace: "podinfo", Name: "podinfo"})
	assert.NoError(t, it.Err, "staging is not targeted")
}

// podinfoURLOverride is an OverridePolicy that replaces the spec.url of
// the HelmRepository podinfo/podinfo with url on clusters.
func podinfoURLOverride(clusters, url string) string {
	return `---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-mirror, namespace: podinfo}
spec:
  resourceSelectors: [{apiVersion: source.toolkit.fluxcd.io/v1, kind: HelmRepository, name: podinfo}]
  overrideRules:
  - targetCluster: {clusterNames: [` + clusters + `]}
    overriders:
      plaintext: [{path: /spec/url, operator: replace, value: "` + url + `"}]
`
}

// A mirror whose URL carries credentials (a rule's To, or a source's
// url) never shows them: plans, their JSON and errors mask them.
func TestMirrorsMaskCredentials(t *testing.T) {
	ctx := context.Background()
	charts := &localCharts{asked: map[string]bool{}, failing: "mirror.eu.example"}
	mirrors := []fleet.Mirror{{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}},
		Rewrites: []fleet.Rewrite{{From: "https://stefanprodan.github.io/podinfo", To: "https://bob:s3cret@mirror.eu.example/podinfo?token=T0KEN"}},
	}}
	f := mirroredFleet(t, &fleet.Repository{Root: exampleRepo(), Revision: "main@sha1:1", Charts: charts}, mirrors)
	plan, err := f.Plan(ctx, decodeInputs(t, bootstrapPolicies))
	require.NoError(t, err)
	require.Len(t, plan.Mirrored, 1)
	assert.Equal(t, "https://***@mirror.eu.example/podinfo?token=***", plan.Mirrored[0].Effective)
	it, ok := plan.Item(fleet.Key{Cluster: "staging", Namespace: "podinfo", Name: "podinfo"})
	require.True(t, ok)
	var me *fleet.MirrorError
	require.ErrorAs(t, it.Err, &me, plan.Table())
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	for what, text := range map[string]string{"table": plan.Table(), "json": string(data), "error": it.Err.Error()} {
		assert.NotContains(t, text, "s3cret", what)
		assert.NotContains(t, text, "T0KEN", what)
	}
}
