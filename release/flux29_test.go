package release_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
)

// flux29 is Flux 2.9 YAML that helmfleet refused to decode before:
// spec.postRenderStrategy, chartRef.kind ExternalArtifact, a health
// check without kind, and a Kustomization's spec.ignore and
// spec.buildMetadata.
const flux29 = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 5m
  chartRef: {kind: OCIRepository, name: web}
  postRenderStrategy: combined
  postRenderers:
  - kustomize:
      patches:
      - patch: '[{"op": "add", "path": "/metadata/labels/x", "value": "y"}]'
        target: {kind: Deployment}
  healthCheckExprs:
  - apiVersion: example.com/v1
    current: status.ready
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: art, namespace: apps}
spec:
  interval: 5m
  chartRef: {kind: ExternalArtifact, name: chart}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  prune: true
  sourceRef: {kind: GitRepository, name: repo}
  buildMetadata: [originAnnotations]
  ignore:
  - paths: [/spec/replicas]
    target: {kind: Deployment}
`

func TestFlux29FieldsDecode(t *testing.T) {
	objs, err := release.Decode(strings.NewReader(flux29))
	require.NoError(t, err)
	require.Len(t, objs.Releases, 2)
	require.Len(t, objs.Kustomizations, 1)

	web := objs.Releases[0]
	assert.Equal(t, release.PostRenderStrategyCombined, web.Spec.PostRenderStrategy)
	require.NoError(t, web.Validate(), "a health check without kind is Flux 2.9")
	assert.Equal(t, []string{
		"spec.postRenderStrategy: combined: hooks are not post-rendered (nohooks): Helm v3 engine",
	}, release.FieldWarnings(web))

	err = objs.Releases[1].Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.chartRef.kind")
	assert.Contains(t, err.Error(), "ExternalArtifact")
	assert.Contains(t, err.Error(), "no ExternalArtifact source")

	k := objs.Kustomizations[0]
	assert.Equal(t, "/spec/replicas", k.Spec.Ignore[0].Paths[0])
	err = k.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.buildMetadata")
	assert.Contains(t, err.Error(), "originAnnotations")
	assert.Contains(t, err.Error(), "spec.ignore[0].paths")
	assert.Contains(t, err.Error(), "/spec/replicas")
}

func TestFieldWarningsServerSideApply(t *testing.T) {
	on := true
	rel := &release.Release{Spec: release.Spec{
		Install:      &release.Install{ServerSideApply: &on},
		Upgrade:      &release.Upgrade{ServerSideApply: release.ServerSideApplyEnabled},
		Rollback:     &release.Rollback{ServerSideApply: release.ServerSideApplyAuto},
		WaitStrategy: &release.WaitStrategy{Name: release.WaitStrategyLegacy},
	}}
	assert.Equal(t, []string{
		"spec.install.serverSideApply: true: applied client-side: Helm v3 engine",
		"spec.upgrade.serverSideApply: enabled: applied client-side: Helm v3 engine",
		"spec.waitStrategy.name: legacy: waited with kstatus (poller): helmfleet has no legacy wait",
	}, release.FieldWarnings(rel))
	rel.Spec.WaitStrategy.Name = release.WaitStrategyPoller
	rel.Spec.Install, rel.Spec.Upgrade = nil, nil
	assert.Empty(t, release.FieldWarnings(rel), "poller and auto are acted on")
}

func TestDecodeV2Beta2IsReadForMigration(t *testing.T) {
	objs, err := release.Decode(strings.NewReader(`apiVersion: helm.toolkit.fluxcd.io/v2beta2
kind: HelmRelease
metadata: {name: old, namespace: apps}
spec:
  interval: 5m
  chart:
    spec:
      chart: web
      sourceRef: {kind: HelmRepository, name: repo}
`))
	require.NoError(t, err)
	require.Len(t, objs.Releases, 1)
	assert.Equal(t, []string{"HelmRelease apps/old: helm.toolkit.fluxcd.io/v2beta2 is read for migration only (Flux removed it): it was converted to helm.toolkit.fluxcd.io/v2; write it as helm.toolkit.fluxcd.io/v2"}, objs.Warnings)
}

func TestRecordHistoryKeepsFiveNewestFirst(t *testing.T) {
	var st release.KustomizationStatus
	at := time.Unix(1_800_000_000, 0)
	for i := range 7 {
		st.RecordHistory(fmt.Sprintf("sha256:%d", i), at.Add(time.Duration(i)*time.Minute), time.Second, release.ReasonReconciliationSucceeded, nil)
	}
	st.RecordHistory("sha256:4", at.Add(time.Hour), 2*time.Second, release.ReasonReconciliationSucceeded, nil)
	var got []string
	for _, s := range st.History {
		got = append(got, fmt.Sprintf("%s×%d", s.Digest, s.TotalReconciliations))
	}
	assert.Equal(t, []string{"sha256:4×2", "sha256:6×1", "sha256:5×1", "sha256:3×1", "sha256:2×1"}, got)
	assert.Equal(t, at.Add(4*time.Minute), st.History[0].FirstReconciled.Time, "an update keeps when it was first reconciled")

	st.RecordHistory("sha256:4", at.Add(2*time.Hour), time.Second, release.ReasonHealthCheckFailed, nil)
	assert.Equal(t, release.ReasonHealthCheckFailed, st.History[0].LastReconciledStatus, "another outcome is another snapshot")
	assert.Equal(t, int64(1), st.History[0].TotalReconciliations)
}
