package drift

import (
	"math"
	"slices"
	"strconv"
)

// keyPart is the canonical form of one merge-key value. Values that
// equalValues finds equal have equal keyParts, so a map from keyParts
// finds every candidate at once. The converse does not quite hold:
// numbers are kept as float64, and two integers beyond 2^53 may share
// one, so a candidate is always confirmed with mergeKey.equal.
type keyPart struct {
	kind uint8
	s    string // the string, or the encoding of a map or list
	n    uint64 // the bits of a number, or 1 for true
}

const (
	partNone   uint8 = iota // matches nothing, not even itself (NaN, unknown types)
	partAbsent              // the second key field is unset and has no default
	partString
	partBool
	partNumber
	partComposite
)

// canonPart returns the canonical form of v, whose kind is partNone when
// v equals nothing.
func canonPart(v any) keyPart {
	switch x := v.(type) {
	case string:
		return keyPart{kind: partString, s: x}
	case bool:
		if x {
			return keyPart{kind: partBool, n: 1}
		}
		return keyPart{kind: partBool}
	case map[string]any, []any:
		// A map or list as a key is odd but allowed; it is encoded whole.
		// Deeper than MaxDepth it equals nothing, as in equalValues.
		b, ok := appendCanon(nil, v, MaxDepth)
		if !ok {
			return keyPart{}
		}
		return keyPart{kind: partComposite, s: string(b)}
	}
	if bits, ok := numberBits(v); ok {
		return keyPart{kind: partNumber, n: bits}
	}
	return keyPart{}
}

// numberBits returns the float64 bits of a number, with -0 as 0.
func numberBits(v any) (uint64, bool) {
	f, ok := number(v)
	if !ok {
		return 0, false
	}
	if f == 0 {
		f = 0
	}
	return math.Float64bits(f), true
}

