package release

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/source"
)

// decodedObjects lists every object of o, walking its fields (and
// those of the structs among them, such as Policies) so that a kind added
// to Objects is listed too.
func decodedObjects(o *Objects) []any {
	var all []any
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i))
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.String { // Objects.Warnings
				return
			}
			for i := range v.Len() {
				e := v.Index(i)
				if e.Kind() != reflect.Pointer {
					e = e.Addr()
				}
				all = append(all, e.Interface())
			}
		}
	}
	walk(reflect.ValueOf(o).Elem())
	return all
}

// Every kind of the table is known to both paths: Decode reads every
// version of it into one object (of the scheme's Go type at the served
// version), and the schemes (AddToScheme, source.AddToScheme) register
// its served version and List kind with the table's Go types, each
// scheme its own kinds; and the schemes know no kind the table lacks.
// A client then reads from a cluster what a file may hold, and the
// other way round.
func TestKindsKnownToDecodeAndScheme(t *testing.T) {
	own, src, both := runtime.NewScheme(), runtime.NewScheme(), runtime.NewScheme()
	require.NoError(t, AddToScheme(own))
	require.NoError(t, source.AddToScheme(src))
	require.NoError(t, AddToScheme(both))
	require.NoError(t, source.AddToScheme(both))

	inTable := map[schema.GroupVersionKind]bool{}
	for _, k := range kinds() {
		t.Run(k.gk.String(), func(t *testing.T) {
			require.Contains(t, k.decode, k.served, "the served version is decoded")
			for v, f := range k.decode {
				require.NotNil(t, f, "version %s has a decoder", v)
				doc := fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: x\n  namespace: apps\n",
					schema.GroupVersion{Group: k.gk.Group, Version: v}, k.gk.Kind)
				objs, err := Decode(strings.NewReader(doc))
				require.NoError(t, err, "version %s", v)
				got := decodedObjects(objs)
				require.Len(t, got, 1, "version %s decodes into one object", v)
				if v == k.served && k.object != nil {
					assert.Equal(t, reflect.TypeOf(k.object()), reflect.TypeOf(got[0]), "version %s decodes into the scheme's type", v)
				}
			}
			if k.object == nil {
				assert.False(t, k.own, "a kind no scheme registers is not AddToScheme's")
				if k.gk.Group == "" { // the core group holds apimachinery's own kinds
					assert.False(t, both.Recognizes(k.gvk()), "no scheme registers %s", k.gvk())
					return
				}
				assert.False(t, both.IsGroupRegistered(k.gk.Group), "no scheme registers %s", k.gk.Group)
				return
			}
			list := k.gvk().GroupVersion().WithKind(k.gk.Kind + "List")
			inTable[k.gvk()], inTable[list] = true, true
			mine, other := own, src
			if !k.own {
				mine, other = src, own
			}
			for gvk, want := range map[schema.GroupVersionKind]runtime.Object{k.gvk(): k.object(), list: k.list()} {
				obj, err := mine.New(gvk)
				require.NoError(t, err, "registered by its scheme (own: %v)", k.own)
				assert.Equal(t, reflect.TypeOf(want), reflect.TypeOf(obj))
				assert.False(t, other.Recognizes(gvk), "only one scheme registers %s", gvk)
			}
		})
	}

	// Every kind the schemes know, but the meta kinds every group
	// version carries, is in the table.
	for gvk := range both.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		meta := runtime.NewScheme()
		metav1.AddToGroupVersion(meta, gvk.GroupVersion())
		if meta.Recognizes(gvk) {
			continue
		}
		assert.True(t, inTable[gvk], "the schemes register %s, which the table lacks", gvk)
	}
}
