// Package testcharts holds five real community charts, packaged, as test
// data (see testdata/NOTICE for their sources and licence). They are what
// tests use to check that charts we did not write work as written:
//
//   - podinfo: a Deployment and a Service, and test hooks, the smallest;
//   - prometheus-node-exporter: a DaemonSet with hostNetwork, hostPID and
//     hostPath mounts of the node's /proc, /sys and /, a Service on the
//     host port;
//   - kube-state-metrics: cluster-wide RBAC (a ClusterRole listing every
//     kind it watches and its ClusterRoleBinding) beside a Deployment;
//   - ingress-nginx: hooks with their own ServiceAccount and RBAC, a
//     validating webhook configuration, an IngressClass and a LoadBalancer
//     Service;
//   - kube-prometheus-stack: kubeVersion constraints, CRDs in a subchart's
//     crds/ and custom resources of them, admission webhook hooks,
//     cluster-scoped RBAC, and the subcharts kube-state-metrics,
//     prometheus-node-exporter and prometheus-windows-exporter under
//     charts/ as `helm dependency build` leaves them (grafana, from another
//     repository, is not vendored).
//
// hack/testcharts.go rebuilds the charts from prometheus-community.
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
	NodeExporter        Name = "prometheus-node-exporter"
	KubeStateMetrics    Name = "kube-state-metrics"
	IngressNginx        Name = "ingress-nginx"
	KubePrometheusStack Name = "kube-prometheus-stack"
)

// All lists the charts, smallest first (in objects rendered with
// DefaultValues).
var All = []Name{Podinfo, NodeExporter, KubeStateMetrics, IngressNginx, KubePrometheusStack}

var files = map[Name]string{
	Podinfo:             "testdata/podinfo-6.14.1.tgz",
	NodeExporter:        "testdata/prometheus-node-exporter-4.56.1.tgz",
	KubeStateMetrics:    "testdata/kube-state-metrics-8.4.0.tgz",
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
// except for kube-prometheus-stack, whose grafana dependency, not in our
// copy, is turned off.
func DefaultValues(n Name) map[string]any {
	if n != KubePrometheusStack {
		return map[string]any{}
	}
	return map[string]any{
		"grafana": map[string]any{"enabled": false},
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
