package crds_test

import (
	"bufio"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// fieldTable is the field table of the README, relative to this package.
const fieldTable = "../../docs/fields.md"

// fluxCRDsEnv names a directory of Flux's published CRDs
// (config/crd/bases/*.yaml of helm-, source- and kustomize-controller);
// by default ../shared/flux-crds beside the repository.
const fluxCRDsEnv = "HELMFLEET_FLUX_CRDS"

// Verdicts of the field table. "not read" is a gap the table owns up to
// (decoded and read by nothing, not yet warned); issue 32 forbids it, so
// each such row says what is pending.
var verdicts = []string{"acted on", "warned", "refused", "not written", "not read"}

// genericWhys are reasons that say where a field is decoded, not what is
// done with it: a row must say what reads it and where.
var genericWhys = []string{
	"read by decode/Validate/Default and the engine (release/reconcile)",
	"read by the source resolver (source package)",
	"read by Validate and release/kustomize (build, apply, prune, health)",
}

// tableRow is one field of docs/fields.md.
type tableRow struct{ verdict, why string }

// readFieldTable parses docs/fields.md: "## Kind (version)" headings,
// each followed by rows "| `path` | verdict | why |".
func readFieldTable(t *testing.T) map[string]map[string]tableRow {
	t.Helper()
	f, err := os.Open(fieldTable)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	heading := regexp.MustCompile("^## ([A-Za-z]+) \\(")
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([a-z ]+) \\| (.+) \\|$")
	table := map[string]map[string]tableRow{}
	kind := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := heading.FindStringSubmatch(line); m != nil {
			kind = m[1]
			table[kind] = map[string]tableRow{}
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil || kind == "" {
			continue
		}
		if !slices.Contains(verdicts, m[2]) {
			t.Errorf("%s:%d: %s field %s: verdict %q is none of %q", fieldTable, n, kind, m[1], m[2], verdicts)
		}
		if slices.Contains(genericWhys, m[3]) {
			t.Errorf("%s:%d: %s field %s: %q says nothing of what reads the field: name what is done with it and where", fieldTable, n, kind, m[1], m[3])
		}
		if m[2] == "not written" && !strings.HasPrefix(m[1], "status") {
			t.Errorf("%s:%d: %s field %s: only a status field can be %q", fieldTable, n, kind, m[1], m[2])
		}
		if _, dup := table[kind][m[1]]; dup {
			t.Errorf("%s:%d: %s field %s is listed twice", fieldTable, n, kind, m[1])
		}
		table[kind][m[1]] = tableRow{m[2], m[3]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return table
}

// goFields returns the field paths (spec..., status...) of a Go API type
// by its json tags, in the notation of schemaFields: "[]" for the items
// of a list, "{}" for the values of a map.
func goFields(obj any) map[string]bool {
	out := map[string]bool{}
	typ := reflect.TypeOf(obj)
	for _, top := range []string{"Spec", "Status"} {
		f, ok := typ.FieldByName(top)
		if !ok {
			continue
		}
		p := strings.ToLower(top)
		out[p] = true
		walkGo(f.Type, p, out, map[reflect.Type]bool{})
	}
	return out
}

var jsonMarshaler = reflect.TypeFor[json.Marshaler]()

func walkGo(t reflect.Type, path string, out map[string]bool, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Slice:
		walkGo(t.Elem(), path+"[]", out, seen)
		return
	case reflect.Map:
		walkGo(t.Elem(), path+"{}", out, seen)
		return
	case reflect.Struct:
	default:
		return
	}
	// Types that marshal themselves (metav1.Time, metav1.Duration) are leaves.
	if t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "" && f.Anonymous || name == "" && strings.Contains(f.Tag.Get("json"), "inline"):
			walkGo(f.Type, path, out, seen)
			continue
		case name == "":
			name = f.Name
		}
		p := path + "." + name
		out[p] = true
		walkGo(f.Type, p, out, seen)
	}
}

