package release

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/source"
)

func validRelease() *Release {
	r := &Release{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "apps"},
		Spec: Spec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Chart: &HelmChartTemplate{Spec: HelmChartTemplateSpec{
				Chart:     "podinfo",
				Version:   "6.5.*",
				SourceRef: CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"},
			}},
		},
	}
	r.Default()
	return r
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *Release)
		path   string
		value  string
		msg    string
	}{
		{name: "chart and chartRef", path: "spec.chartRef", msg: "must not be set together with spec.chart",
			mutate: func(r *Release) { r.Spec.ChartRef = &CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "p"} }},
		{name: "neither chart nor chartRef", path: "spec.chart", msg: "one of spec.chart and spec.chartRef is required",
			mutate: func(r *Release) { r.Spec.Chart = nil }},
		{name: "chart name missing", path: "spec.chart.spec.chart", msg: "is required",
			mutate: func(r *Release) { r.Spec.Chart.Spec.Chart = "" }},
		{name: "bad source kind", path: "spec.chart.spec.sourceRef.kind", value: "OCIRepository",
			msg:    "must be one of HelmRepository, GitRepository, Bucket",
			mutate: func(r *Release) { r.Spec.Chart.Spec.SourceRef.Kind = "OCIRepository" }},
		{name: "bad chartRef kind", path: "spec.chartRef.kind", value: "HelmRepository",
			msg: "must be one of OCIRepository, HelmChart",
			mutate: func(r *Release) {
				r.Spec.Chart = nil
				r.Spec.ChartRef = &CrossNamespaceSourceReference{Kind: "HelmRepository", Name: "p", Namespace: "apps"}
			}},
		{name: "bad semver", path: "spec.chart.spec.version", value: ">= 1.x.y.z",
			msg:    "is neither a version nor a semver constraint",
			mutate: func(r *Release) { r.Spec.Chart.Spec.Version = ">= 1.x.y.z" }},
		{name: "negative duration", path: "spec.upgrade.timeout", value: "-1m0s", msg: "must not be negative",
			mutate: func(r *Release) { r.Spec.Upgrade.Timeout = dur(-time.Minute) }},
		{name: "missing interval", path: "spec.interval", value: "0s", msg: "is required and must be positive",
			mutate: func(r *Release) { r.Spec.Interval = metav1.Duration{} }},
		{name: "bad JSON pointer", path: "spec.driftDetection.ignore[0].paths[1]", value: "spec/replicas",
			msg: "must be empty or start with '/'",
			mutate: func(r *Release) {
				r.Spec.DriftDetection.Ignore = []IgnoreRule{{Paths: []string{"", "spec/replicas"}}}
			}},
		{name: "bad JSON pointer escape", path: "spec.driftDetection.ignore[0].paths[0]", value: "/a~2b",
			msg:    "must be followed by '0' or '1'",
			mutate: func(r *Release) { r.Spec.DriftDetection.Ignore = []IgnoreRule{{Paths: []string{"/a~2b"}}} }},
		{name: "ignore rule without paths", path: "spec.driftDetection.ignore[0].paths", msg: "is required",
			mutate: func(r *Release) { r.Spec.DriftDetection.Ignore = []IgnoreRule{{}} }},
		{name: "bad target regex", path: "spec.driftDetection.ignore[0].target.kind", value: "Deploy(",
			msg: "invalid regular expression",
			mutate: func(r *Release) {
				r.Spec.DriftDetection.Ignore = []IgnoreRule{{Paths: []string{"/spec"}, Target: &Selector{Kind: "Deploy("}}}
			}},
		{name: "bad label selector", path: "spec.driftDetection.ignore[0].target.labelSelector", value: "app in (",
			msg: "invalid selector",
			mutate: func(r *Release) {
				r.Spec.DriftDetection.Ignore = []IgnoreRule{{Paths: []string{"/spec"}, Target: &Selector{LabelSelector: "app in ("}}}
			}},
		{name: "bad drift mode", path: "spec.driftDetection.mode", value: "on", msg: "must be one of enabled, warn, disabled",
			mutate: func(r *Release) { r.Spec.DriftDetection.Mode = "on" }},
		{name: "bad crds policy", path: "spec.install.crds", value: "Replace", msg: "must be one of Skip, Create, CreateReplace",
			mutate: func(r *Release) { r.Spec.Install.CRDs = "Replace" }},
		{name: "bad strategy", path: "spec.upgrade.strategy.name", value: "RetryForever",
			msg:    "must be one of RemediateOnFailure, RetryOnFailure",
			mutate: func(r *Release) { r.Spec.Upgrade.Strategy.Name = "RetryForever" }},
		{name: "bad remediation strategy", path: "spec.upgrade.remediation.strategy", value: "rollforward",
			msg:    "must be one of rollback, uninstall",
			mutate: func(r *Release) { r.Spec.Upgrade.Remediation.Strategy = valuePtr(RemediationStrategy("rollforward")) }},
		{name: "bad deletion propagation", path: "spec.uninstall.deletionPropagation", value: "cascade",
			msg:    "must be one of background, foreground, orphan",
			mutate: func(r *Release) { r.Spec.Uninstall.DeletionPropagation = valuePtr("cascade") }},
		{name: "bad valuesFrom kind", path: "spec.valuesFrom[0].kind", value: "Pod", msg: "must be one of ConfigMap, Secret",
			mutate: func(r *Release) { r.Spec.ValuesFrom = []ValuesReference{{Kind: "Pod", Name: "x"}} }},
		{name: "valuesFrom name missing", path: "spec.valuesFrom[0].name", msg: "is required",
			mutate: func(r *Release) { r.Spec.ValuesFrom = []ValuesReference{{Kind: "Secret"}} }},
		{name: "bad targetPath", path: "spec.valuesFrom[0].targetPath", value: "tls crt",
			msg: "must be a Helm --set path",
			mutate: func(r *Release) {
				r.Spec.ValuesFrom = []ValuesReference{{Kind: "Secret", Name: "s", TargetPath: "tls crt"}}
			}},
		{name: "empty targetPath segment", path: "spec.valuesFrom[0].targetPath", value: "a..b",
			msg: "has an empty path segment",
			mutate: func(r *Release) {
				r.Spec.ValuesFrom = []ValuesReference{{Kind: "Secret", Name: "s", TargetPath: "a..b"}}
			}},
		{name: "release name too long", path: "spec.releaseName", value: strings.Repeat("a", 54),
			msg:    "must be at most 53 characters, is 54",
			mutate: func(r *Release) { r.Spec.ReleaseName = strings.Repeat("a", 54) }},
		{name: "release name not DNS", path: "spec.releaseName", value: "Pod_Info",
			msg:    "must consist of lower case letters",
			mutate: func(r *Release) { r.Spec.ReleaseName = "Pod_Info" }},
		{name: "name missing", path: "metadata.name", msg: "is required",
			mutate: func(r *Release) { r.Name = "" }},
		{name: "namespace missing", path: "metadata.namespace", msg: "is required",
			mutate: func(r *Release) { r.Namespace = "" }},
		{name: "bad target namespace", path: "spec.targetNamespace", value: "Web",
			msg:    "a lowercase RFC 1123 label",
			mutate: func(r *Release) { r.Spec.TargetNamespace = "Web" }},
		{name: "depends on itself", path: "spec.dependsOn[1].name", value: "podinfo", msg: "cannot depend on itself",
			mutate: func(r *Release) {
				r.Spec.DependsOn = []DependencyReference{{Name: "podinfo", Namespace: "other"}, {Name: "podinfo"}}
			}},
		{name: "dependency name missing", path: "spec.dependsOn[0].name", msg: "is required",
			mutate: func(r *Release) { r.Spec.DependsOn = []DependencyReference{{Namespace: "apps"}} }},
		{name: "negative maxHistory", path: "spec.maxHistory", value: "-1", msg: "must not be negative",
			mutate: func(r *Release) { r.Spec.MaxHistory = valuePtr(-1) }},
		{name: "test filter without name", path: "spec.test.filters[0].name", msg: "is required",
			mutate: func(r *Release) { r.Spec.Test.Filters = []Filter{{Exclude: true}} }},
		{name: "patch not YAML", path: "spec.postRenderers[0].kustomize.patches[0].patch", value: "a: [",
			msg: "is not valid YAML",
			mutate: func(r *Release) {
				r.Spec.PostRenderers = []PostRenderer{{Kustomize: &Kustomize{Patches: []Patch{{Patch: "a: ["}}}}}
			}},
		{name: "patch scalar", path: "spec.postRenderers[0].kustomize.patches[0].patch", value: "hello",
			msg: "must be a strategic merge patch",
			mutate: func(r *Release) {
				r.Spec.PostRenderers = []PostRenderer{{Kustomize: &Kustomize{Patches: []Patch{{Patch: "hello"}}}}}
			}},
		{name: "image without name", path: "spec.postRenderers[0].kustomize.images[0].name", msg: "is required",
			mutate: func(r *Release) {
				r.Spec.PostRenderers = []PostRenderer{{Kustomize: &Kustomize{Images: []Image{{NewTag: "1"}}}}}
			}},
		{name: "bad common label", path: `spec.commonMetadata.labels["env"]`, value: "prod env",
			msg: "invalid value",
			mutate: func(r *Release) {
				r.Spec.CommonMetadata = &CommonMetadata{Labels: map[string]string{"env": "prod env"}}
			}},
		{name: "wait strategy without name", path: "spec.waitStrategy.name", msg: "is required; one of poller, legacy",
			mutate: func(r *Release) { r.Spec.WaitStrategy = &WaitStrategy{} }},
		{name: "health check without current", path: "spec.healthCheckExprs[0].current", msg: "is required",
			mutate: func(r *Release) {
				r.Spec.HealthCheckExprs = []CustomHealthCheck{{APIVersion: "v1", Kind: "X"}}
			}},
		{name: "health check not CEL", path: "spec.healthCheckExprs[0].inProgress", value: "status.(",
			msg: "is not valid CEL: ERROR: <input>:1:8: Syntax error",
			mutate: func(r *Release) {
				r.Spec.HealthCheckExprs = []CustomHealthCheck{{APIVersion: "x.io/v1", HealthCheckExpressions: HealthCheckExpressions{Current: "true", InProgress: "status.("}}}
			}},
		{name: "readyExpr undeclared", path: "spec.dependsOn[0].readyExpr", value: "deps.ready == true",
			msg: "undeclared reference to 'deps'",
			mutate: func(r *Release) {
				r.Spec.DependsOn = []DependencyReference{{Name: "db", ReadyExpr: "deps.ready == true"}}
			}},
		{name: "bad server-side apply mode", path: "spec.rollback.serverSideApply", value: "true",
			msg:    "must be one of enabled, disabled, auto",
			mutate: func(r *Release) { r.Spec.Rollback.ServerSideApply = "true" }},
		{name: "bad chart name change strategy", path: "spec.upgrade.chartNameChangeStrategy", value: "Upgrade",
			msg:    "must be one of Reinstall, InPlaceUpdate",
			mutate: func(r *Release) { r.Spec.Upgrade.ChartNameChangeStrategy = "Upgrade" }},
	}
	require.NoError(t, validRelease().Validate())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := validRelease()
			tt.mutate(r)
			err := r.Validate()
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Errors, 1, "%v", err)
			fe := ve.Errors[0]
			assert.Equal(t, tt.path, fe.Path)
			assert.Equal(t, tt.value, fe.Value)
			assert.Contains(t, fe.Message, tt.msg)
			assert.Equal(t, "HelmRelease", ve.Kind)
			assert.Equal(t, r.Name, ve.Name)
			assert.Contains(t, err.Error(), tt.path)
		})
	}
}

