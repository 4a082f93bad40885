// Package testcharts holds three real community charts, packaged, as test
// data: podinfo, ingress-nginx and kube-prometheus-stack (see
// testdata/NOTICE for their sources and licence). They are what tests use
// to check that charts we did not write work as written: kubeVersion
// constraints, CRDs in crds/ and custom resources of them, hooks with their
// own ServiceAccount and RBAC, cluster-scoped RBAC, webhook
// configurations, IngressClass, LoadBalancer Services and DaemonSets.
package testcharts

import (
	"bytes"
	"embed"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
)

//go:embed testdata/*.tgz
var archives embed.FS

// A Name names one of the charts.
type Name string

// The charts.
const (
	Podinfo             Name = "podinfo"
	IngressNginx        Name = "ingress-nginx"
	KubePrometheusStack Name = "kube-prometheus-stack"
)

// All lists the charts, smallest first.
var All = []Name{Podinfo, IngressNginx, KubePrometheusStack}

var files = map[Name]string{
	Podinfo:             "testdata/podinfo-6.14.1.tgz",
	IngressNginx:        "testdata/ingress-nginx-4.15.1.tgz",
	KubePrometheusStack: "testdata/kube-prometheus-stack-88.5.3.tgz",
}

// Archive returns the packaged chart.
func Archive(n Name) ([]byte, error) {
	f, ok := files[n]
	if !ok {
		return nil, fmt.Errorf("testcharts: no chart %q", n)
	}
	return archives.ReadFile(f)
}

// Load returns a freshly loaded copy of the chart.
func Load(n Name) (*chart.Chart, error) {
	data, err := Archive(n)
	if err != nil {
		return nil, err
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("testcharts: %s: %w", n, err)
	}
	return c, nil
}

// DefaultValues are the values the tests install each chart with: none,
// except for kube-prometheus-stack, whose grafana dependency and the
// subcharts missing from our copy (kube-state-metrics,
// prometheus-node-exporter) are turned off.
func DefaultValues(n Name) map[string]any {
	if n != KubePrometheusStack {
		return map[string]any{}
	}
	return map[string]any{
		"grafana":          map[string]any{"enabled": false},
		"kubeStateMetrics": map[string]any{"enabled": false},
		"nodeExporter":     map[string]any{"enabled": false},
	}
}

// Release is a Release of chart n in namespace monitoring, with
// DefaultValues and Flux's defaults otherwise (Wait on), but a timeout
// that fails a test quickly.
func Release(n Name) *release.Release {
	return &release.Release{
		TypeMeta:   metav1.TypeMeta{APIVersion: release.APIVersion, Kind: release.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: string(n), Namespace: "monitoring", Generation: 1},
		Spec: release.Spec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Timeout:  &metav1.Duration{Duration: 10 * time.Second},
			Chart: &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{
				Chart:     string(n),
				SourceRef: release.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "community"},
			}},
			Values: DefaultValues(n),
		},
	}
}
