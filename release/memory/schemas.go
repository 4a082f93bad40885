package memory

import (
	"fmt"
	"hash/maphash"
	"math"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
)

// maxShapes bounds the memo of a Schemas: past it, new shapes are computed
// each time and not kept.
const maxShapes = 4096

// Schemas is what in-memory clusters can share about kinds: the REST
// mapping of the built-in kinds, the type converters (client-go's schemas
// for the built-in kinds, deduced types for the others), Kubernetes' field
// manager per kind, and a memo of the
// managed fields that creating an object by server-side apply records.
// Clusters made WithSchemas of one Schemas build these once between them
// instead of once each, which is what makes filling a fleet of a thousand
// in-memory members cheap: the same rendered objects go to every member.
//
// The memo is exact. The fields an applier owns depend only on the
// object's shape: its map keys, the kind of each value, and the whole of
// every list element (associative lists are keyed by values inside their
// elements). An object is looked up by a hash of that shape and then
// compared with the object kept for it, shape for shape, so two objects
// share an entry only when Kubernetes' field manager would record the same
// fields for both. Errors are never kept. A cluster made without WithSchemas has a Schemas of its
// own. It is safe for concurrent use.
type Schemas struct {
	typed, deduced managedfields.TypeConverter
	mapper         *meta.DefaultRESTMapper // the built-in kinds; only read
	builtins       []servedKind            // the built-in kinds as served; only read
	seed           maphash.Seed

	mu         sync.Mutex
	converters map[schema.GroupVersionKind]managedfields.TypeConverter
	managers   map[managerKey]*managedfields.FieldManager
	statuses   map[schema.GroupVersionKind]bool
	shapes     map[shapeKey][]shapeEntry
	kept       int
	versions   map[string][]string // sorted version sets by versionSet's key; only read once kept

	interned      map[uint64][]any     // values stored objects share, by shapeHash(v, true)
	applied       map[appliedKey][]any // managedFields of objects created by apply
	internedCount int
}

// maxVersionSets bounds the memo of version sets.
const maxVersionSets = 256

// versionSet returns the version set kept under key.
func (s *Schemas) versionSet(key string) ([]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.versions[key]
	return v, ok
}

// keepVersionSet keeps set under key, which no one writes to afterwards.
func (s *Schemas) keepVersionSet(key string, set []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.versions) >= maxVersionSets {
		clear(s.versions)
	}
	s.versions[key] = set
}

// managerKey finds the field manager of one kind and status mode.
type managerKey struct {
	gvk  schema.GroupVersionKind
	mode statusMode
}

// shapeKey finds the memo entries of one kind and shape hash.
type shapeKey struct {
	gvk schema.GroupVersionKind
	sum uint64
}

// shapeEntry is the FieldsV1 of the shape of object. Neither is written
// after it is kept: stored objects share fields, as nothing writes to a
// stored object in place (see store).
type shapeEntry struct {
	object map[string]any
	fields map[string]any
}

// NewSchemas returns an empty Schemas; give it to clusters with
// WithSchemas.
func NewSchemas() *Schemas {
	mapper, builtins := builtInMapper()
	return &Schemas{
		typed:      applyconfigurations.NewTypeConverter(scheme.Scheme),
		deduced:    managedfields.NewDeducedTypeConverter(),
		mapper:     mapper,
		builtins:   builtins,
		seed:       maphash.MakeSeed(),
		converters: map[schema.GroupVersionKind]managedfields.TypeConverter{},
		managers:   map[managerKey]*managedfields.FieldManager{},
		statuses:   map[schema.GroupVersionKind]bool{},
		shapes:     map[shapeKey][]shapeEntry{},
		versions:   map[string][]string{},
		interned:   map[uint64][]any{},
		applied:    map[appliedKey][]any{},
	}
}

// WithSchemas makes the cluster share s with the other clusters made with
// it (see Schemas).
func WithSchemas(s *Schemas) Option { return func(c *Cluster) { c.schemas = s } }

// converter returns the type converter of gvk: typed where client-go's
// schema knows the kind, deduced elsewhere.
func (s *Schemas) converter(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.converterLocked(gvk)
}

func (s *Schemas) converterLocked(gvk schema.GroupVersionKind) managedfields.TypeConverter {
	if tc, ok := s.converters[gvk]; ok {
		return tc
	}
	tc := s.deduced
	probe := &unstructured.Unstructured{Object: map[string]any{}}
	probe.SetGroupVersionKind(gvk)
	if _, err := s.typed.ObjectToTyped(probe); err == nil {
		tc = s.typed
	}
	s.converters[gvk] = tc
	return tc
}

