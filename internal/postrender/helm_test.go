package postrender

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	helmpostrender "helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// webChart is a tiny chart: a ConfigMap, a Service and a Deployment, plus
// a post-install hook that Helm v3 does not post-render.
func webChart() *chart.Chart {
	tpl := func(name, data string) *chart.File {
		return &chart.File{Name: "templates/" + name, Data: []byte(data)}
	}
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "web", Version: "0.1.0", AppVersion: "1.4.0"},
		Values:   map[string]any{"image": map[string]any{"repository": "ghcr.io/example/web", "tag": "1.4.0"}, "replicas": 1},
		Templates: []*chart.File{
			tpl("configmap.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
data:
  LOG_LEVEL: info
`),
			tpl("service.yaml", `apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
spec:
  ports:
    - port: 80
      targetPort: 8080
  selector:
    app.kubernetes.io/name: {{ .Chart.Name }}
`),
			tpl("deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels:
    app.kubernetes.io/name: {{ .Chart.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels:
      app.kubernetes.io/name: {{ .Chart.Name }}
  template:
    metadata:
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
    spec:
      containers:
        - name: web
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`),
			tpl("hook.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: {{ .Release.Name }}-smoke
  annotations:
    helm.sh/hook: post-install
spec:
  restartPolicy: Never
  containers:
    - name: smoke
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
`),
		},
	}
}

// clientOnlyInstall is Helm's install of release "shop" into namespace
// "apps" with pr, dry-run and client-only: no cluster needed.
func clientOnlyInstall(pr helmpostrender.PostRenderer) *action.Install {
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	install := action.NewInstall(cfg)
	install.ReleaseName = "shop"
	install.Namespace = "apps"
	install.DryRun = true
	install.ClientOnly = true
	install.PostRenderer = pr
	return install
}

// Helm's own install action, run client-only (no cluster), post-renders the
// chart with Build's renderer and records the result as the release
// manifest.
func TestHelmInstallWithPostRenderer(t *testing.T) {
	pr, err := Build([]Kustomize{{
		Patches: []Patch{
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop\nspec:\n  replicas: 3\n"},
			{Patch: "- op: replace\n  path: /spec/type\n  value: NodePort\n", Target: &Selector{Kind: "Service", Name: "shop"}},
		},
		Images: []Image{{Name: "ghcr.io/example/web", NewTag: "1.5.0"}},
	}}, &CommonMetadata{Labels: map[string]string{"env": "prod"}})
	require.NoError(t, err)

	install := clientOnlyInstall(pr)
	rel, err := install.RunWithContext(t.Context(), webChart(), nil)
	require.NoError(t, err)

	m := rel.Manifest
	d := object(t, m, "Deployment", "shop")
	assert.EqualValues(t, 3, field(d, "spec", "replicas"))
	assert.Equal(t, "ghcr.io/example/web:1.5.0", field(d, "spec", "template", "spec", "containers", "web", "image"))
	assert.Equal(t, "NodePort", field(object(t, m, "Service", "shop"), "spec", "type"))
	for _, o := range []struct{ kind, name string }{{"ConfigMap", "shop-config"}, {"Service", "shop"}, {"Deployment", "shop"}} {
		assert.Equal(t, "prod", field(object(t, m, o.kind, o.name), "metadata", "labels", "env"), o.kind)
	}
	// Helm's install order and Source lines survive.
	assert.Less(t, strings.Index(m, "# Source: web/templates/configmap.yaml"), strings.Index(m, "# Source: web/templates/service.yaml"))
	assert.Less(t, strings.Index(m, "# Source: web/templates/service.yaml"), strings.Index(m, "# Source: web/templates/deployment.yaml"))
	// Helm v3 does not post-render hooks.
	require.Len(t, rel.Hooks, 1)
	assert.Contains(t, rel.Hooks[0].Manifest, "image: \"ghcr.io/example/web:1.4.0\"")

	golden(t, "helm/install manifest", m)
}

// A post-renderer error fails the install and keeps its path.
func TestHelmInstallPostRendererError(t *testing.T) {
	pr, err := Build([]Kustomize{{Patches: []Patch{{Patch: "- op: remove\n  path: /spec/nope\n", Target: &Selector{Kind: "Service"}}}}}, nil)
	require.NoError(t, err)
	install := clientOnlyInstall(pr)
	_, err = install.RunWithContext(t.Context(), webChart(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "postRenderers[0].kustomize.patches[0] (target kind=Service)")
	var e *Error
	require.True(t, errors.As(err, &e), "Helm's wrapping keeps the *Error: %v", err)
	assert.Equal(t, "postRenderers[0].kustomize.patches[0]", e.Path)
}
