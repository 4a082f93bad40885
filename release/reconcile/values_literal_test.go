package reconcile

import (
	"context"
	"fmt"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"strings"
	"testing"
)

type valuesReaderFunc func(kind values.Kind, namespace, name string) (map[string][]byte, error)

func (f valuesReaderFunc) Read(_ context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error) {
	return f(kind, namespace, name)
}

// literalRelease reads application.yml of ConfigMap app-config into
// targetPath literally, and replicas as --set would.
const literalRelease = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: app, namespace: apps}
spec:
  interval: 10m
  chartRef: {kind: HelmChart, name: c}
  valuesFrom:
  - kind: ConfigMap
    name: app-config
    valuesKey: application.yml
    targetPath: %s
    literal: true
  - kind: ConfigMap
    name: app-config
    valuesKey: replicas
    targetPath: replicaCount
`

// literalText is not one --set value: it has commas, braces and lines.
const literalText = "server:\n  ports: [8080, 8443]\nname: {a,b}\n"

// composeLiteral loads literalRelease with targetPath and composes its
// values as the reconciler does.
func composeLiteral(t *testing.T, targetPath string) map[string]any {
	t.Helper()
	objs, err := release.Load(strings.NewReader(fmt.Sprintf(literalRelease, targetPath)))
	require.NoError(t, err)
	require.Len(t, objs.Releases, 1)
	rel := objs.Releases[0]
	require.True(t, rel.Spec.ValuesFrom[0].Literal)

	reader := valuesReaderFunc(func(kind values.Kind, namespace, name string) (map[string][]byte, error) {
		if kind == values.KindConfigMap && namespace == "apps" && name == "app-config" {
			return map[string][]byte{"application.yml": []byte(literalText), "replicas": []byte("3")}, nil
		}
		return nil, values.ErrNotFound
	})
	charts := ChartGetterFunc(func(context.Context, *release.Release) (*Chart, error) {
		return &Chart{Chart: &chart.Chart{Metadata: &chart.Metadata{Name: "c", Version: "1.0.0", APIVersion: "v2"}}}, nil
	})
	r, err := New(Config{Charts: charts, Values: reader})
	require.NoError(t, err)
	d, err := r.prepare(context.Background(), rel)
	require.NoError(t, err)
	return d.values.Values
}

// TestValuesFromLiteral decodes valuesFrom[].literal and composes the
// values as the reconciler does: the text is set verbatim.
func TestValuesFromLiteral(t *testing.T) {
	assert.Equal(t, map[string]any{
		"externalConfig": map[string]any{"content": literalText},
		"replicaCount":   int64(3),
	}, composeLiteral(t, "externalConfig.content"))

	t.Run("escaped dots in the target path", func(t *testing.T) {
		assert.Equal(t, map[string]any{
			"externalConfig": map[string]any{"application.yml": map[string]any{"content": literalText}},
			"replicaCount":   int64(3),
		}, composeLiteral(t, `externalConfig.application\.yml.content`))
	})

	t.Run("literal needs a targetPath", func(t *testing.T) {
		doc := strings.Replace(literalRelease, "    targetPath: %s\n", "", 1)
		_, err := release.Load(strings.NewReader(doc))
		var ve *release.ValidationError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, []release.FieldError{{Path: "spec.valuesFrom[0].literal", Value: "true", Message: "requires targetPath: a literal value is set at a path"}}, ve.Errors)
	})
}
