package crds_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/crds"
	"github.com/helmfleet/helmfleet/source"
)

// loaded is one CRD with its schema in the forms the API server uses.
type loaded struct {
	crd        *apiextensionsv1.CustomResourceDefinition
	structural *structuralschema.Structural
	validator  *validate.SchemaValidator
}

// loadCRDs reads every manifest of the package, checks that its schema is
// structural, as the API server requires, and returns them by kind.
func loadCRDs(t *testing.T) map[schema.GroupKind]*loaded {
	t.Helper()
	out := map[schema.GroupKind]*loaded{}
	for _, name := range crds.Names() {
		data, err := fs.ReadFile(crds.FS(), name)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(data, crd), name)
		require.Len(t, crd.Spec.Versions, 1, name)
		v := crd.Spec.Versions[0]
		require.NotNil(t, v.Schema, name)
		var internal apiextensions.JSONSchemaProps
		require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil), name)
		s, err := structuralschema.NewStructural(&internal)
		require.NoError(t, err, name)
		require.Empty(t, structuralschema.ValidateStructural(nil, s), "%s: schema is not structural", name)
		gk := schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}
		out[gk] = &loaded{crd: crd, structural: s, validator: validate.NewSchemaValidator(s.ToKubeOpenAPI(), nil, "", strfmt.Default)}
	}
	return out
}

// kinds are the kinds the CRDs define, with the Go type each models and
// the columns Flux prints for it.
var kinds = []struct {
	gv      schema.GroupVersion
	kind    string
	plural  string
	obj     any
	columns []string
}{
	{release.GroupVersion, "HelmRelease", "helmreleases", release.Release{}, []string{"Age", "Ready", "Status"}},
	{source.GroupVersion, "HelmRepository", "helmrepositories", source.HelmRepository{}, []string{"URL", "Age", "Ready", "Status"}},
	{source.GroupVersion, "OCIRepository", "ocirepositories", source.OCIRepository{}, []string{"URL", "Ready", "Status", "Age"}},
	{source.GroupVersion, "HelmChart", "helmcharts", source.HelmChart{}, []string{"Chart", "Version", "Source Kind", "Source Name", "Age", "Ready", "Status"}},
	{release.KustomizationGroupVersion, "Kustomization", "kustomizations", release.Kustomization{}, []string{"Age", "Ready", "Status"}},
}

func TestCRDs(t *testing.T) {
	all := loadCRDs(t)
	require.Len(t, all, len(kinds))
	for _, k := range kinds {
		t.Run(k.kind, func(t *testing.T) {
			l := all[k.gv.WithKind(k.kind).GroupKind()]
			require.NotNil(t, l, "no CRD for %s", k.kind)
			c := l.crd
			assert.Equal(t, k.plural+"."+k.gv.Group, c.Name)
			assert.Equal(t, apiextensionsv1.NamespaceScoped, c.Spec.Scope)
			assert.Equal(t, k.kind+"List", c.Spec.Names.ListKind)
			assert.Equal(t, k.plural, c.Spec.Names.Plural)
			v := c.Spec.Versions[0]
			assert.Equal(t, k.gv.Version, v.Name)
			assert.True(t, v.Served && v.Storage, "served and stored")
			require.NotNil(t, v.Subresources)
			assert.NotNil(t, v.Subresources.Status, "status subresource")
			var cols []string
			for _, col := range v.AdditionalPrinterColumns {
				cols = append(cols, col.Name)
			}
			assert.Equal(t, k.columns, cols)
			assertCovers(t, reflect.TypeOf(k.obj), l.structural, k.kind)
		})
	}
}

// assertCovers fails for every JSON field the Go type t can emit that
// the schema s does not define: the API server would drop it.
func assertCovers(t *testing.T, typ reflect.Type, s *structuralschema.Structural, path string) {
	t.Helper()
	if s == nil {
		t.Errorf("%s: not in the schema", path)
		return
	}
	if strings.HasPrefix(typ.PkgPath(), "k8s.io/") || s.XPreserveUnknownFields {
		return // metav1 types, with their own schemas; free-form values
	}
	switch typ.Kind() {
	case reflect.Pointer:
		assertCovers(t, typ.Elem(), s, path)
	case reflect.Slice:
		if typ.Elem().Kind() == reflect.Uint8 {
			return
		}
		assertCovers(t, typ.Elem(), s.Items, path+"[]")
	case reflect.Map:
		if s.AdditionalProperties == nil {
			t.Errorf("%s: the schema has no additionalProperties", path)
			return
		}
		assertCovers(t, typ.Elem(), s.AdditionalProperties.Structural, path+"[*]")
	case reflect.Struct:
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "":
				assertCovers(t, f.Type, s, path)
			default:
				p, ok := s.Properties[name]
				if !ok {
					t.Errorf("%s.%s: not in the schema", path, name)
					continue
				}
				assertCovers(t, f.Type, &p, path+"."+name)
			}
		}
	}
}

