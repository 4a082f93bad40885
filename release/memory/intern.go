package memory

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
func (s *Schemas) intern(obj map[string]any) {
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
