package release_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
)

// The fields helmfleet decodes and does not read are said in the
// warnings of status and plan, naming field and value; their defaults
// and Flux's own apiVersions are no warning.
func TestFieldWarningsUnreadFields(t *testing.T) {
	objs, err := release.Decode(strings.NewReader(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  persistentClient: false
  chart:
    metadata:
      labels: {team: web}
      annotations: {owner: ops}
    spec:
      chart: web
      interval: 1m
      reconcileStrategy: Revision
      sourceRef: {apiVersion: example.com/v1, kind: HelmRepository, name: charts}
`))
	require.NoError(t, err)
	rel := objs.Releases[0]
	require.NoError(t, rel.Validate())
	rel.Default()
	assert.Equal(t, []string{
		"spec.chart.metadata.annotations: map[owner:ops]: not read: helmfleet creates no HelmChart object to carry them",
		"spec.chart.metadata.labels: map[team:web]: not read: helmfleet creates no HelmChart object to carry them",
		"spec.chart.spec.interval: 1m0s: not read: the chart is looked up on each reconcile of the release (spec.interval 10m0s)",
		"spec.chart.spec.reconcileStrategy: Revision: not read: it applies to GitRepository and Bucket sources, which helmfleet does not serve; the chart is taken by version",
		"spec.chart.spec.sourceRef.apiVersion: example.com/v1: not read: the source is found by kind and name, as Flux does",
		"spec.persistentClient: false: not read: one Kubernetes client serves each reconcile (as true)",
	}, release.FieldWarnings(rel))

	rel.Spec.PersistentClient, rel.Spec.Chart = nil, nil
	rel.Spec.ChartRef = &release.CrossNamespaceSourceReference{APIVersion: "example.com/v1", Kind: "OCIRepository", Name: "web"}
	assert.Equal(t, []string{"spec.chartRef.apiVersion: example.com/v1: not read: the source is found by kind and name, as Flux does"},
		release.FieldWarnings(rel))

	objs, err = release.Decode(strings.NewReader(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  interval: 10m
  persistentClient: true
  chart:
    spec:
      chart: web
      reconcileStrategy: ChartVersion
      sourceRef: {apiVersion: source.toolkit.fluxcd.io/v1, kind: HelmRepository, name: charts}
`))
	require.NoError(t, err)
	rel = objs.Releases[0]
	rel.Default()
	assert.Empty(t, release.FieldWarnings(rel), "defaults and Flux's source apiVersion are acted on as Flux")
}

// A Kustomization's retryInterval and a foreign sourceRef apiVersion are
// read by nothing: its Result and Plan warnings say so.
func TestKustomizationFieldWarningsUnreadFields(t *testing.T) {
	k := &release.Kustomization{Spec: release.KustomizationSpec{
		RetryInterval: &metav1.Duration{Duration: time.Minute},
		SourceRef:     release.KustomizationSourceReference{APIVersion: "example.com/v1", Kind: "GitRepository", Name: "repo"},
	}}
	assert.Equal(t, []string{
		"spec.retryInterval: 1m0s: not read: a failed Kustomization is tried again when its caller runs it again",
		"spec.sourceRef.apiVersion: example.com/v1: not read: the source is found by kind and name, as Flux does",
	}, release.KustomizationFieldWarnings(k))
	k.Spec.RetryInterval, k.Spec.SourceRef.APIVersion = nil, "source.toolkit.fluxcd.io/v1"
	assert.Empty(t, release.KustomizationFieldWarnings(k))
}
