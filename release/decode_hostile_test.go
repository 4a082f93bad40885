package release

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/values"
)

// jsonRelease is a clean HelmRelease as JSON, indented with tabs as
// kubectl and jq write it, one member per line.
const jsonRelease = "{\n\t\"apiVersion\": \"helm.toolkit.fluxcd.io/v2\",\n\t\"kind\": \"HelmRelease\",\n\t\"metadata\": {\"name\": \"x\", \"namespace\": \"apps\"},\n\t\"spec\": {\"interval\": \"1m\", \"chartRef\": {\"kind\": \"HelmChart\", \"name\": \"c\"}}\n}\n"

// TestDecodeStrictJSON checks that JSON gets the guarantees YAML has:
// data after the object, a second object and duplicate keys are each a
// problem with the document, the line and (for a key) the field path.
func TestDecodeStrictJSON(t *testing.T) {
	compact := strings.Join(strings.Fields(jsonRelease), " ")
	tests := []struct {
		name    string
		json    string
		want    []string // Problem.Error() of each problem
		path    string   // of the first problem
		objects bool     // whether the release decodes
	}{
		{name: "clean, tabs", json: jsonRelease, objects: true},
		{name: "clean, one line", json: compact, objects: true},
		{name: "clean, after comments", json: "# exported\n\n" + jsonRelease, objects: true},
		{
			name: "trailing garbage",
			json: jsonRelease + "garbage\n",
			want: []string{"document 1 (HelmRelease apps/x, line 7): invalid JSON: data after the object (value: garbage)"},
		},
		{
			name: "trailing garbage on the same line",
			json: compact + " }",
			want: []string{"document 1 (HelmRelease apps/x, line 1): invalid JSON: data after the object (value: })"},
		},
		{
			name: "second object",
			json: jsonRelease + jsonRelease,
			want: []string{`document 1 (HelmRelease apps/x, line 7): invalid JSON: a second JSON value after the object; separate documents with --- lines or put them in a v1 List (value: {)`},
		},
		{
			name: "duplicate key",
			json: strings.Replace(jsonRelease, `"kind": "HelmRelease",`, `"kind": "HelmRelease", "kind": "HelmRelease",`, 1),
			path: "kind",
			want: []string{"document 1 (HelmRelease apps/x, line 3): kind: invalid JSON: duplicate key"},
		},
		{
			name: "every duplicate, nested, with the second object",
			json: strings.Replace(jsonRelease, `"interval": "1m",`, `"interval": "1m", "interval": "2m",`, 1) +
				strings.Replace(jsonRelease, `"name": "x",`, `"name": "x", "name": "y",`, 1),
			path: "spec.interval",
			want: []string{
				"document 1 (HelmRelease apps/x, line 5): spec.interval: invalid JSON: duplicate key",
				`document 1 (HelmRelease apps/x, line 7): invalid JSON: a second JSON value after the object; separate documents with --- lines or put them in a v1 List (value: {)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Decode(strings.NewReader(tt.json))
			require.NotNil(t, objs)
			if tt.objects {
				require.NoError(t, err)
				require.Len(t, objs.Releases, 1)
				assert.Equal(t, "c", objs.Releases[0].Spec.ChartRef.Name)
				return
			}
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			got := make([]string, 0, len(de.Problems))
			for _, p := range de.Problems {
				got = append(got, p.Error())
				assert.Equal(t, 1, p.Document)
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.path, de.Problems[0].Path)
			assert.Empty(t, objs.Releases, "a document with invalid JSON is not decoded")
		})
	}

	t.Run("YAML flow mappings are still YAML", func(t *testing.T) {
		objs, err := Decode(strings.NewReader(`{apiVersion: source.toolkit.fluxcd.io/v1, kind: HelmRepository, metadata: {name: r}, spec: {url: "https://a.example.com"}}`))
		require.NoError(t, err)
		require.Len(t, objs.HelmRepositories, 1)
	})
	t.Run("JSON documents between YAML separators", func(t *testing.T) {
		objs, err := Decode(strings.NewReader("---\n" + jsonRelease + "---\n" + strings.Replace(jsonRelease, `"x"`, `"y"`, 1)))
		require.NoError(t, err)
		require.Len(t, objs.Releases, 2)
	})
}

// zeros reads n spaces.
type spaces struct{ n int }

func (s *spaces) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), s.n)
	for i := range p[:k] {
		p[i] = ' '
	}
	s.n -= k
	return k, nil
}

func TestDecodeStreamTooLarge(t *testing.T) {
	_, err := Decode(io.MultiReader(strings.NewReader(jsonRelease), &spaces{n: MaxStreamBytes}))
	require.ErrorIs(t, err, ErrStreamTooLarge)
	var te *StreamTooLargeError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, MaxStreamBytes, te.Limit)
	assert.Contains(t, err.Error(), "(64 MiB, release.MaxStreamBytes)")

	_, err = Load(io.MultiReader(strings.NewReader(jsonRelease), &spaces{n: MaxStreamBytes - len(jsonRelease)}))
	require.NoError(t, err, "a stream of exactly MaxStreamBytes is read")
}

func TestLoadTooManyValuesFrom(t *testing.T) {
	stream := func(n int) string {
		var b strings.Builder
		b.WriteString("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: app, namespace: apps}\nspec:\n  interval: 10m\n  chartRef: {kind: HelmChart, name: c}\n  valuesFrom:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {kind: ConfigMap, name: v%d}\n", i)
		}
		return b.String()
	}
	_, err := Load(strings.NewReader(stream(values.DefaultMaxReferences)))
	require.NoError(t, err)

	objs, err := Load(strings.NewReader(stream(values.DefaultMaxReferences + 1)))
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, []FieldError{{Path: "spec.valuesFrom", Value: "1001", Message: "has more entries than the 1000 a release may have (values.DefaultMaxReferences)"}}, ve.Errors)
	assert.Equal(t, "HelmRelease apps/app: spec.valuesFrom: has more entries than the 1000 a release may have (values.DefaultMaxReferences) (value: 1001)", err.Error())
	require.Len(t, objs.Releases, 1, "Load returns the objects beside the validation error")
}

// TestLoadBadDurationReportsOtherProblems checks that a bad duration is one
// problem among the others of its document, not the end of it.
func TestLoadBadDurationReportsOtherProblems(t *testing.T) {
	const doc = `apiVersion: helm.toolkit.fluxcd.io/%s
kind: HelmRelease
metadata: {name: podinfo, namespace: web}
spec:
  interval: 10x
  chart:
    spec:
      chart: podinfo
      version: ">= 6.x.y"
      sourceRef: {kind: HelmRepository, name: podinfo}
  dependsOn: [{name: podinfo}]
  timeout: 5mins
`
	for _, version := range []string{"v2", "v2beta2", "v2beta1"} {
		t.Run(version, func(t *testing.T) {
			objs, err := Load(strings.NewReader(fmt.Sprintf(doc, version)))
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			got := make([]string, 0, len(de.Problems))
			for _, p := range de.Problems {
				got = append(got, p.Error())
			}
			assert.Equal(t, []string{
				`document 1 (HelmRelease web/podinfo, line 5): spec.interval: invalid value: time: unknown unit "x" in duration "10x" (value: 10x)`,
				`document 1 (HelmRelease web/podinfo, line 9): spec.chart.spec.version: is neither a version nor a semver constraint: improper constraint: ">= 6.x.y" (value: >= 6.x.y)`,
				`document 1 (HelmRelease web/podinfo, line 11): spec.dependsOn[0].name: a Release cannot depend on itself (value: podinfo)`,
				`document 1 (HelmRelease web/podinfo, line 12): spec.timeout: invalid value: time: unknown unit "mins" in duration "5mins" (value: 5mins)`,
			}, got, "the zeroed interval is not reported again as missing")
			assert.Empty(t, objs.Releases, "a document that does not decode is not returned")
		})
	}

	t.Run("Decode alone reports the decoding problems", func(t *testing.T) {
		_, err := Decode(strings.NewReader(fmt.Sprintf(doc, "v2")))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		require.Len(t, de.Problems, 2)
		assert.Equal(t, "spec.interval", de.Problems[0].Path)
		assert.Equal(t, "spec.timeout", de.Problems[1].Path)
	})
	t.Run("an unknown field still stops the document", func(t *testing.T) {
		_, err := Load(strings.NewReader(fmt.Sprintf(doc, "v2") + "  bogus: 1\n"))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		require.Len(t, de.Problems, 3, "%v", err)
	})
	t.Run("in a List item", func(t *testing.T) {
		list := "apiVersion: v1\nkind: List\nitems:\n- apiVersion: source.toolkit.fluxcd.io/v1\n  kind: HelmRepository\n  metadata: {name: r, namespace: apps}\n  spec: {url: 'ftp://x', interval: 1y}\n"
		_, err := Load(strings.NewReader(list))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		require.Len(t, de.Problems, 2, "%v", err)
		assert.Equal(t, "items[0].spec.interval", de.Problems[0].Path)
		assert.Equal(t, "items[0].spec.url", de.Problems[1].Path)
		assert.Equal(t, 7, de.Problems[1].Line)
	})
}
