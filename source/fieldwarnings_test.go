package source_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/source"
)

// TestFieldWarnings: every source field helmfleet decodes and does not
// act on is warned when set, naming the object, the field path and its
// value; defaults and unset fields are not.
func TestFieldWarnings(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "flux-system"} }
	ref := func(name string) *source.LocalObjectReference { return &source.LocalObjectReference{Name: name} }
	ignore := "*.md"
	oci := &source.OCIRepository{ObjectMeta: meta("podinfo"), Spec: source.OCIRepositorySpec{
		URL: "oci://ghcr.io/stefanprodan/charts/podinfo", Interval: metav1.Duration{Duration: time.Minute},
		SecretRef: ref("oci-auth"), CertSecretRef: ref("oci-ca"), ProxySecretRef: ref("oci-proxy"), Provider: "aws",
		LayerSelector: &source.OCILayerSelector{MediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip", Operation: "copy"},
		Ignore:        &ignore, ServiceAccountName: "puller", Suspend: true}}
	assert.Equal(t, []string{
		`OCIRepository flux-system/podinfo: spec.certSecretRef (oci-ca) is not read: credentials, CA and proxy come from the resolver's options, the same for every source`,
		`OCIRepository flux-system/podinfo: spec.ignore ("*.md") is not read: the chart layer is loaded whole, no file is filtered`,
		`OCIRepository flux-system/podinfo: spec.interval (1m0s) is not read: the source is pulled when a release using it reconciles, every 10m0s: a new artifact is seen that much later`,
		`OCIRepository flux-system/podinfo: spec.layerSelector (mediaType "application/vnd.cncf.helm.chart.content.v1.tar+gzip", operation "copy") is not read: the Helm chart layer is taken by Helm's media type`,
		`OCIRepository flux-system/podinfo: spec.provider (aws) is not read: no cloud login; credentials, CA and proxy come from the resolver's options, the same for every source`,
		`OCIRepository flux-system/podinfo: spec.proxySecretRef (oci-proxy) is not read: credentials, CA and proxy come from the resolver's options, the same for every source`,
		`OCIRepository flux-system/podinfo: spec.secretRef (oci-auth) is not read: credentials, CA and proxy come from the resolver's options, the same for every source`,
		`OCIRepository flux-system/podinfo: spec.serviceAccountName (puller) is not read: no image pull secrets of a service account are used; credentials, CA and proxy come from the resolver's options, the same for every source`,
		`OCIRepository flux-system/podinfo: spec.suspend (true) is not read: helmfleet keeps no last artifact to serve, so a suspended source is still pulled when a release using it reconciles`,
	}, source.FieldWarnings(source.Ref{OCIRepository: oci}, 10*time.Minute))

	repo := &source.HelmRepository{ObjectMeta: meta("podinfo"), Spec: source.HelmRepositorySpec{
		URL: "https://stefanprodan.github.io/podinfo", Interval: metav1.Duration{Duration: time.Hour},
		SecretRef: ref("podinfo-auth"), PassCredentials: true, Provider: "aws",
		AccessFrom: &source.AccessFrom{NamespaceSelectors: []source.NamespaceSelector{{MatchLabels: map[string]string{"team": "a"}}}}}}
	hc := &source.HelmChart{ObjectMeta: meta("podinfo"), Spec: source.HelmChartSpec{Chart: "podinfo",
		Interval: metav1.Duration{Duration: 30 * time.Second}, ReconcileStrategy: "Revision", Suspend: true,
		SourceRef: source.LocalHelmChartSourceReference{APIVersion: "example.com/v1", Kind: source.KindHelmRepository, Name: "podinfo"}}}
	assert.Equal(t, []string{
		`HelmChart flux-system/podinfo: spec.interval (30s) is not read: the source is pulled when a release using it reconciles, every 5m0s: a new artifact is seen that much later`,
		`HelmChart flux-system/podinfo: spec.reconcileStrategy (Revision) is not read: it applies to GitRepository and Bucket sources, which helmfleet does not serve; the chart is taken by version`,
		`HelmChart flux-system/podinfo: spec.sourceRef.apiVersion (example.com/v1) is not read: the source is found by kind and name, as Flux does`,
		`HelmChart flux-system/podinfo: spec.suspend (true) is not read: helmfleet keeps no last artifact to serve, so a suspended source is still pulled when a release using it reconciles`,
		`HelmRepository flux-system/podinfo: spec.accessFrom (1 namespace selectors) is not read: a release of any namespace may use the repository (release/fleet's NoCrossNamespaceRefs refuses other namespaces instead)`,
		`HelmRepository flux-system/podinfo: spec.passCredentials (true) is not read: credentials are the resolver's *http.Client's, which alone decides what reaches the host of a chart URL`,
		`HelmRepository flux-system/podinfo: spec.secretRef (podinfo-auth) is not read: credentials, CA and proxy come from the resolver's options, the same for every source`,
	}, source.FieldWarnings(source.Ref{HelmRepository: repo, HelmChart: hc}, 5*time.Minute), "an interval longer than the release's, and a provider but of type oci, are no warning")

	repo.Spec.Type = source.RepositoryTypeOCI
	assert.Contains(t, source.FieldWarnings(source.Ref{HelmRepository: repo}, 5*time.Minute),
		`HelmRepository flux-system/podinfo: spec.provider (aws) is not read: no cloud login; credentials, CA and proxy come from the resolver's options, the same for every source`)
	repo.Spec.Provider = "generic"
	assert.NotContains(t, strings.Join(source.FieldWarnings(source.Ref{HelmRepository: repo}, 5*time.Minute), "\n"), "spec.provider", "generic is Flux's default")

	// What Flux's defaults and a plain source set is no warning.
	plain := &source.HelmChart{ObjectMeta: meta("podinfo"), Spec: source.HelmChartSpec{Chart: "podinfo",
		Interval: metav1.Duration{Duration: 5 * time.Minute}, ReconcileStrategy: "ChartVersion",
		SourceRef: source.LocalHelmChartSourceReference{APIVersion: source.APIVersion, Kind: source.KindHelmRepository, Name: "podinfo"}}}
	assert.Nil(t, source.FieldWarnings(source.Ref{HelmChart: plain}, 5*time.Minute))
}