// appendCanon appends an encoding of v in which values equal under
// equalValues encode alike. It fails for values that equal nothing (NaN,
// unknown types) and for nesting deeper than room.
func appendCanon(b []byte, v any, room int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, 'z'), true
	case string:
		b = append(b, 's')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		b = append(b, ':')
		return append(b, x...), true
	case bool:
		if x {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case map[string]any:
		if room <= 0 && len(x) > 0 {
			return b, false
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for _, k := range keys {
			b = strconv.AppendInt(b, int64(len(k)), 10)
			b = append(b, ':')
			b = append(b, k...)
			var ok bool
			if b, ok = appendCanon(b, x[k], room-1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		if room <= 0 && len(x) > 0 {
			return b, false
		}
		b = append(b, '[')
		for _, e := range x {
			var ok bool
			if b, ok = appendCanon(b, e, room-1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	}
	bits, ok := numberBits(v)
	if !ok {
		return b, false
	}
	b = append(b, 'n')
	b = strconv.AppendUint(b, bits, 16)
	return append(b, ';'), true
}

// keyTuple is the canonical form of an element's merge key.
type keyTuple struct {
	first, second keyPart
}

// tuple returns the canonical key of an element; ok is false when the
// element can match no other (its first key field is unset, or a key
// field equals nothing).
func (mk mergeKey) tuple(m map[string]any) (t keyTuple, ok bool) {
	a, ok := mk.field(m, mk.first, "")
	if !ok {
		return t, false
	}
	if t.first = canonPart(a); t.first.kind == partNone {
		return t, false
	}
	if mk.second == "" {
		t.second.kind = partAbsent
		return t, true
	}
	b, ok := mk.field(m, mk.second, mk.secondDefault)
	if !ok {
		t.second.kind = partAbsent
		return t, true
	}
	t.second = canonPart(b)
	return t, t.second.kind != partNone
}

// exact reports whether equal canonical forms mean equal values, so that no
// check with mergeKey.equal is needed: strings and booleans, not numbers
// (two integers beyond 2^53 may share a float64) nor what may hold them.
func (t keyTuple) exact() bool {
	return (t.first.kind == partString || t.first.kind == partBool) &&
		(t.second.kind == partAbsent || t.second.kind == partString || t.second.kind == partBool)
}

// keyIndex finds live elements of a keyed list by key in constant time,
// which keeps the comparison of a reordered list linear (it was quadratic:
// 23 s for 10,000 reversed containers).
type keyIndex struct {
	// heads holds per key the lowest live index; next chains the live
	// indices of the same key in ascending order, ending in -1.
	heads tupleMap
	next  []int32
}

// heads are the first live and desired index of a key, -1 for none. Both
// sides share one map: for lists of thousands of elements, how much memory
// the index takes decides how fast it is.
type heads struct{ live, desired int32 }

// tupleMap maps keys to heads. Most keys are a single string (a name),
// which it keeps in a map of strings, a third of the memory of full tuples.
type tupleMap struct {
	names map[string]heads
	other map[keyTuple]heads
}

func newTupleMap(mk mergeKey, size int) tupleMap {
	if mk.second == "" {
		return tupleMap{names: make(map[string]heads, size)}
	}
	return tupleMap{other: make(map[keyTuple]heads, size)}
}

func isName(t keyTuple) bool { return t.first.kind == partString && t.second.kind == partAbsent }

// get returns the heads of t, {-1, -1} if it has none.
func (m *tupleMap) get(t keyTuple) heads {
	h, ok := heads{}, false
	if isName(t) {
		h, ok = m.names[t.first.s]
	} else {
		h, ok = m.other[t]
	}
	if !ok {
		return heads{-1, -1}
	}
	return h
}

func (m *tupleMap) set(t keyTuple, h heads) {
	if isName(t) {
		if m.names == nil {
			m.names = make(map[string]heads)
		}
		m.names[t.first.s] = h
		return
	}
	if m.other == nil {
		m.other = make(map[keyTuple]heads)
	}
	m.other[t] = h
}

// newKeyIndex indexes ll when dv can be matched to it by key: every desired
// element is a map carrying the key, no two share it, and every live
// element is a map. Otherwise it returns nil and the list is compared by
// position.
func newKeyIndex(dv, ll []any, mk mergeKey) *keyIndex {
	for _, e := range ll {
		if _, ok := e.(map[string]any); !ok {
			return nil
		}
	}
	x := &keyIndex{heads: newTupleMap(mk, len(ll)), next: make([]int32, len(ll))}
	for k := len(ll) - 1; k >= 0; k-- {
		x.next[k] = -1
		t, ok := mk.tuple(ll[k].(map[string]any))
		if !ok {
			continue
		}
		h := x.heads.get(t)
		x.next[k], h.live = h.live, int32(k)
		x.heads.set(t, h)
	}
	// Duplicates among the desired elements, chained through chain.
	chain := make([]int32, len(dv))
	for j, e := range dv {
		m, ok := e.(map[string]any)
		if !ok {
			return nil
		}
		if v, ok := m[mk.first]; !ok || v == nil {
			return nil
		}
		chain[j] = -1
		t, ok := mk.tuple(m)
		if !ok {
			continue
		}
		h := x.heads.get(t)
		for p := h.desired; p >= 0; p = chain[p] {
			if t.exact() || mk.equal(m, dv[p]) {
				return nil
			}
		}
		chain[j], h.desired = h.desired, int32(j)
		x.heads.set(t, h)
	}
	return x
}

// find returns the index of the live element paired with dm, desired
// element j: j itself if live element j has dm's key, else the first live
// element with that key, or -1.
func (x *keyIndex) find(dm map[string]any, j int, ll []any, mk mergeKey) int {
	t, ok := mk.tuple(dm)
	if !ok {
		return -1
	}
	k := x.heads.get(t).live
	exact := t.exact()
	first := -1
	for ; k >= 0; k = x.next[k] {
		if !exact && !mk.equal(dm, ll[k]) {
			continue
		}
		if int(k) == j {
			return j
		}
		if first < 0 {
			first = int(k)
		}
		if int(k) > j {
			break // the chain ascends: j is not in it
		}
	}
	return first
}

// tooDeep reports whether v holds a value more than room levels below it.
func tooDeep(v any, room int) bool {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 && room <= 0 {
			return true
		}
		for _, e := range x {
			if tooDeep(e, room-1) {
				return true
			}
		}
	case []any:
		if len(x) > 0 && room <= 0 {
			return true
		}
		for _, e := range x {
			if tooDeep(e, room-1) {
				return true
			}
		}
	}
	return false
}

// deepPath returns the pointer, relative to v, of the first value (in
// key order) more than room levels below v; "" if there is none.
func deepPath(v any, room int) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if room <= 0 {
				return Pointer{k}.String()
			}
			if tooDeep(x[k], room-1) {
				return Pointer{k}.String() + deepPath(x[k], room-1)
			}
		}
	case []any:
		for i, e := range x {
			if room <= 0 {
				return "/" + strconv.Itoa(i)
			}
			if tooDeep(e, room-1) {
				return "/" + strconv.Itoa(i) + deepPath(e, room-1)
			}
		}
	}
	return ""
}
