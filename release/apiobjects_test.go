package release_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"sigs.k8s.io/randfill"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// apiScheme is a scheme with both groups, as a controller would build it.
func apiScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, release.AddToScheme(s))
	require.NoError(t, source.AddToScheme(s))
	return s
}

// apiKinds are the kinds the two schemes register, with an empty object
// of each.
var apiKinds = []struct {
	gvk schema.GroupVersionKind
	obj runtime.Object
}{
	{schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}, &release.Release{}},
	{schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmReleaseList"}, &release.ReleaseList{}},
	{schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepository"}, &source.HelmRepository{}},
	{schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmRepositoryList"}, &source.HelmRepositoryList{}},
	{schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"}, &source.OCIRepository{}},
	{schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepositoryList"}, &source.OCIRepositoryList{}},
	{schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChart"}, &source.HelmChart{}},
	{schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "HelmChartList"}, &source.HelmChartList{}},
}

func TestSchemeRegistersFluxKinds(t *testing.T) {
	s := apiScheme(t)
	for _, k := range apiKinds {
		t.Run(k.gvk.Kind, func(t *testing.T) {
			gvks, _, err := s.ObjectKinds(k.obj)
			require.NoError(t, err)
			assert.Equal(t, []schema.GroupVersionKind{k.gvk}, gvks, "the kind a client sends and a RESTMapper maps")
			obj, err := s.New(k.gvk)
			require.NoError(t, err)
			assert.IsType(t, k.obj, obj)
		})
	}
	assert.Equal(t, "helm.toolkit.fluxcd.io/v2", release.GroupVersion.String())
	assert.Equal(t, "source.toolkit.fluxcd.io/v1", source.GroupVersion.String())
	// List and watch options are known in both groups, as a REST client
	// and a cache need them.
	for _, gv := range []schema.GroupVersion{release.GroupVersion, source.GroupVersion} {
		assert.True(t, s.Recognizes(gv.WithKind("ListOptions")), gv.String())
		assert.True(t, s.Recognizes(gv.WithKind("WatchEvent")), gv.String())
	}
}

// TestSchemeCodecReadsFluxYAML decodes the same Flux documents with the
// scheme's codec (what a client, cache or fake client uses) and with
// Decode: both give the same objects. Integral numbers in spec.values are
// int64 from the codec and float64 from Decode, so the objects are
// compared as JSON, where the two are the same.
func TestSchemeCodecReadsFluxYAML(t *testing.T) {
	codecs := serializer.NewCodecFactory(apiScheme(t), serializer.EnableStrict)
	for _, doc := range []struct{ file, kind string }{
		{"allfields.yaml", "HelmRelease"},
		{"flux_guide.yaml", ""},
	} {
		objs, err := decodeTestdata(t, doc.file)
		require.NoError(t, err)
		var want []runtime.Object
		for _, r := range objs.Releases {
			want = append(want, r)
		}
		for _, r := range objs.HelmRepositories {
			want = append(want, r)
		}
		for _, r := range objs.OCIRepositories {
			want = append(want, r)
		}
		require.NotEmpty(t, want)
		for _, w := range want {
			if gvk := w.GetObjectKind().GroupVersionKind(); gvk.Group == source.Group {
				// Decode reads v1beta2 sources too; the scheme has v1.
				w.GetObjectKind().SetGroupVersionKind(source.GroupVersion.WithKind(gvk.Kind))
			}
			data, err := json.Marshal(w)
			require.NoError(t, err)
			got, gvk, err := codecs.UniversalDeserializer().Decode(data, nil, nil)
			require.NoError(t, err, "%s: %s", doc.file, data)
			assert.IsType(t, w, got)
			assert.Equal(t, w.GetObjectKind().GroupVersionKind().Kind, gvk.Kind)
			gotJSON, err := json.Marshal(got)
			require.NoError(t, err)
			assert.JSONEq(t, string(data), string(gotJSON), doc.file)
		}
	}
}

func decodeTestdata(t *testing.T, name string) (*release.Objects, error) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "decode", name))
	require.NoError(t, err)
	defer f.Close()
	return release.Decode(f)
}

// valuesFuzzerFuncs fill spec.values with JSON values the JSON codec
// reads back as they were: strings, booleans, non-integral float64s,
// nested maps and slices.
func valuesFuzzerFuncs(serializer.CodecFactory) []any {
	var value func(c randfill.Continue, depth int) any
	value = func(c randfill.Continue, depth int) any {
		switch n := c.Intn(6); {
		case n == 0 && depth < 3:
			m := map[string]any{}
			for i := c.Intn(3); i >= 0; i-- {
				m[c.String(8)] = value(c, depth+1)
			}
			return m
		case n == 1 && depth < 3:
			s := make([]any, c.Intn(3))
			for i := range s {
				s[i] = value(c, depth+1)
			}
			return s
		case n == 2:
			return c.Bool()
		case n == 3:
			return float64(c.Intn(1000)) + 0.5
		case n == 4:
			return nil
		default:
			return c.String(16)
		}
	}
	return []any{
		// A non-nil pointer to a nil map encodes as null and decodes as
		// a nil pointer: the fuzzer fills the map when it sets the pointer.
		func(v **map[string]*release.TestHookStatus, c randfill.Continue) {
			if c.Bool() {
				*v = nil
				return
			}
			m := map[string]*release.TestHookStatus{}
			c.Fill(&m)
			if m == nil {
				m = map[string]*release.TestHookStatus{}
			}
			*v = &m
		},
		func(v *map[string]any, c randfill.Continue) {
			if c.Bool() {
				*v = nil
				return
			}
			*v = map[string]any{}
			for i := c.Intn(4); i >= 0; i-- {
				(*v)[c.String(8)] = value(c, 0)
			}
		},
	}
}

// TestAPIObjectsFuzzRoundTrip is apimachinery's round-trip test (as
// k8s.io/apimachinery/pkg/api/apitesting/roundtrip runs it, whose
// go-cmp dependency go.mod does not list) for every kind: a randomly
// filled object deep-copies equal, encodes to JSON with the scheme's
// codec and decodes back equal, and fuzzing the copy leaves the original
// alone.
func TestAPIObjectsFuzzRoundTrip(t *testing.T) {
	s := apiScheme(t)
	codecs := serializer.NewCodecFactory(s)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, valuesFuzzerFuncs), rand.NewSource(seed), codecs)
	codec := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, s, s, kjson.SerializerOptions{})
	for _, k := range apiKinds {
		t.Run(k.gvk.Kind, func(t *testing.T) {
			for range 50 {
				obj, err := s.New(k.gvk)
				require.NoError(t, err)
				f.Fill(obj)
				obj.GetObjectKind().SetGroupVersionKind(k.gvk)

				cp := obj.DeepCopyObject()
				require.True(t, equality.Semantic.DeepEqual(obj, cp), "DeepCopy altered the object")
				data, err := runtime.Encode(codec, cp)
				require.NoError(t, err)
				again, err := runtime.Encode(codec, cp)
				require.NoError(t, err)
				require.Equal(t, string(data), string(again), "encoding is not stable")
				back, err := runtime.Decode(codec, data)
				require.NoError(t, err)
				if !equality.Semantic.DeepEqual(obj, back) {
					require.Equal(t, obj, back, "JSON round trip altered the object:\n%s", data)
				}

				// Changing every value of the copy in place, keeping its
				// pointers, maps and slices, must not reach the original.
				fuzzer.ValueFuzz(cp)
				require.True(t, equality.Semantic.DeepEqual(obj, back), "fuzzing the copy altered the original")
			}
		})
	}
}