// sample is one document of a modeled kind.
type sample struct {
	file string
	gvk  schema.GroupVersionKind
	name string
	raw  map[string]any
	text []byte
}

// samples reads every document of a modeled kind from the YAML files in
// dirs: Flux's own samples and test data (testdata/flux, see its README)
// and ours (../testdata/decode). Documents of other kinds are skipped.
func samples(t *testing.T, dirs ...string) []sample {
	t.Helper()
	var out []sample
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, file := range files {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			for _, doc := range bytes.Split(data, []byte("\n---")) {
				var raw map[string]any
				require.NoError(t, yaml.Unmarshal(doc, &raw), file)
				if raw == nil {
					continue
				}
				u := struct {
					APIVersion string `json:"apiVersion"`
					Kind       string `json:"kind"`
					Metadata   struct {
						Name string `json:"name"`
					} `json:"metadata"`
				}{}
				require.NoError(t, yaml.Unmarshal(doc, &u), file)
				gv, err := schema.ParseGroupVersion(u.APIVersion)
				require.NoError(t, err, file)
				if gv.Group != release.Group && gv.Group != source.Group && gv.Group != release.KustomizationGroup {
					continue
				}
				if !modeled(u.Kind) {
					continue // GitRepository, Bucket
				}
				out = append(out, sample{file: file, gvk: gv.WithKind(u.Kind), name: u.Metadata.Name, raw: raw, text: doc})
			}
		}
	}
	return out
}

func modeled(kind string) bool {
	for _, k := range kinds {
		if k.kind == kind {
			return true
		}
	}
	return false
}

// fragments are documents of our test data that abbreviate their spec
// ("# ...omitted for brevity"), as the Flux guide they come from does: Decode
// reads them, but as written they are no complete object.
var fragments = map[string]bool{"flux_guide.yaml backend": true, "flux_guide.yaml frontend": true}

// TestSamplesValidate checks Flux's sample and test HelmReleases,
// HelmRepositories, OCIRepositories and HelmCharts, and the HelmReleases
// of our own test data, against the CRDs as the API server would: each
// document of the CRD's version as written, and each document, of any
// version, as Decode reads it and a client would send it (older versions
// converted). Each must validate and lose no field to pruning.
func TestSamplesValidate(t *testing.T) {
	all := loadCRDs(t)
	docs := samples(t, "testdata/flux/helm-controller", "testdata/flux/source-controller", "testdata/flux/kustomize-controller", "../testdata/decode")
	counts := map[string]int{}
	for _, d := range docs {
		l := all[d.gvk.GroupKind()]
		require.NotNil(t, l, d.gvk.String())
		id := filepath.Base(d.file) + " " + d.gvk.Kind + " " + d.name
		if d.gvk.Version == l.crd.Spec.Versions[0].Name && !fragments[filepath.Base(d.file)+" "+d.name] {
			assertValid(t, l, d.raw, id+" as written")
		}

		objs, err := release.Decode(bytes.NewReader(d.text))
		require.NoError(t, err, id)
		var typed runtime.Object
		switch {
		case len(objs.Releases) == 1:
			typed = objs.Releases[0]
		case len(objs.HelmRepositories) == 1:
			typed = objs.HelmRepositories[0]
		case len(objs.OCIRepositories) == 1:
			typed = objs.OCIRepositories[0]
		case len(objs.HelmCharts) == 1:
			typed = objs.HelmCharts[0]
		case len(objs.Kustomizations) == 1:
			typed = objs.Kustomizations[0]
		default:
			t.Fatalf("%s: Decode returned no single object: %+v", id, objs)
		}
		typed.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{Group: d.gvk.Group, Version: l.crd.Spec.Versions[0].Name, Kind: d.gvk.Kind})
		data, err := json.Marshal(typed)
		require.NoError(t, err)
		var sent map[string]any
		require.NoError(t, json.Unmarshal(data, &sent))
		assertValid(t, l, sent, id+" as decoded")
		counts[filepath.Base(filepath.Dir(d.file))+" "+d.gvk.Kind]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%3d %s", counts[k], k)
	}
	for _, want := range []string{
		"helm-controller HelmRelease", "helm-controller HelmRepository", "helm-controller OCIRepository",
		"source-controller HelmRepository", "source-controller OCIRepository", "source-controller HelmChart",
		"decode HelmRelease", "decode HelmRepository", "decode OCIRepository",
		"kustomize-controller Kustomization",
	} {
		assert.Positive(t, counts[want], "no %s sample validated", want)
	}
}

