package release

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/values"
)

// ObjectValues is a values.Reader over the ConfigMaps and Secrets of one
// cluster, read through its ObjectReader (a release/memory or
// release/kube cluster, or any other backend): what a reconcile.Reconciler's
// reconcile.Config.Values needs to read spec.valuesFrom where the objects
// live.
//
// It reads what Flux's helm-controller reads: a ConfigMap's .data (never
// .binaryData) and a Secret's .data, base64-decoded. A real API server
// folds a Secret's write-only .stringData into .data and never returns it;
// for a backend that keeps it as written, ObjectValues folds it the same
// way (a .stringData key wins over the same .data key). An absent object
// is an error matching values.ErrNotFound (and release.ErrNotFound); any
// other failure is a *ValuesReadError naming kind, namespace and name. No
// error quotes a Secret's data.
type ObjectValues struct {
	objects ObjectReader
}

var _ values.Reader = (*ObjectValues)(nil)

// NewObjectValues returns a values.Reader over objects.
func NewObjectValues(objects ObjectReader) *ObjectValues {
	return &ObjectValues{objects: objects}
}

// ValuesReadError reports a ConfigMap or Secret that could not be read as
// values: absent (errors.Is(err, values.ErrNotFound)), unreadable (the
// backend's error), or not of the shape an API server returns. It names
// the object and, where one is at fault, the data key; it never holds
// Secret data.
type ValuesReadError struct {
	// Kind is ConfigMap or Secret.
	Kind values.Kind
	// Namespace and Name of the object.
	Namespace, Name string
	// Key is the data key at fault, if one is.
	Key string
	// Detail says what is wrong when the object was read but is not
	// usable; empty when Err says it all.
	Detail string
	// Err is the backend's error, if any.
	Err error
}

// Error implements error.
func (e *ValuesReadError) Error() string {
	msg := fmt.Sprintf("read %s %s/%s", e.Kind, e.Namespace, e.Name)
	if e.Key != "" {
		msg += fmt.Sprintf(": key %q", e.Key)
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the backend's error and, for an absent object,
// values.ErrNotFound, so that values.Compose skips an optional reference.
func (e *ValuesReadError) Unwrap() []error {
	if e.Err == nil {
		return nil
	}
	if errors.Is(e.Err, ErrNotFound) && !errors.Is(e.Err, values.ErrNotFound) {
		return []error{e.Err, values.ErrNotFound}
	}
	return []error{e.Err}
}

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// Read implements values.Reader.
func (v *ObjectValues) Read(ctx context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error) {
	fail := func(key, detail string, err error) error {
		return &ValuesReadError{Kind: kind, Namespace: namespace, Name: name, Key: key, Detail: detail, Err: err}
	}
	var gvk schema.GroupVersionKind
	switch kind {
	case values.KindConfigMap:
		gvk = configMapGVK
	case values.KindSecret:
		gvk = secretGVK
	default:
		return nil, fail("", "", values.ErrUnsupportedKind)
	}
	obj, err := v.objects.Get(ctx, ObjectRef{GroupVersionKind: gvk, Namespace: namespace, Name: name})
	if err != nil {
		return nil, fail("", "", err)
	}
	data, serr := stringMap(obj, "data")
	if serr != nil {
		return nil, fail(serr.key, serr.detail, nil)
	}
	out := make(map[string][]byte, len(data))
	if kind == values.KindConfigMap {
		for k, s := range data {
			out[k] = []byte(s)
		}
		return out, nil
	}
	for k, s := range data {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			// The decoder's error gives an offset only, never the text.
			return nil, fail(k, "data is not valid base64", err)
		}
		out[k] = b
	}
	plain, serr := stringMap(obj, "stringData")
	if serr != nil {
		return nil, fail(serr.key, serr.detail, nil)
	}
	for k, s := range plain {
		out[k] = []byte(s)
	}
	return out, nil
}

// shapeError is a field of a ConfigMap or Secret that is not a map of
// strings; it names the key, never the value.
type shapeError struct{ key, detail string }

// stringMap returns obj's field as a map of strings (nil when absent).
func stringMap(obj *unstructured.Unstructured, field string) (map[string]string, *shapeError) {
	raw, ok := obj.Object[field]
	if !ok || raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, &shapeError{detail: fmt.Sprintf(".%s is a %T, not a map", field, raw)}
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, &shapeError{key: k, detail: fmt.Sprintf(".%s value is a %T, not a string", field, x)}
		}
		out[k] = s
	}
	return out, nil
}
