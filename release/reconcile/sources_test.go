package reconcile_test

import (
	"github.com/helmfleet/helmfleet/internal/fixture"

	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/provenance"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// chartRepo serves a real Helm repository: packaged podinfo charts and
// their index.
func chartRepo(t *testing.T, versions ...string) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	index := repo.NewIndexFile()
	for _, v := range versions {
		ch := testchart.MustLoad(v)
		// values-prod.yaml is a whole values file: listed, it replaces
		// the chart's values.yaml.
		prod := values.Merge(ch.Values, map[string]any{"replicaCount": 3, "ui": map[string]any{"color": "#aa0000"}})
		prodYAML, err := yaml.Marshal(prod)
		require.NoError(t, err)
		ch.Files = append(ch.Files, &chart.File{Name: "values-prod.yaml", Data: prodYAML})
		path, err := chartutil.Save(ch, dir)
		require.NoError(t, err)
		digest, err := provenance.DigestFile(path)
		require.NoError(t, err)
		require.NoError(t, index.MustAdd(ch.Metadata, filepath.Base(path), "", digest))
	}
	data, err := yaml.Marshal(index)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.yaml"), data, 0o644))
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv
}

func TestChartsFromHelmRepository(t *testing.T) {
	ctx := context.Background()
	srv := chartRepo(t, "6.4.0", "6.5.0", "6.5.3", "6.6.0-rc.1")
	objs, err := release.Decode(strings.NewReader(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 5m
  url: ` + srv.URL + `
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.*"
      valuesFiles: [values-prod.yaml]
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    ui: {message: hi}
`))
	require.NoError(t, err)
	resolver := source.Composite{HTTP: source.NewHTTPResolver(srv.Client(), source.HTTPOptions{})}
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.Charts(resolver, objs)})
	require.NoError(t, err)
	c := memory.New("m")
	rel := objs.Releases[0]
	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, "6.5.3", res.Helm.Chart.Metadata.Version, "6.5.* picks the newest 6.5 patch, no pre-releases")
	assert.Equal(t, int64(3), fixture.Replicas(t, c), "values-prod.yaml replaced the chart's values.yaml")
	assert.EqualValues(t, 3, res.Helm.Config["replicaCount"])
	assert.Equal(t, map[string]any{"color": "#aa0000", "message": "hi"}, res.Helm.Config["ui"])
	assert.True(t, strings.HasPrefix(rel.Status.LastAttemptedRevisionDigest, "sha256:"), rel.Status.LastAttemptedRevisionDigest)

	missing := rel.DeepCopy()
	missing.Spec.Chart.Spec.SourceRef.Name = "nope"
	_, err = rec.Reconcile(ctx, memory.New("m2"), missing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HelmRepository apps/nope not found among the sources")
}