// TestSchemaRejects checks that the schemas do validate: values Flux's
// CRDs reject are rejected.
func TestSchemaRejects(t *testing.T) {
	all := loadCRDs(t)
	hr := all[release.GroupVersion.WithKind("HelmRelease").GroupKind()]
	base := func() map[string]any {
		return map[string]any{
			"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
			"metadata": map[string]any{"name": "a", "namespace": "b"},
			"spec": map[string]any{
				"interval": "5m",
				"chart": map[string]any{"spec": map[string]any{
					"chart": "podinfo", "sourceRef": map[string]any{"kind": "HelmRepository", "name": "podinfo"},
				}},
				"values": map[string]any{"anything": []any{int64(1), "two", map[string]any{"three": true}}},
			},
		}
	}
	assertValid(t, hr, base(), "base")
	for _, tc := range []struct {
		name, field string
		set         func(spec map[string]any)
	}{
		{"interval not a duration", "spec.interval", func(s map[string]any) { s["interval"] = "soon" }},
		{"unknown source kind", "spec.chart.spec.sourceRef.kind", func(s map[string]any) {
			s["chart"].(map[string]any)["spec"].(map[string]any)["sourceRef"].(map[string]any)["kind"] = "ConfigMap"
		}},
		{"release name too long", "spec.releaseName", func(s map[string]any) { s["releaseName"] = strings.Repeat("a", 54) }},
		{"drift mode", "spec.driftDetection.mode", func(s map[string]any) { s["driftDetection"] = map[string]any{"mode": "sometimes"} }},
		{"remediation strategy", "spec.upgrade.remediation.strategy", func(s map[string]any) {
			s["upgrade"] = map[string]any{"remediation": map[string]any{"strategy": "pray"}}
		}},
		{"crds policy", "spec.install.crds", func(s map[string]any) { s["install"] = map[string]any{"crds": "Always"} }},
		{"chart missing", "spec.chart.spec.chart", func(s map[string]any) {
			delete(s["chart"].(map[string]any)["spec"].(map[string]any), "chart")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := base()
			tc.set(obj["spec"].(map[string]any))
			res := hr.validator.Validate(obj)
			require.False(t, res.IsValid(), "accepted")
			assert.Contains(t, errorsOf(res), tc.field)
		})
	}
}

func assertValid(t *testing.T, l *loaded, obj map[string]any, id string) {
	t.Helper()
	obj = runtime.DeepCopyJSON(obj)
	dropNulls(obj, l.structural)
	res := l.validator.Validate(obj)
	assert.True(t, res.IsValid(), "%s: %s", id, errorsOf(res))
	cp := runtime.DeepCopyJSON(obj)
	pruned := pruning.PruneWithOptions(cp, l.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	assert.Empty(t, pruned, "%s: fields the API server would drop", id)
}

// dropNulls removes the null values of fields that are not nullable, as
// the API server does before it validates a custom resource: a
// metav1.Time that is zero encodes as null (status.history[].deleted).
func dropNulls(v any, s *structuralschema.Structural) {
	if s == nil {
		return
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			p, ok := s.Properties[k]
			var ps *structuralschema.Structural
			switch {
			case ok:
				ps = &p
			case s.AdditionalProperties != nil:
				ps = s.AdditionalProperties.Structural
			}
			if ps == nil {
				continue
			}
			if e == nil && !ps.Nullable {
				delete(v, k)
				continue
			}
			dropNulls(e, ps)
		}
	case []any:
		for _, e := range v {
			dropNulls(e, s.Items)
		}
	}
}

func errorsOf(res *validate.Result) string {
	var msgs []string
	for _, e := range res.Errors {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}
