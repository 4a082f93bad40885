package releasetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"sigs.k8s.io/yaml"
)

func TestChartRenders(t *testing.T) {
	tests := []struct {
		name     string
		values   map[string]any
		message  string
		replicas float64
	}{
		{name: "defaults", message: "hello", replicas: 1},
		{name: "overrides", values: map[string]any{"message": "a: b", "replicas": 3}, message: "a: b", replicas: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := Chart()
			require.NoError(t, ch.Validate())
			vals, err := chartutil.ToRenderValues(ch, tt.values, chartutil.ReleaseOptions{Name: "web", Namespace: "apps"}, chartutil.DefaultCapabilities)
			require.NoError(t, err)
			files, err := engine.Render(ch, vals)
			require.NoError(t, err)

			var cm, dep map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(files["conformance/templates/configmap.yaml"]), &cm))
			require.NoError(t, yaml.Unmarshal([]byte(files["conformance/templates/deployment.yaml"]), &dep))
			assert.Equal(t, "web-config", cm["metadata"].(map[string]any)["name"])
			assert.Equal(t, tt.message, cm["data"].(map[string]any)["message"])
			assert.Equal(t, "web-web", dep["metadata"].(map[string]any)["name"])
			assert.Equal(t, tt.replicas, dep["spec"].(map[string]any)["replicas"])
		})
	}
}

func TestChartIsFresh(t *testing.T) {
	a := Chart()
	a.Values["message"] = "changed"
	assert.Equal(t, "hello", Chart().Values["message"])
}
