package release

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// updateGolden rewrites golden files instead of comparing with them:
// go test ./release -run Golden -update
var updateGolden = flag.Bool("update", false, "rewrite golden files in testdata")

func decodeFile(t *testing.T, name string) (*Objects, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "decode", name))
	require.NoError(t, err)
	defer f.Close()
	return Decode(f)
}

func TestDecodeKarmadaBetaRelease(t *testing.T) {
	objs, err := decodeFile(t, "karmada_v2beta1.yaml")
	require.NoError(t, err)
	require.Len(t, objs.HelmRepositories, 1)
	require.Len(t, objs.Releases, 1)

	repo := objs.HelmRepositories[0]
	assert.Equal(t, "source.toolkit.fluxcd.io/v1beta2", repo.APIVersion)
	assert.Equal(t, "https://charts.bitnami.com/bitnami", repo.Spec.URL)
	assert.Equal(t, time.Minute, repo.Spec.Interval.Duration)

	r := objs.Releases[0]
	assert.Equal(t, APIVersion, r.APIVersion, "v2beta1 is converted to v2")
	assert.Equal(t, "my-nginx", r.Name)
	require.NotNil(t, r.Spec.Chart)
	assert.Equal(t, "nginx", r.Spec.Chart.Spec.Chart)
	assert.Equal(t, "15.3.0", r.Spec.Chart.Spec.Version)
	assert.Equal(t, CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "bitnami"}, r.Spec.Chart.Spec.SourceRef)

	objs.Default()
	require.NoError(t, objs.Validate())
	assert.Equal(t, "my-nginx", r.GetReleaseName())
	assert.Equal(t, "default", r.GetStorageNamespace())
}

func TestDecodeFluxGuide(t *testing.T) {
	objs, err := decodeFile(t, "flux_guide.yaml")
	require.NoError(t, err)
	require.Len(t, objs.HelmRepositories, 1)
	require.Len(t, objs.OCIRepositories, 1)
	require.Len(t, objs.Releases, 4)

	podinfo := objs.Releases[0]
	assert.Equal(t, "6.5.*", podinfo.Spec.Chart.Spec.Version)
	assert.Equal(t, 3, podinfo.GetInstall().GetRemediation().GetRetries())
	assert.True(t, podinfo.GetUpgrade().GetRemediation().MustRemediateLastFailure(), "upgrade retries > 0")
	assert.True(t, podinfo.GetTest().Enable)
	assert.Equal(t, DriftDetectionEnabled, podinfo.GetDriftDetection().GetMode())
	assert.Equal(t, []IgnoreRule{{Paths: []string{"/spec/replicas"}, Target: &Selector{Kind: "Deployment"}}}, podinfo.Spec.DriftDetection.Ignore)
	assert.Equal(t, map[string]any{"replicaCount": float64(2)}, podinfo.Spec.Values)

	oci := objs.OCIRepositories[0]
	assert.Equal(t, ">= 6.0.0", oci.Spec.Reference.SemVer)
	assert.Equal(t, "copy", oci.Spec.LayerSelector.Operation)

	byRef := objs.Releases[1]
	assert.Equal(t, &CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "podinfo", Namespace: "default"}, byRef.Spec.ChartRef)

	assert.Equal(t, "backend", objs.Releases[2].Name, "a spec holding only a comment is null")
	assert.Equal(t, []DependencyReference{{Name: "backend"}}, objs.Releases[3].Spec.DependsOn)

	objs.Default()
	err = objs.Validate()
	require.Error(t, err, "the guide's abridged releases have no chart")
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "backend", ve.Name)
	assert.Contains(t, err.Error(), "HelmRelease default/frontend: 2 problems")
}

// TestDecodeFluxGuideFragments decodes the guide's spec fragments strictly.
func TestDecodeFluxGuideFragments(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "decode", "flux_guide_fragments.yaml"))
	require.NoError(t, err)
	docs := strictyaml.Split(data)
	require.Len(t, docs, 2)
	for _, doc := range docs {
		js, err := strictyaml.ToJSON(doc)
		require.NoError(t, err)
		var r Release
		require.Empty(t, strictyaml.Unmarshal(js, &r))
	}
}

