package controller_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// A HelmRelease read by the controller comes through the scheme's codec
// (whole numbers int64); one read from files comes through release.Decode
// (numbers float64, as Helm's values files). Both must render as Flux
// renders the object, which reads spec.values with encoding/json: the
// same manifest, whatever path the object took, so a release does not
// upgrade when it moves from files to a cluster.
func TestInlineValuesNumbersRenderAlikeThroughCodecAndDecode(t *testing.T) {
	const valuesJSON = `{"big":9007199254740993,"small":3,"neg":-42,"list":[1,2.5,7],"nested":{"n":12345678901234567}}`
	const hrJSON = `{"apiVersion":"helm.toolkit.fluxcd.io/v2","kind":"HelmRelease",
"metadata":{"name":"nums","namespace":"apps","generation":1},
"spec":{"interval":"10m","chart":{"spec":{"chart":"nums","version":"1.0.0","sourceRef":{"kind":"HelmRepository","name":"r"}}},
"values":` + valuesJSON + `}}`

	objs, err := release.Decode(strings.NewReader(hrJSON))
	require.NoError(t, err)
	require.Len(t, objs.Releases, 1)
	decoded := objs.Releases[0]

	scheme := runtime.NewScheme()
	require.NoError(t, controller.AddToScheme(scheme))
	obj, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(hrJSON), nil, nil)
	require.NoError(t, err)
	viaCodec, ok := obj.(*release.Release)
	require.True(t, ok, "%T", obj)
	require.IsType(t, int64(0), viaCodec.Spec.Values["big"], "the codec keeps whole numbers as int64: the path under test")

	// Flux: json.Unmarshal of spec.values' raw JSON.
	flux := decoded.DeepCopy()
	flux.Spec.Values = nil
	require.NoError(t, json.Unmarshal([]byte(valuesJSON), &flux.Spec.Values))

	tpl := `apiVersion: v1
kind: ConfigMap
metadata: {name: nums}
data:
  big: {{ .Values.big | quote }}
  small: {{ .Values.small | quote }}
  smallEqualsThree: {{ eq .Values.small 3.0 | quote }}
  neg: {{ .Values.neg | quote }}
  list: {{ .Values.list | toJson | quote }}
  nested: {{ .Values.nested.n | quote }}
  kind: {{ kindOf .Values.small | quote }}
`
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{Name: "nums", Version: "1.0.0", APIVersion: "v2"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(tpl)}},
	}
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	})})
	require.NoError(t, err)
	render := func(rel *release.Release) (map[string]any, string) {
		t.Helper()
		plan := rec.Plan(context.Background(), memory.New("m"), rel)
		require.NoError(t, plan.Err)
		require.Len(t, plan.Objects, 1)
		require.NotNil(t, plan.Values)
		return plan.Objects[0].Object["data"].(map[string]any), plan.Values.Digest
	}
	want, wantDigest := render(flux)
	for name, rel := range map[string]*release.Release{"release.Decode": decoded, "scheme codec": viaCodec} {
		got, digest := render(rel)
		assert.Equal(t, want, got, "%s renders as Flux", name)
		assert.Equal(t, wantDigest, digest, "%s: values digest as Flux's", name)
	}
	assert.Equal(t, "float64", want["kind"], "Flux hands Helm float64 numbers")
	assert.Equal(t, "true", want["smallEqualsThree"])
}
