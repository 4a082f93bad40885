package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// A HelmRelease of spec.chartRef names a HelmChart, which takes its chart
// from a HelmRepository: a change of that repository (its URL, its
// credentials) reconciles the release too, as a change of the repository
// of a spec.chart release does. A HelmChart of another repository, or of
// a repository of the same name in another namespace, does not.
func TestHelmRepositoryBehindHelmChartTriggers(t *testing.T) {
	const viaChartYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: via-chart, namespace: apps, generation: 1}
spec:
  interval: 10m
  chartRef: {kind: HelmChart, name: podinfo-chart}
`
	chart := func(ns, name, repo string) *source.HelmChart {
		return &source.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: source.HelmChartSpec{Chart: "podinfo", SourceRef: source.LocalHelmChartSourceReference{Kind: source.KindHelmRepository, Name: repo}}}
	}
	repo := func(ns, name string) *source.HelmRepository {
		return &source.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: source.HelmRepositorySpec{URL: "https://charts.example.com"}}
	}
	elsewhere := hr(t, viaChartYAML, func(r *release.Release) { r.Namespace, r.Name = "other", "elsewhere" })
	e := newEnv(t, Config{Resolver: source.ResolverFunc(nil)},
		hr(t, podinfoYAML), hr(t, viaChartYAML), elsewhere,
		chart("apps", "podinfo-chart", "podinfo"), chart("apps", "unrelated-chart", "other-repo"),
		chart("other", "podinfo-chart", "other-repo"))

	req := func(ns, name string) ctrlreconcile.Request {
		return ctrlreconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	assert.ElementsMatch(t, []ctrlreconcile.Request{req("apps", "podinfo"), req("apps", "via-chart")},
		e.r.mapHelmRepository(t.Context(), repo("apps", "podinfo")),
		"the spec.chart release and the chartRef release of a HelmChart built from the repository")
	assert.Empty(t, e.r.mapHelmRepository(t.Context(), repo("apps", "other-repo")), "unrelated-chart is built from it, but no release names unrelated-chart")
	assert.Equal(t, []ctrlreconcile.Request{req("other", "elsewhere")}, e.r.mapHelmRepository(t.Context(), repo("other", "other-repo")),
		"a HelmChart's repository is in the chart's namespace")
	assert.Empty(t, e.r.mapHelmRepository(t.Context(), repo("other", "podinfo")))
}