// TestDecodeAllFieldsGolden decodes a document setting every field and
// compares the decoded Release, rendered as YAML, with a golden file.
func TestDecodeAllFieldsGolden(t *testing.T) {
	objs, err := decodeFile(t, "allfields.yaml")
	require.NoError(t, err)
	require.Len(t, objs.Releases, 1)
	r := objs.Releases[0]
	got, err := yaml.Marshal(r)
	require.NoError(t, err)

	golden := filepath.Join("testdata", "decode", "allfields.golden.yaml")
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	// The golden file decodes back to the same Release.
	again, err := Decode(bytes.NewReader(want))
	require.NoError(t, err)
	require.Len(t, again.Releases, 1)
	assert.Equal(t, r, again.Releases[0])

	require.NoError(t, r.Validate())
}

// TestDecodeAllFieldsCoversEveryField fails when a field of Spec or Status
// is left at its zero value in allfields.yaml, so that the file keeps
// exercising every field as the types grow.
func TestDecodeAllFieldsCoversEveryField(t *testing.T) {
	objs, err := decodeFile(t, "allfields.yaml")
	require.NoError(t, err)
	r := objs.Releases[0]

	all := map[string]bool{}
	leafPaths(reflect.TypeFor[Release](), "", all)
	covered := map[string]bool{}
	coveredPaths(reflect.ValueOf(*r), "", covered)
	// spec.chartRef excludes spec.chart; flux_guide.yaml covers it.
	exempt := []string{"spec.chartRef.apiVersion", "spec.chartRef.kind", "spec.chartRef.name", "spec.chartRef.namespace"}

	var missing []string
	for p := range all {
		if !covered[p] && !slices.Contains(exempt, p) {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	assert.Empty(t, missing, "fields allfields.yaml leaves at their zero value")
}

var metaPkg = reflect.TypeFor[metav1.Time]().PkgPath()

// leafPaths lists the JSON paths (without list indexes) of the leaves of
// t below spec and status.
func leafPaths(t reflect.Type, path string, out map[string]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() == reflect.Map && t.Elem().Kind() == reflect.Pointer {
		t = t.Elem().Elem() // map[string]*TestHookStatus: the values' fields
	}
	if t.Kind() != reflect.Struct || t.PkgPath() == metaPkg && path != "" && t.Name() != "Condition" {
		out[path] = true
		return
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous || name == "metadata" {
			continue // TypeMeta and ObjectMeta are Kubernetes', not ours
		}
		leafPaths(f.Type, strings.TrimPrefix(path+"."+name, "."), out)
	}
}

// coveredPaths records the leaves of v that hold a non-zero value.
func coveredPaths(v reflect.Value, path string, out map[string]bool) {
	switch v.Kind() {
	case reflect.Pointer:
		switch {
		case v.IsNil():
		case v.Elem().Kind() == reflect.Struct || v.Elem().Kind() == reflect.Slice || v.Elem().Kind() == reflect.Map:
			coveredPaths(v.Elem(), path, out)
		default:
			out[path] = true // a pointer to a scalar is set even when false or 0
		}
		return
	case reflect.Slice:
		for i := range v.Len() {
			coveredPaths(v.Index(i), path, out)
		}
		return
	case reflect.Map:
		if v.Type().Elem().Kind() == reflect.Pointer {
			for _, k := range v.MapKeys() {
				coveredPaths(v.MapIndex(k), path, out)
			}
			return
		}
	case reflect.Struct:
		if v.Type().PkgPath() != metaPkg || path == "" || v.Type().Name() == "Condition" {
			for i := range v.NumField() {
				f := v.Type().Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if f.Anonymous || name == "metadata" {
					continue
				}
				coveredPaths(v.Field(i), strings.TrimPrefix(path+"."+name, "."), out)
			}
			return
		}
	}
	if !v.IsZero() {
		out[path] = true
	}
}

func TestDecodeBadInput(t *testing.T) {
	const release = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: default
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      sourceRef: {kind: HelmRepository, name: podinfo}
`
	tests := []struct {
		name  string
		yaml  string
		path  string
		value string
		want  string
	}{
		{
			name: "unknown field",
			yaml: release + "  install:\n    remediaton:\n      retries: 3\n",
			path: "spec.install.remediaton",
			want: `document 1 (HelmRelease default/podinfo, line 13): spec.install.remediaton: unknown field, did you mean "remediation"?`,
		},
		{
			name: "misspelled top-level field",
			yaml: release + "  value:\n    a: 1\n",
			path: "spec.value",
			want: `spec.value: unknown field, did you mean "values"?`,
		},
		{
			name:  "bad duration",
			yaml:  release + "  timeout: 5 minutes\n",
			path:  "spec.timeout",
			value: "5 minutes",
			want:  `spec.timeout: invalid value: time: unknown unit " minutes" in duration "5 minutes" (value: 5 minutes)`,
		},
		{
			name:  "number where a string belongs",
			yaml:  strings.Replace(release, "chart: podinfo", "chart: podinfo\n      version: 6.5", 1),
			path:  "spec.chart.spec.version",
			value: "6.5",
			want:  "spec.chart.spec.version: expected string, got number (quote it to make it a string) (value: 6.5)",
		},
		{
			name:  "string where an integer belongs",
			yaml:  release + "  maxHistory: ten\n",
			path:  "spec.maxHistory",
			value: "ten",
			want:  `spec.maxHistory: expected integer, got string (value: ten)`,
		},
		{
			name:  "wrong apiVersion",
			yaml:  strings.Replace(release, "/v2\n", "/v3\n", 1),
			path:  "apiVersion",
			value: "helm.toolkit.fluxcd.io/v3",
			want:  `unsupported apiVersion "helm.toolkit.fluxcd.io/v3" for kind HelmRelease; accepted: helm.toolkit.fluxcd.io/v2, helm.toolkit.fluxcd.io/v2beta1, helm.toolkit.fluxcd.io/v2beta2 (value: helm.toolkit.fluxcd.io/v3)`,
		},
		{
			name:  "unknown kind",
			yaml:  "apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImagePolicy\nmetadata: {name: apps}\n",
			path:  "kind",
			value: "ImagePolicy",
			want:  `document 1 (ImagePolicy apps, line 2): kind: unknown kind "ImagePolicy" of apiVersion "image.toolkit.fluxcd.io/v1"; accepted: helm.toolkit.fluxcd.io/v2 HelmRelease,`,
		},
		{
			name: "missing kind",
			yaml: "apiVersion: v1\nmetadata: {name: x}\n",
			want: "apiVersion and kind are required",
		},
		{
			name: "v2beta1 has no driftDetection",
			yaml: strings.Replace(release, "/v2\n", "/v2beta1\n", 1) + "  driftDetection:\n    mode: enabled\n",
			path: "spec.driftDetection",
			want: "spec.driftDetection: unknown field",
		},
		{
			name: "duplicate key",
			yaml: release + "  interval: 5m\n",
			want: `document 1 (line 12): invalid YAML: yaml: unmarshal errors: line 12: key "interval" already set in map`,
		},
		{
			name: "syntax error",
			yaml: release + "  values: {a: [1, 2}\n",
			// go-yaml counts parser (not scanner) error lines from 0.
			want: "document 1 (line 11): invalid YAML: yaml: line 11: did not find expected ',' or ']'",
		},
		{
			name: "metadata typo",
			yaml: strings.Replace(release, "  name: podinfo\n", "  name: podinfo\n  lables: {a: b}\n", 1),
			path: "metadata.lables",
			want: `metadata.lables: unknown field, did you mean "labels"?`,
		},
		{
			name: "source field typo",
			yaml: "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata: {name: r}\nspec:\n  url: https://example.com\n  intervall: 5m\n",
			path: "spec.intervall",
			want: `document 1 (HelmRepository r, line 6): spec.intervall: unknown field, did you mean "interval"?`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(strings.NewReader(tt.yaml))
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.Len(t, de.Problems, 1, "%v", err)
			p := de.Problems[0]
			assert.Equal(t, 1, p.Document)
			assert.Equal(t, tt.path, p.Path)
			if tt.value != "" {
				assert.Equal(t, tt.value, p.Value)
			}
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestDecodeReportsAllProblems checks that every problem of a stream comes
// back at once, in document order, with the document index and line.
func TestDecodeReportsAllProblems(t *testing.T) {
	stream := `# leading comment
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: a, namespace: team}
spec:
  interval: 1m
  chart:
    spec: {chart: a, sourceRef: {kind: HelmRepository, name: r}, bogus: 1}
  install: {crd: Skip}
---
# comment-only document: skipped and not counted
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: r, namespace: team}
spec: {url: https://example.com, interval: 5m}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmChart
metadata: {name: c}
spec: {chart: a, sourceRef: {kind: HelmRepository, name: r}, interval: soon}
`
	objs, err := Decode(strings.NewReader(stream))
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	got := make([]string, 0, len(de.Problems))
	for _, p := range de.Problems {
		got = append(got, p.Error())
	}
	assert.Equal(t, []string{
		`document 1 (HelmRelease team/a, line 9): spec.chart.spec.bogus: unknown field (value: 1)`,
		`document 1 (HelmRelease team/a, line 10): spec.install.crd: unknown field, did you mean "crds"? (value: Skip)`,
		`document 3 (HelmChart c, line 22): spec.interval: invalid value: time: invalid duration "soon" (value: soon)`,
	}, got)
	assert.True(t, strings.HasPrefix(err.Error(), "3 problems:\n  document 1"))
	require.Len(t, objs.HelmRepositories, 1, "clean documents are returned beside the error")
	assert.Empty(t, objs.Releases)
}

func TestDecodeJSONAndList(t *testing.T) {
	t.Run("JSON document indented with tabs", func(t *testing.T) {
		doc := "{\n\t\"apiVersion\": \"helm.toolkit.fluxcd.io/v2\",\n\t\"kind\": \"HelmRelease\",\n\t\"metadata\": {\"name\": \"x\"},\n\t\"spec\": {\"interval\": \"1m\", \"chartRef\": {\"kind\": \"HelmChart\", \"name\": \"c\"}}\n}\n"
		objs, err := Decode(strings.NewReader(doc))
		require.NoError(t, err)
		require.Len(t, objs.Releases, 1)
		assert.Equal(t, "c", objs.Releases[0].Spec.ChartRef.Name)
	})
	t.Run("v1 List", func(t *testing.T) {
		list := `apiVersion: v1
kind: List
items:
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: HelmRepository
  metadata: {name: a}
  spec: {url: "https://a.example.com"}
- apiVersion: source.toolkit.fluxcd.io/v1
  kind: HelmRepository
  metadata: {name: b}
  spec: {url: "https://b.example.com", typo: 1}
`
		objs, err := Decode(strings.NewReader(list))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		require.Len(t, de.Problems, 1)
		assert.Equal(t, "items[1].spec.typo", de.Problems[0].Path)
		assert.Equal(t, 11, de.Problems[0].Line)
		assert.Equal(t, "b", de.Problems[0].Name)
		require.Len(t, objs.HelmRepositories, 1)
	})
	t.Run("empty stream", func(t *testing.T) {
		objs, err := Decode(strings.NewReader("\n---\n# nothing\n---\n"))
		require.NoError(t, err)
		assert.Equal(t, &Objects{}, objs)
	})
	t.Run("scalar document", func(t *testing.T) {
		_, err := Decode(strings.NewReader("just text\n"))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		assert.Equal(t, "expected an object with apiVersion and kind", de.Problems[0].Message)
	})
	t.Run("read error", func(t *testing.T) {
		_, err := Decode(errReader{})
		require.ErrorIs(t, err, errBoom)
	})
}

var errBoom = errors.New("boom")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBoom }

// FuzzDecode fuzzes Decode with YAML and JSON: its seeds are the test
// streams and each of their documents as JSON, compact and indented.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"karmada_v2beta1.yaml", "flux_guide.yaml", "allfields.yaml", "betas.yaml", "karmada.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata", "decode", name))
		require.NoError(f, err)
		f.Add(data)
		for _, doc := range strictyaml.Split(data) {
			j, err := strictyaml.ToJSON(doc)
			require.NoError(f, err)
			f.Add(j)
			var indented bytes.Buffer
			require.NoError(f, json.Indent(&indented, j, "", "\t"))
			f.Add(indented.Bytes())
		}
	}
	f.Add([]byte("{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{\"a\": 1, \"a\": 2}]}\n{}"))
	f.Add([]byte("# c\n{\"kind\": \"HelmRelease\"} garbage\n---\n{\"x\": [1, {\"y\": null, \"y\": 2}]}"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [1, {apiVersion: v1, kind: List, items: [[]]}]\n"))
	f.Add([]byte("{\"apiVersion\": 3}"))
	f.Add([]byte(nestedLists(MaxListDepth, false)))
	f.Add([]byte(nestedLists(MaxListDepth+1, true)))
	f.Add([]byte("---\n- a\n---\n~\n---\na: &x [*x]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode(bytes.NewReader(data))
		require.NotNil(t, objs)
		if err != nil {
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			require.NotEmpty(t, de.Problems)
			return
		}
		objs.Default()
		_ = objs.Validate()
	})
}

// BenchmarkDecode decodes the every-field document strictly, against
// sigs.k8s.io/yaml's UnmarshalStrict (which stops at the first unknown
// field and knows neither kinds nor versions) as the baseline.
func BenchmarkDecode(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "decode", "allfields.yaml"))
	require.NoError(b, err)
	b.Run("helmfleet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(bytes.NewReader(data)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sigs-yaml-UnmarshalStrict", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Release
			if err := yaml.UnmarshalStrict(data, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodeKarmadaPolicies decodes Karmada policies beside a HelmRelease.
func TestDecodeKarmadaPolicies(t *testing.T) {
	objs, err := decodeFile(t, "karmada.yaml")
	require.NoError(t, err)
	s := objs.Policies
	assert.Len(t, s.Propagation, 1)
	assert.Len(t, s.ClusterPropagation, 1)
	assert.Len(t, s.Override, 1)
	assert.Len(t, s.ClusterOverride, 1)
	assert.Equal(t, "nginx-propagation", s.Propagation[0].Name)
	require.Len(t, objs.Releases, 1)

	_, err = Decode(strings.NewReader("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, nmae: x}]\n"))
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "spec.resourceSelectors[0].nmae", de.Problems[0].Path)
	assert.Contains(t, de.Error(), `did you mean "name"?`)
}

// TestLoadNamesTheFieldPath runs each kind of bad input of the issue
// through the whole pipeline (decode, default, validate): every error
// names the document or object, the field path and the bad value.
func TestLoadNamesTheFieldPath(t *testing.T) {
	const head = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: podinfo, namespace: web}\nspec:\n  interval: 10m\n"
	const chart = "  chart:\n    spec: {chart: podinfo, version: '6.5.*', sourceRef: {kind: HelmRepository, name: podinfo}}\n"
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{name: "unknown field", yaml: head + chart + "  tset: {enable: true}\n",
			want: `document 1 (HelmRelease web/podinfo, line 8): spec.tset: unknown field, did you mean "test"? (value: {"enable":true})`},
		{name: "two chart sources", yaml: head + chart + "  chartRef: {kind: OCIRepository, name: podinfo}\n",
			want: "HelmRelease web/podinfo: spec.chartRef: must not be set together with spec.chart"},
		{name: "bad duration", yaml: head + chart + "  timeout: 5mins\n",
			want: `document 1 (HelmRelease web/podinfo, line 8): spec.timeout: invalid value: time: unknown unit "mins" in duration "5mins" (value: 5mins)`},
		{name: "bad semver", yaml: strings.Replace(head+chart, "6.5.*", ">= 6.x.y", 1),
			want: `HelmRelease web/podinfo: spec.chart.spec.version: is neither a version nor a semver constraint: improper constraint: ">= 6.x.y" (value: >= 6.x.y)`},
		{name: "bad JSON pointer", yaml: head + chart + "  driftDetection:\n    ignore: [{paths: [spec/replicas]}]\n",
			want: "HelmRelease web/podinfo: spec.driftDetection.ignore[0].paths[0]: a JSON pointer must be empty or start with '/' (value: spec/replicas)"},
		{name: "wrong apiVersion", yaml: strings.Replace(head+chart, "/v2\n", "/v1\n", 1),
			want: `document 1 (HelmRelease web/podinfo, line 1): apiVersion: unsupported apiVersion "helm.toolkit.fluxcd.io/v1" for kind HelmRelease; accepted: helm.toolkit.fluxcd.io/v2, helm.toolkit.fluxcd.io/v2beta1, helm.toolkit.fluxcd.io/v2beta2 (value: helm.toolkit.fluxcd.io/v1)`},
	}
	objs, err := Load(strings.NewReader(head + chart))
	require.NoError(t, err)
	require.Len(t, objs.Releases, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tt.yaml))
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}

func TestLoadValidatesPolicies(t *testing.T) {
	objs, err := Load(strings.NewReader("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p, namespace: apps}\nspec:\n  resourceSelectors: [{kind: Deployment}]\n"))
	require.Error(t, err, "a resource selector needs an apiVersion")
	assert.Contains(t, err.Error(), "apiVersion")
	require.Len(t, objs.Policies.Propagation, 1)

	_, err = Load(strings.NewReader("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p, namespace: apps}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n"))
	require.NoError(t, err)
}

// sizedStream returns a stream of about n bytes of realistic HelmRelease
// documents, each with its own name, values and valuesFrom.
func sizedStream(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, `---
# release %[1]d of the fleet
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app-%[1]d
  namespace: team-%[2]d
  labels:
    app.kubernetes.io/name: app-%[1]d
    app.kubernetes.io/part-of: fleet
spec:
  interval: 10m
  timeout: 5m
  releaseName: app-%[1]d
  chart:
    spec:
      chart: podinfo
      version: ">=6.0.0 <7.0.0"
      sourceRef:
        kind: HelmRepository
        name: podinfo
        namespace: flux-system
      interval: 1h
  install:
    crds: CreateReplace
    remediation:
      retries: 3
  upgrade:
    cleanupOnFail: true
    remediation:
      retries: 3
      remediateLastFailure: true
  valuesFrom:
    - kind: ConfigMap
      name: app-%[1]d-values
    - kind: Secret
      name: app-%[1]d-secret
      valuesKey: password
      targetPath: auth.password
      optional: true
  values:
    replicaCount: %[3]d
    image:
      repository: ghcr.io/stefanprodan/podinfo
      tag: "6.5.%[3]d"
    resources:
      limits: {cpu: 500m, memory: 256Mi}
      requests: {cpu: 100m, memory: 64Mi}
    ingress:
      enabled: true
      hosts:
        - host: app-%[1]d.example.com
          paths: [{path: /, pathType: Prefix}]
`, i, i%17, i%5+1)
	}
	return b.Bytes()
}

// BenchmarkDecodeSize decodes streams of 8 and 16 MB of HelmReleases:
// Decode is linear when the second costs about twice the first.
func BenchmarkDecodeSize(b *testing.B) {
	for _, mb := range []int{8, 16} {
		data := sizedStream(mb << 20)
		b.Run(fmt.Sprintf("size=%dMB", mb), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
