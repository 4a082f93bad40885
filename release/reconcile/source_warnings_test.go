package reconcile_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// digestlessRepo serves podinfo 6.5.0 from an index whose entry has no
// digest, as hand-written and proxied indexes do.
func digestlessRepo(t *testing.T) *httptest.Server {
	t.Helper()
	dir := t.TempDir()
	path, err := chartutil.Save(testchart.MustLoad("6.5.0"), dir)
	require.NoError(t, err)
	index := repo.NewIndexFile()
	require.NoError(t, index.MustAdd(testchart.MustLoad("6.5.0").Metadata, filepath.Base(path), "", ""))
	data, err := yaml.Marshal(index)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "index.yaml"), data, 0o644))
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv
}

// TestAcceptedUnverifiedChartIsSaid: a chart accepted from an index
// entry without a digest (the HelmRepository opts in) is installed, and
// the Result, the Plan and the status's SourceWarnings condition say it
// was accepted unverified; once the chart comes with a digest the
// condition goes.
func TestAcceptedUnverifiedChartIsSaid(t *testing.T) {
	ctx := context.Background()
	bare, signed := digestlessRepo(t), chartRepo(t, "6.5.0")
	decode := func(url string) *release.Objects {
		objs, err := release.Decode(strings.NewReader(`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: podinfo
  namespace: apps
  annotations: {source.helmfleet.io/allow-missing-digest: "true"}
spec: {interval: 5m, url: ` + url + `}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps, generation: 1}
spec:
  interval: 10m
  chart:
    spec: {chart: podinfo, version: "6.5.0", sourceRef: {kind: HelmRepository, name: podinfo}}
`))
		require.NoError(t, err)
		return objs
	}
	want := "chart podinfo version 6.5.0 from repository apps/podinfo has no digest in its index entry: accepted unverified (allow-missing-digest)"

	objs := decode(bare.URL)
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.Charts(source.NewHTTPResolver(bare.Client(), source.HTTPOptions{}), objs)})
	require.NoError(t, err)
	c := memory.New("member1")
	rel := objs.Releases[0]

	plan := rec.Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Contains(t, plan.Warnings, want)

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, res.Actions)
	assert.Contains(t, res.Warnings, want)
	cond := rel.Status.GetCondition(release.ConditionSourceWarnings)
	require.NotNil(t, cond, "the status says the chart was accepted unverified")
	assert.Equal(t, "True", string(cond.Status))
	assert.Equal(t, release.ReasonAcceptedWithWarnings, cond.Reason)
	assert.Equal(t, want, cond.Message)

	// The same chart, now with its digest: nothing to say any more.
	signedObjs := decode(signed.URL)
	rec, err = reconcile.New(reconcile.Config{Charts: reconcile.Charts(source.NewHTTPResolver(signed.Client(), source.HTTPOptions{}), signedObjs)})
	require.NoError(t, err)
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.NotContains(t, res.Warnings, want)
	assert.Nil(t, rel.Status.GetCondition(release.ConditionSourceWarnings))
}
