package reconcile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// reconcilerOver decodes the YAML docs, whose repository URL is
// $REPO, and returns them and a Reconciler taking charts from their
// sources, with $REPO a repository serving podinfo 6.5.0.
func reconcilerOver(t *testing.T, docs string) (*release.Objects, *reconcile.Reconciler) {
	t.Helper()
	srv := chartRepo(t, "6.5.0")
	objs, err := release.Decode(strings.NewReader(strings.ReplaceAll(docs, "$REPO", srv.URL)))
	require.NoError(t, err)
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.Charts(source.NewHTTPResolver(srv.Client(), source.HTTPOptions{}), objs)})
	require.NoError(t, err)
	return objs, rec
}

// TestSourceFieldsNotReadAreWarned: fields of a release's HelmRepository
// that helmfleet does not act on (a secretRef, suspend) are named in the
// Plan's and the Result's warnings and in the release's FieldWarnings
// condition, after the release's own; the chart is still installed.
func TestSourceFieldsNotReadAreWarned(t *testing.T) {
	ctx := context.Background()
	objs, rec := reconcilerOver(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 1h
  url: $REPO
  secretRef: {name: podinfo-auth}
  suspend: true
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps, generation: 1}
spec:
  interval: 10m
  persistentClient: false
  chart:
    spec: {chart: podinfo, version: "6.5.0", sourceRef: {kind: HelmRepository, name: podinfo}}
`)
	rel := objs.Releases[0]
	want := []string{
		"spec.persistentClient: false: not read: one Kubernetes client serves each reconcile (as true)",
		"HelmRepository apps/podinfo: spec.secretRef (podinfo-auth) is not read: credentials, CA and proxy come from the resolver's options, the same for every source",
		"HelmRepository apps/podinfo: spec.suspend (true) is not read: helmfleet keeps no last artifact to serve, so a suspended source is still pulled when a release using it reconciles",
	}

	c := memory.New("member1")
	plan := rec.Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Equal(t, want, plan.Warnings)

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall}, res.Actions)
	assert.Equal(t, want, res.Warnings)
	cond := rel.Status.GetCondition(release.ConditionFieldWarnings)
	require.NotNil(t, cond)
	assert.Equal(t, strings.Join(want, "\n"), cond.Message)

	// The repository without them: only the release's own is said.
	objs.HelmRepositories[0].Spec.SecretRef, objs.HelmRepositories[0].Spec.Suspend = nil, false
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, want[:1], res.Warnings)
	assert.Equal(t, want[0], rel.Status.GetCondition(release.ConditionFieldWarnings).Message)
}

// TestHelmChartSourceKindIsRead: a HelmChart whose spec.sourceRef names
// another kind than HelmRepository is not served by the HelmRepository
// of that name: the release fails with an error naming the HelmChart, the
// field and the kind, and nothing is installed.
func TestHelmChartSourceKindIsRead(t *testing.T) {
	ctx := context.Background()
	objs, rec := reconcilerOver(t, `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: apps}
spec: {interval: 10m, url: $REPO}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart: podinfo
  version: "6.5.0"
  sourceRef: {kind: HelmRepository, name: podinfo}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chartRef: {kind: HelmChart, name: podinfo}
`)

	// Named right, the chart comes from the repository.
	_, err := rec.Reconcile(ctx, memory.New("m1"), objs.Releases[0].DeepCopy())
	require.NoError(t, err)

	for _, kind := range []string{"GitRepository", "OCIRepository"} {
		objs.HelmCharts[0].Spec.SourceRef.Kind = kind
		c := memory.New("m2")
		res, err := rec.Reconcile(ctx, c, objs.Releases[0].DeepCopy())
		require.Error(t, err, kind)
		assert.Contains(t, err.Error(), `HelmChart apps/podinfo: spec.sourceRef.kind: "`+kind+`" sources are not served (only HelmRepository)`)
		assert.Empty(t, res.Actions, kind)
	}
}