// schemaFields returns the field paths below spec and status of the
// served versions of a CRD, by kind.
func schemaFields(t *testing.T, file string) (kind, version string, fields map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	fields = map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		version = v.Name
		for _, top := range []string{"spec", "status"} {
			if s, ok := v.Schema.OpenAPIV3Schema.Properties[top]; ok {
				fields[top] = true
				walkSchema(&s, top, fields)
			}
		}
	}
	return crd.Spec.Names.Kind, version, fields
}

func walkSchema(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]bool) {
	for name, p := range s.Properties {
		q := path + "." + name
		out[q] = true
		walkSchema(&p, q, out)
	}
	if s.Items != nil && s.Items.Schema != nil {
		walkSchema(s.Items.Schema, path+"[]", out)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		walkSchema(s.AdditionalProperties.Schema, path+"{}", out)
	}
}

// ourTypes are the Go types of the kinds of the field table; a kind
// without one (ExternalArtifact) is not served: decode refuses it.
var ourTypes = map[string]any{
	"HelmRelease":    release.Release{},
	"Kustomization":  release.Kustomization{},
	"HelmRepository": source.HelmRepository{},
	"OCIRepository":  source.OCIRepository{},
	"HelmChart":      source.HelmChart{},
}

// TestFieldTableMatchesTypes checks that every field the field table
// (docs/fields.md) says is acted on, warned or not written exists in our
// Go types: a field that is not there is refused by the strict decoder,
// so the table must say "refused".
func TestFieldTableMatchesTypes(t *testing.T) {
	table := readFieldTable(t)
	for kind := range ourTypes {
		if len(table[kind]) == 0 {
			t.Errorf("%s: no section for %s", fieldTable, kind)
		}
	}
	for _, kind := range slices.Sorted(maps.Keys(table)) {
		var ours map[string]bool
		if obj, ok := ourTypes[kind]; ok {
			ours = goFields(obj)
		}
		for _, path := range slices.Sorted(maps.Keys(table[kind])) {
			if r := table[kind][path]; r.verdict != "refused" && !ours[path] {
				t.Errorf("%s field %s: %s says %q, but no Go type field has that json path: add it to the types or make the verdict refused", kind, path, fieldTable, r.verdict)
			}
		}
	}
}

// TestFieldTableCoversFlux walks Flux's published CRDs (Flux 2.9; the
// directory named by $HELMFLEET_FLUX_CRDS, else ../shared/flux-crds
// beside the repository) and checks that every field of their spec and
// status is in the field table.
func TestFieldTableCoversFlux(t *testing.T) {
	dir := os.Getenv(fluxCRDsEnv)
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "flux-crds")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) == 0 {
		t.Skipf("no Flux CRDs in %s (set %s to a directory of Flux's config/crd/bases/*.yaml)", dir, fluxCRDsEnv)
	}
	table := readFieldTable(t)
	for _, f := range files {
		kind, version, fields := schemaFields(t, f)
		rows, ok := table[kind]
		if !ok {
			if kind == "HelmRelease" || kind == "Kustomization" || strings.HasPrefix(filepath.Base(f), "source.") && kind != "GitRepository" && kind != "Bucket" {
				t.Errorf("%s: Flux's %s %s has no section in %s", filepath.Base(f), kind, version, fieldTable)
			}
			continue
		}
		for _, path := range slices.Sorted(maps.Keys(fields)) {
			if _, ok := rows[path]; !ok {
				t.Errorf("Flux's %s %s field %s is missing from %s", kind, version, path, fieldTable)
			}
		}
	}
}

// TestFieldTableCoversOurTypes checks that every field of our Go types
// (by json tags) has a row in the field table, so that a field added to
// the types is given a verdict.
func TestFieldTableCoversOurTypes(t *testing.T) {
	table := readFieldTable(t)
	for _, kind := range slices.Sorted(maps.Keys(ourTypes)) {
		for _, path := range slices.Sorted(maps.Keys(goFields(ourTypes[kind]))) {
			if _, ok := table[kind][path]; !ok {
				t.Errorf("%s field %s of our Go types is missing from %s", kind, path, fieldTable)
			}
		}
	}
}