// fieldManager returns Kubernetes' field manager for writes of gvk in
// mode, made with its converter and, as an API server makes it, with the
// subresource and the fields the mode's strategy resets (see
// resetFields). A field manager holds no object state: an API server
// shares one per resource and subresource between all requests.
func (s *Schemas) fieldManager(gvk schema.GroupVersionKind, mode statusMode) (*managedfields.FieldManager, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := managerKey{gvk, mode}
	if fm, ok := s.managers[k]; ok {
		return fm, nil
	}
	fm, err := managedfields.NewDefaultCRDFieldManager(s.converterLocked(gvk), unstructuredConvertor{}, unstructuredDefaulter{}, unstructuredCreater{}, gvk, gvk.GroupVersion(), mode.subresource(), mode.resetFields(gvk))
	if err != nil {
		return nil, err
	}
	s.managers[k] = fm
	return fm, nil
}

// typedStatus reports whether client-go's schema gives gvk a status
// field: how the in-memory cluster tells the built-in kinds that have a
// status subresource (Deployment, Pod, Namespace, Service, Job, …) from
// those that have none (ConfigMap, Secret, ServiceAccount, Role, …).
func (s *Schemas) typedStatus(gvk schema.GroupVersionKind) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if has, ok := s.statuses[gvk]; ok {
		return has
	}
	has := false
	if s.converterLocked(gvk) == s.typed {
		probe := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{}}}
		probe.SetGroupVersionKind(gvk)
		_, err := s.typed.ObjectToTyped(probe)
		has = err == nil
	}
	s.statuses[gvk] = has
	return has
}

// createdFields returns the FieldsV1 (as plain JSON values, shared: not
// to be written to) that an applier owns after creating in by server-side
// apply: every field it sent but those an API server never records. in
// holds JSON types only (see normalize).
func (s *Schemas) createdFields(gvk schema.GroupVersionKind, in *unstructured.Unstructured) (map[string]any, error) {
	sum, ok := s.shapeHash(in.Object, false)
	k := shapeKey{gvk, sum}
	if ok {
		s.mu.Lock()
		for _, e := range s.shapes[k] {
			if sameShape(e.object, in.Object, false) {
				s.mu.Unlock()
				return e.fields, nil
			}
		}
		s.mu.Unlock()
	}
	tv, err := s.converter(gvk).ObjectToTyped(in)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s %s: %v", gvk.Kind, in.GetName(), err))
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s %s: %v", gvk.Kind, in.GetName(), err))
	}
	fields, err := fieldsV1(set.Difference(stripSet))
	if err != nil {
		return nil, err
	}
	if ok {
		object, _ := jsonCopy(in.Object) // in is written to after this
		s.mu.Lock()
		if s.kept < maxShapes {
			s.shapes[k] = append(s.shapes[k], shapeEntry{object: object.(map[string]any), fields: fields})
			s.kept++
		}
		s.mu.Unlock()
	}
	return fields, nil
}

// Tags of the kinds of values in a shape hash.
const (
	tagMap uint64 = iota + 1
	tagList
	tagString
	tagInt
	tagFloat
	tagBool
	tagNull
)

// shapeHash hashes v's shape: its map keys (in any order) with the shapes
// of their values, the kind of each scalar, and its value too when inside
// a list. ok is false for a value that is not a JSON type.
func (s *Schemas) shapeHash(v any, inList bool) (uint64, bool) {
	switch t := v.(type) {
	case map[string]any:
		h := mix(tagMap + uint64(len(t)))
		for k, e := range t {
			eh, ok := s.shapeHash(e, inList)
			if !ok {
				return 0, false
			}
			h += mix(maphash.String(s.seed, k) ^ eh) // a sum: key order does not matter
		}
		return mix(h), true
	case []any:
		h := mix(tagList + uint64(len(t)))
		for _, e := range t {
			eh, ok := s.shapeHash(e, true)
			if !ok {
				return 0, false
			}
			h = mix(h ^ eh)
		}
		return h, true
	case string:
		if inList {
			return mix(tagString ^ maphash.String(s.seed, t)), true
		}
		return tagString, true
	case int64:
		if inList {
			return mix(tagInt ^ mix(uint64(t))), true
		}
		return tagInt, true
	case float64:
		if inList {
			return mix(tagFloat ^ mix(math.Float64bits(t))), true
		}
		return tagFloat, true
	case bool:
		if inList && t {
			return mix(tagBool), true
		}
		return tagBool, true
	case nil:
		return tagNull, true
	}
	return 0, false
}

// mix is SplitMix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// sameShape reports whether a and b have the same shape, as shapeHash
// hashes it.
func sameShape(a, b any, inList bool) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !sameShape(xv, yv, inList) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameShape(x[i], y[i], true) {
				return false
			}
		}
		return true
	case string:
		y, ok := b.(string)
		return ok && (!inList || x == y)
	case int64:
		y, ok := b.(int64)
		return ok && (!inList || x == y)
	case float64:
		y, ok := b.(float64)
		return ok && (!inList || x == y)
	case bool:
		y, ok := b.(bool)
		return ok && (!inList || x == y)
	case nil:
		return b == nil
	}
	return false
}