// TestDeepCopySharesNothing fills every field of every kind (every
// pointer set, every slice and map with two entries, spec.values nested),
// deep-copies it, and checks the copy is equal and shares no pointer, map
// or slice with the original, walking both by reflection. A field added
// to a type and missed by its DeepCopyInto fails here.
func TestDeepCopySharesNothing(t *testing.T) {
	for _, k := range apiKinds {
		t.Run(k.gvk.Kind, func(t *testing.T) {
			in := reflect.New(reflect.TypeOf(k.obj).Elem())
			fillAll(t, in.Elem(), k.gvk.Kind)
			obj := in.Interface().(runtime.Object)

			cp := obj.DeepCopyObject()
			require.IsType(t, obj, cp)
			assert.Equal(t, obj, cp)
			assertNoSharing(t, reflect.ValueOf(obj), reflect.ValueOf(cp), k.gvk.Kind)

			// DeepCopy and DeepCopyInto say the same.
			dc := in.MethodByName("DeepCopy").Call(nil)[0]
			assert.Equal(t, obj, dc.Interface())
			assertNoSharing(t, in, dc, k.gvk.Kind)
		})
	}
}

func TestDeepCopyNil(t *testing.T) {
	assert.Nil(t, (*release.Release)(nil).DeepCopy())
	assert.Nil(t, (*release.ReleaseList)(nil).DeepCopy())
	assert.Nil(t, (*release.Spec)(nil).DeepCopy())
	assert.Nil(t, (*release.Status)(nil).DeepCopy())
	assert.Nil(t, (*source.HelmRepository)(nil).DeepCopy())
	assert.Nil(t, (*source.OCIRepository)(nil).DeepCopy())
	assert.Nil(t, (*source.HelmChart)(nil).DeepCopy())
	assert.Nil(t, release.Snapshots(nil).DeepCopy())
	assert.Nil(t, release.DeepCopyValues(nil))
	// A zero Release copies to a zero Release: no nil map or slice is
	// turned into an empty one.
	assert.Equal(t, &release.Release{}, (&release.Release{}).DeepCopy())
}

