// Package valuestest provides an in-memory values.Reader for tests and
// examples, with per-object error injection and a read counter.
package valuestest

import (
	"context"
	"fmt"
	"maps"
	"sync"

	"github.com/helmfleet/helmfleet/values"
)

type objectKey struct {
	kind      values.Kind
	namespace string
	name      string
}

// Reader is a map-backed values.Reader. Build it with NewReader and the
// ConfigMap, Secret and FailOn methods; it is safe for concurrent use.
type Reader struct {
	mu      sync.Mutex
	objects map[objectKey]map[string][]byte
	fail    map[objectKey]error
	reads   int
}

var _ values.Reader = (*Reader)(nil)

// NewReader returns an empty Reader.
func NewReader() *Reader {
	return &Reader{objects: map[objectKey]map[string][]byte{}, fail: map[objectKey]error{}}
}

// ConfigMap stores a ConfigMap's data and returns r for chaining.
func (r *Reader) ConfigMap(namespace, name string, data map[string]string) *Reader {
	b := make(map[string][]byte, len(data))
	for k, v := range data {
		b[k] = []byte(v)
	}
	return r.put(values.KindConfigMap, namespace, name, b)
}

// Secret stores a Secret's (decoded) data and returns r for chaining.
func (r *Reader) Secret(namespace, name string, data map[string][]byte) *Reader {
	return r.put(values.KindSecret, namespace, name, maps.Clone(data))
}

func (r *Reader) put(kind values.Kind, namespace, name string, data map[string][]byte) *Reader {
	r.mu.Lock()
	defer r.mu.Unlock()
	if data == nil {
		data = map[string][]byte{}
	}
	r.objects[objectKey{kind, namespace, name}] = data
	return r
}

// FailOn makes every read of the object return err and returns r.
func (r *Reader) FailOn(kind values.Kind, namespace, name string, err error) *Reader {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail[objectKey{kind, namespace, name}] = err
	return r
}

// Reads returns how many times Read was called.
func (r *Reader) Reads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reads
}

// Read implements values.Reader. A missing object gives an error matching
// values.ErrNotFound.
func (r *Reader) Read(ctx context.Context, kind values.Kind, namespace, name string) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads++
	k := objectKey{kind, namespace, name}
	if err := r.fail[k]; err != nil {
		return nil, err
	}
	data, ok := r.objects[k]
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, namespace, name, values.ErrNotFound)
	}
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		out[k] = append([]byte(nil), v...)
	}
	return out, nil
}