func TestValidateReportsAllProblems(t *testing.T) {
	r := validRelease()
	r.Spec.ChartRef = &CrossNamespaceSourceReference{Kind: "Bucket"}
	r.Spec.Timeout = dur(-time.Second)
	r.Spec.DriftDetection.Ignore = []IgnoreRule{{Paths: []string{"x"}}}
	err := r.Validate()
	assert.Equal(t, `HelmRelease apps/podinfo: 5 problems:
  spec.chartRef: must not be set together with spec.chart
  spec.chartRef.kind: must be one of OCIRepository, HelmChart (value: Bucket)
  spec.chartRef.name: is required
  spec.timeout: must not be negative (value: -1s)
  spec.driftDetection.ignore[0].paths[0]: a JSON pointer must be empty or start with '/' (value: x)`, err.Error())
}

func TestValidateJSONPointer(t *testing.T) {
	for _, ok := range []string{"", "/", "/spec/replicas", "/metadata/annotations/a~1b", "/a~0b", "/0/-", "//x"} {
		assert.NoError(t, ValidateJSONPointer(ok), ok)
	}
	for _, bad := range []string{"spec", "~1", "/a~", "/a~x", "/a~2"} {
		assert.Error(t, ValidateJSONPointer(bad), bad)
	}
}

func TestValidateSources(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "s", Namespace: "apps"}
	tests := []struct {
		name  string
		err   error
		paths []string
	}{
		{name: "helm repository ok", err: ValidateHelmRepository(&source.HelmRepository{ObjectMeta: meta,
			Spec: source.HelmRepositorySpec{URL: "https://charts.example.com"}})},
		{name: "helm repository oci ok", err: ValidateHelmRepository(&source.HelmRepository{ObjectMeta: meta,
			Spec: source.HelmRepositorySpec{URL: "oci://ghcr.io/charts", Type: "oci"}})},
		{name: "helm repository without url", paths: []string{"spec.url"},
			err: ValidateHelmRepository(&source.HelmRepository{ObjectMeta: meta})},
		{name: "helm repository oci url without type", paths: []string{"spec.url"},
			err: ValidateHelmRepository(&source.HelmRepository{ObjectMeta: meta, Spec: source.HelmRepositorySpec{URL: "oci://ghcr.io/x"}})},
		{name: "helm repository bad type and provider", paths: []string{"spec.provider", "spec.type", "spec.url"},
			err: ValidateHelmRepository(&source.HelmRepository{ObjectMeta: meta,
				Spec: source.HelmRepositorySpec{URL: "ftp://x", Type: "git", Provider: "ibm"}})},
		{name: "oci repository ok", err: ValidateOCIRepository(&source.OCIRepository{ObjectMeta: meta,
			Spec: source.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts/podinfo",
				Reference: &source.OCIRepositoryRef{SemVer: ">= 6.0.0"}}})},
		{name: "oci repository bad ref", paths: []string{"spec.layerSelector.operation", "spec.ref.digest", "spec.ref.semver", "spec.ref.semverFilter", "spec.url"},
			err: ValidateOCIRepository(&source.OCIRepository{ObjectMeta: meta, Spec: source.OCIRepositorySpec{
				URL:           "https://ghcr.io/x",
				Reference:     &source.OCIRepositoryRef{Digest: "sha256", SemVer: "!!6", SemverFilter: "("},
				LayerSelector: &source.OCILayerSelector{Operation: "unpack"},
			}})},
		{name: "helm chart ok", err: ValidateHelmChart(&source.HelmChart{ObjectMeta: meta, Spec: source.HelmChartSpec{
			Chart: "podinfo", Version: "6.x", SourceRef: source.LocalHelmChartSourceReference{Kind: "HelmRepository", Name: "r"}}})},
		{name: "helm chart bad", paths: []string{"spec.chart", "spec.sourceRef.kind", "spec.sourceRef.name"},
			err: ValidateHelmChart(&source.HelmChart{ObjectMeta: meta, Spec: source.HelmChartSpec{
				SourceRef: source.LocalHelmChartSourceReference{Kind: "OCIRepository"}}})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.paths == nil {
				require.NoError(t, tt.err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, tt.err, &ve)
			var paths []string
			for _, fe := range ve.Errors {
				paths = append(paths, fe.Path)
			}
			assert.ElementsMatch(t, tt.paths, paths, "%v", tt.err)
		})
	}
}