func TestDeepCopyValues(t *testing.T) {
	in := map[string]any{
		"replicas": 3,              // an int a caller set stays an int
		"ratio":    0.5,            // float64, as Decode gives numbers
		"big":      int64(1 << 60), // int64, as the API codec gives integers
		"tags":     []string{"a"},  // not a JSON type: copied through JSON
		"image":    map[string]any{"tag": "1.0", "pull": []any{"Always", nil}},
		"empty":    map[string]any{},
		"none":     nil,
	}
	out := release.DeepCopyValues(in)
	assert.Equal(t, map[string]any{
		"replicas": 3,
		"ratio":    0.5,
		"big":      int64(1 << 60),
		"tags":     []any{"a"},
		"image":    map[string]any{"tag": "1.0", "pull": []any{"Always", nil}},
		"empty":    map[string]any{},
		"none":     nil,
	}, out)
	out["image"].(map[string]any)["pull"].([]any)[0] = "changed"
	out["empty"].(map[string]any)["x"] = 1
	assert.Equal(t, "Always", in["image"].(map[string]any)["pull"].([]any)[0])
	assert.Empty(t, in["empty"])

	assert.PanicsWithValue(t, "deep copy of spec.values.a.b[1]: chan int: json: unsupported type: chan int", func() {
		release.DeepCopyValues(map[string]any{"a": map[string]any{"b": []any{1, make(chan int)}}})
	})
}

// fillAll sets every exported field reachable from v to a value other
// than its zero value.
func fillAll(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)))
		return
	case reflect.TypeFor[map[string]any]():
		v.Set(reflect.ValueOf(map[string]any{
			"image": map[string]any{"tag": "1.0", "pull": []any{"Always", map[string]any{"deep": true}}},
			"n":     1.5,
		}))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(t, v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillAll(t, v.Elem(), path)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillAll(t, v.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fillAll(t, k, path+"[key]")
			if k.Kind() == reflect.String {
				k.SetString(fmt.Sprintf("k%d", i))
			}
			e := reflect.New(v.Type().Elem()).Elem()
			fillAll(t, e, path+"[elem]")
			v.SetMapIndex(k, e)
		}
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf(map[string]any{"a": []any{"b"}}))
	default:
		t.Fatalf("%s: cannot fill a %s", path, v.Type())
	}
}

// assertNoSharing walks a and its copy b and fails where they share a
// pointer, a map or a slice's backing array.
func assertNoSharing(t *testing.T, a, b reflect.Value, path string) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: pointer shared with the original", path)
			return
		}
		assertNoSharing(t, a.Elem(), b.Elem(), path)
	case reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return
		}
		assertNoSharing(t, a.Elem(), b.Elem(), path)
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				assertNoSharing(t, a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
			}
		}
	case reflect.Slice:
		if a.Len() == 0 || b.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: slice shares its array with the original", path)
			return
		}
		for i := range a.Len() {
			assertNoSharing(t, a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if a.IsNil() || b.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s: map shared with the original", path)
			return
		}
		for _, k := range a.MapKeys() {
			assertNoSharing(t, a.MapIndex(k), b.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))
		}
	}
}
