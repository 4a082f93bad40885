package release_test

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/values"
)

// secretText is Secret data that no error may quote.
const secretText = "s3cr3t-CANARY"

func applyObject(t *testing.T, c release.ObjectWriter, obj map[string]any) {
	t.Helper()
	_, err := c.Apply(context.Background(), &unstructured.Unstructured{Object: obj}, release.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestObjectValuesOnMemory(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member-1")
	applyObject(t, c, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata":   map[string]any{"namespace": "apps", "name": "podinfo-values"},
		"data":       map[string]any{"values.yaml": "replicaCount: 3\n", "color": "blue"},
		"binaryData": map[string]any{"logo.png": b64("\x89PNG")},
	})
	applyObject(t, c, map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": "apps", "name": "podinfo-secret"},
		"data":     map[string]any{"values.yaml": b64("password: " + secretText + "\n"), "token": b64("abc")},
	})
	r := release.NewObjectValues(c)

	tests := []struct {
		name      string
		kind      values.Kind
		namespace string
		object    string
		want      map[string][]byte
		notFound  bool
	}{
		{name: "ConfigMap data, binaryData left out as Flux does", kind: values.KindConfigMap, namespace: "apps", object: "podinfo-values",
			want: map[string][]byte{"values.yaml": []byte("replicaCount: 3\n"), "color": []byte("blue")}},
		{name: "Secret data decoded", kind: values.KindSecret, namespace: "apps", object: "podinfo-secret",
			want: map[string][]byte{"values.yaml": []byte("password: " + secretText + "\n"), "token": []byte("abc")}},
		{name: "absent ConfigMap", kind: values.KindConfigMap, namespace: "apps", object: "nope", notFound: true},
		{name: "a Secret is not a ConfigMap", kind: values.KindConfigMap, namespace: "apps", object: "podinfo-secret", notFound: true},
		{name: "other namespace", kind: values.KindSecret, namespace: "other", object: "podinfo-secret", notFound: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Read(ctx, tc.kind, tc.namespace, tc.object)
			if tc.notFound {
				require.Error(t, err)
				assert.ErrorIs(t, err, values.ErrNotFound)
				assert.ErrorIs(t, err, release.ErrNotFound)
				var re *release.ValuesReadError
				require.ErrorAs(t, err, &re)
				assert.Equal(t, tc.kind, re.Kind)
				assert.Contains(t, err.Error(), string(tc.kind)+" "+tc.namespace+"/"+tc.object)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The reader composes with values.Compose as Flux reads valuesFrom: an
// optional absent object is skipped, a required one fails naming it.
func TestObjectValuesCompose(t *testing.T) {
	ctx := context.Background()
	c := memory.New("member-1")
	applyObject(t, c, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "apps", "name": "base"},
		"data":     map[string]any{"values.yaml": "replicaCount: 3\nui:\n  color: blue\n"},
	})
	applyObject(t, c, map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": "apps", "name": "creds"},
		"data":     map[string]any{"password": b64(secretText)},
	})
	r := release.NewObjectValues(c)
	req := values.Request{Release: "apps/podinfo", Namespace: "apps", From: []values.Reference{
		{Kind: values.KindConfigMap, Name: "base"},
		{Kind: values.KindConfigMap, Name: "missing", Optional: true},
		{Kind: values.KindSecret, Name: "creds", ValuesKey: "password", TargetPath: "db.password"},
	}}
	res, err := values.Compose(ctx, r, req)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"replicaCount": float64(3), "ui": map[string]any{"color": "blue"}, "db": map[string]any{"password": secretText}}, res.Values)

	req.From[1].Optional = false
	_, err = values.Compose(ctx, r, req)
	require.Error(t, err)
	assert.ErrorIs(t, err, values.ErrNotFound)
	assert.Contains(t, err.Error(), "ConfigMap apps/missing")
}

// stubReader returns one object, or an error, whatever is asked.
type stubReader struct {
	obj *unstructured.Unstructured
	err error
}

func (s stubReader) Get(context.Context, release.ObjectRef) (*unstructured.Unstructured, error) {
	return s.obj, s.err
}

func (s stubReader) List(context.Context, schema.GroupVersionKind, string, labels.Selector) ([]*unstructured.Unstructured, error) {
	return nil, errors.New("not used")
}

// Objects an API server would not return, and backend failures: each is
// an error naming the object (and key), none quotes Secret data, and
// only an absent object matches values.ErrNotFound.
func TestObjectValuesErrors(t *testing.T) {
	ctx := context.Background()
	secret := func(fields map[string]any) *unstructured.Unstructured {
		obj := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"namespace": "apps", "name": "creds"}}
		for k, v := range fields {
			obj[k] = v
		}
		return &unstructured.Unstructured{Object: obj}
	}
	denied := errors.New("secrets \"creds\" is forbidden")
	tests := []struct {
		name   string
		kind   values.Kind
		reader stubReader
		want   string
		is     error
	}{
		{name: "backend failure", kind: values.KindSecret, reader: stubReader{err: denied},
			want: `read Secret apps/creds: secrets "creds" is forbidden`, is: denied},
		{name: "data not base64", kind: values.KindSecret, reader: stubReader{obj: secret(map[string]any{"data": map[string]any{"password": secretText + "!"}})},
			want: `read Secret apps/creds: key "password": data is not valid base64: illegal base64 data at input byte 6`},
		{name: "data value not a string", kind: values.KindSecret, reader: stubReader{obj: secret(map[string]any{"data": map[string]any{"password": int64(7)}})},
			want: `read Secret apps/creds: key "password": .data value is a int64, not a string`},
		{name: "data not a map", kind: values.KindSecret, reader: stubReader{obj: secret(map[string]any{"data": secretText})},
			want: `read Secret apps/creds: .data is a string, not a map`},
		{name: "unsupported kind", kind: values.Kind("Namespace"), reader: stubReader{obj: secret(nil)},
			want: `read Namespace apps/creds: unsupported values reference kind`, is: values.ErrUnsupportedKind},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := release.NewObjectValues(tc.reader).Read(ctx, tc.kind, "apps", "creds")
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			assert.NotContains(t, err.Error(), "CANARY")
			assert.NotErrorIs(t, err, values.ErrNotFound)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// A real API server folds stringData into data on write and never
// returns it; a backend that keeps it as written is read the same way.
func TestObjectValuesSecretStringData(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"namespace": "apps", "name": "creds"},
		"data":       map[string]any{"a": b64("from data"), "b": b64("from data")},
		"stringData": map[string]any{"b": "from stringData", "c": "plain"},
	}}
	got, err := release.NewObjectValues(stubReader{obj: obj}).Read(context.Background(), values.KindSecret, "apps", "creds")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"a": []byte("from data"), "b": []byte("from stringData"), "c": []byte("plain")}, got)
}