func TestObjectsValidate(t *testing.T) {
	objs, err := decodeFile(t, "flux_guide.yaml")
	require.NoError(t, err)
	objs.Default()
	err = objs.Validate()
	var errs []*ValidationError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ve *ValidationError
		require.True(t, errors.As(e, &ve))
		errs = append(errs, ve)
	}
	require.Len(t, errs, 2)
	assert.Equal(t, "backend", errs[0].Name)
	assert.Equal(t, "frontend", errs[1].Name)
}

// A URL with credentials is never echoed: not its password, not a token in
// its query, not when url.Parse refuses it (its message quotes the URL).
func TestValidateURLHidesCredentials(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "s", Namespace: "apps"}
	for _, raw := range []string{
		"https://user:s3cr3t@host/%zz",
		"https://user:s3cr3t@host:port/repo",
		"ftp://user:s3cr3t@host/repo?token=T0KEN",
		"https://user:s3cr3t@/repo?token=T0KEN&sig=S1G",
		"https://user:s3cr3t@ho st/repo",
	} {
		t.Run(raw, func(t *testing.T) {
			errs := []error{
				ValidateHelmRepository(&source.HelmRepository{ObjectMeta: meta, Spec: source.HelmRepositorySpec{URL: raw}}),
				ValidateOCIRepository(&source.OCIRepository{ObjectMeta: meta, Spec: source.OCIRepositorySpec{URL: raw}}),
			}
			for _, err := range errs {
				require.Error(t, err)
				msg := fmt.Sprintf("%v %+v", err, err)
				assert.Contains(t, msg, "spec.url")
				for _, secret := range []string{"s3cr3t", "T0KEN", "S1G"} {
					assert.NotContains(t, msg, secret)
				}
			}
		})
	}
}
