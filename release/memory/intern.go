package memory

import (
	"reflect"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxInterned bounds the values a Schemas keeps for interning; the table
// starts over when it is full.
const maxInterned = 1 << 14

// internedMeta lists the metadata fields whose values stored objects
// share when equal (the others, uid and resourceVersion among them, are
// each object's own).
var internedMeta = []string{"labels", "annotations", "managedFields", "ownerReferences", "finalizers"}

// intern makes obj, an object about to be stored, share its subtrees with
// equal ones of objects stored before in any cluster of s: every
// top-level field but metadata, and metadata's internedMeta fields. A
// fleet of members holding the same objects (up to a few fields) then
// holds one copy of each part. It relies on the store's rule that a
// stored object is never written to in place.
// With done, obj came from internCopy with managedFields from
// appliedFields: it is interned already.
func (s *Schemas) intern(obj map[string]any, done bool) {
	if done {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range obj {
		if k == "metadata" {
			continue
		}
		obj[k] = s.internValue(v)
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return
	}
	for _, k := range internedMeta {
		if v, ok := meta[k]; ok {
			meta[k] = s.internValue(v)
		}
	}
}

// internValue returns the value kept equal to v, keeping v if there is
// none. Scalars are returned as they are. Callers hold s.mu.
func (s *Schemas) internValue(v any) any {
	switch v.(type) {
	case map[string]any, []any:
	default:
		return v
	}
	h, ok := s.shapeHash(v, true)
	if !ok {
		return v
	}
	for _, kept := range s.interned[h] {
		if sameShape(kept, v, true) {
			return kept
		}
	}
	if s.internedCount >= maxInterned {
		clear(s.interned)
		s.internedCount = 0
	}
	s.interned[h] = append(s.interned[h], v)
	s.internedCount++
	return v
}

// internCopy returns a copy of obj as normalize makes it, whose fields but
// metadata are interned: shared with an equal value kept before (without
// copying it) or copied and kept. With share false it does nothing. ok is
// false when obj holds what normalize must round-trip through JSON.
func (s *Schemas) internCopy(obj map[string]any, share bool) (out map[string]any, ok bool) {
	if !share {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out = make(map[string]any, len(obj))
	for k, v := range obj {
		if meta, isMap := v.(map[string]any); isMap && k == "metadata" {
			m := make(map[string]any, len(meta)+serverMetadata)
			for mk, me := range meta {
				if !slices.Contains(internedMeta, mk) {
					if m[mk], ok = jsonCopy(me); !ok {
						return nil, false
					}
				} else if m[mk], ok = s.internedCopy(me); !ok {
					return nil, false
				}
			}
			out[k] = m
			continue
		}
		if out[k], ok = s.internedCopy(v); !ok {
			return nil, false
		}
	}
	return out, true
}

// internedCopy returns the value kept equal to v, or a copy of v (as
// jsonCopy makes it) that is kept from now on. Callers hold s.mu.
func (s *Schemas) internedCopy(v any) (any, bool) {
	if kept, found := s.internedEqual(v); found {
		return kept, true
	}
	c, ok := jsonCopy(v)
	if !ok {
		return nil, false
	}
	return s.internValue(c), true
}

// appliedKey identifies the managedFields of an object created by apply:
// one Apply entry of manager, at time, owning fields (a createdFields
// result, by identity).
type appliedKey struct {
	manager, apiVersion, time string
	fields                    uintptr
}

// appliedFields returns the managedFields of an object that manager
// created by apply at time, owning fields (a createdFields result):
// shared by every object created so, not to be written to.
func (s *Schemas) appliedFields(manager, apiVersion, time string, fields map[string]any) []any {
	k := appliedKey{manager: manager, apiVersion: apiVersion, time: time, fields: reflect.ValueOf(fields).Pointer()}
	s.mu.Lock()
	defer s.mu.Unlock()
	if mf, ok := s.applied[k]; ok {
		return mf
	}
	if len(s.applied) >= maxInterned {
		clear(s.applied)
	}
	mf := []any{map[string]any{
		"manager": manager, "operation": string(metav1.ManagedFieldsOperationApply),
		"apiVersion": apiVersion, "time": time, "fieldsType": "FieldsV1", "fieldsV1": fields,
	}}
	s.applied[k] = mf
	return mf
}

// internedEqual returns the value kept equal to v, a map or list of JSON types.
// Callers hold s.mu.
func (s *Schemas) internedEqual(v any) (any, bool) {
	switch v.(type) {
	case map[string]any, []any:
	default:
		return nil, false
	}
	h, ok := s.shapeHash(v, true)
	if !ok {
		return nil, false
	}
	for _, kept := range s.interned[h] {
		if sameShape(kept, v, true) {
			return kept, true
		}
	}
	return nil, false
}
