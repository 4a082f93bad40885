package drift

import (
	"encoding/binary"
	"hash/maphash"
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
	return floatBits(f), true
}

// floatBits returns the bits of f, with -0 as 0.
func floatBits(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	return math.Float64bits(f)
}

// appendCanon appends an encoding of v in which values equal under
// equalValues encode alike. It fails for values that equal nothing (NaN,
// unknown types) and for nesting deeper than room.
func appendCanon(b []byte, v any, room int) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(b, 'z'), true
	case string:
		return appendCanonString(b, x), true
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
	return appendCanonNumber(b, bits), true
}

func appendCanonString(b []byte, s string) []byte {
	b = append(b, 's')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

// appendCanonNumber appends a number given by its bits (numberBits).
func appendCanonNumber(b []byte, bits uint64) []byte {
	b = append(b, 'n')
	b = strconv.AppendUint(b, bits, 16)
	return append(b, ';')
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
	return mk.tupleWith(a, m)
}

// tupleWith is tuple for an element whose first key field holds a, not
// nil.
func (mk mergeKey) tupleWith(a any, m map[string]any) (t keyTuple, ok bool) {
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
// 23 s for 10,000 reversed containers). It pairs the desired elements one
// at a time, as the walk reaches them, so that each is read once; the
// walk starts over by position if pair finds that the list cannot be
// matched by key after all.
type keyIndex struct {
	table keyTable
	// next chains the live indices of the same key in ascending order,
	// ending in -1.
	next []int32
	// desiredOf holds per live index the last desired element paired so
	// far with its key, when it is the first live index with that key;
	// chain links each desired element to the previous one with its key.
	// Both end in -1.
	desiredOf, chain []int32
}

// newKeyIndex indexes ll to match dv's elements by key, or returns nil
// when some live element is not a map. seed seeds the hash of keys.
func newKeyIndex(dv, ll []any, mk mergeKey, seed maphash.Seed) *keyIndex {
	for _, e := range ll {
		if _, ok := e.(map[string]any); !ok {
			return nil
		}
	}
	scratch := make([]int32, 2*len(ll)+len(dv))
	x := &keyIndex{
		table:     keyTable{slots: make([]keySlot, tableSize(max(len(ll), len(dv)))), seed: seed, mk: mk, ll: ll, dv: dv},
		next:      scratch[:len(ll)],
		desiredOf: scratch[len(ll) : 2*len(ll)],
		chain:     scratch[2*len(ll):],
	}
	for k := len(ll) - 1; k >= 0; k-- {
		x.next[k], x.desiredOf[k] = -1, -1
		tp, ok := mk.tuple(ll[k].(map[string]any))
		if !ok {
			continue
		}
		s := x.table.slot(tp)
		if s.ref > 0 {
			x.next[k] = s.ref - 1
		}
		s.ref = int32(k) + 1
	}
	return x
}

// pair returns the index of the live element paired with desired element
// j: j itself if live element j has its key, else the first live element
// with that key, or -1. ok is false when the list cannot be matched by
// key: the element is not a map or lacks the key, or an earlier desired
// element has the same key. Call it for j = 0, 1, … in order.
func (x *keyIndex) pair(j int) (live int, ok bool) {
	mk := x.table.mk
	m, ok := x.table.dv[j].(map[string]any)
	if !ok {
		return -1, false
	}
	a, ok := m[mk.first]
	if !ok || a == nil {
		return -1, false
	}
	x.chain[j] = -1
	tp, ok := mk.tupleWith(a, m)
	if !ok {
		return -1, true
	}
	exact := tp.exact()
	s := x.table.slot(tp)
	head, earlier := int32(-1), int32(-1)
	switch {
	case s.ref > 0:
		head = s.ref - 1
		earlier = x.desiredOf[head]
		x.desiredOf[head] = int32(j)
	case s.ref < 0:
		// A key live lacks, already desired.
		earlier = -s.ref - 1
		s.ref = -int32(j) - 1
	default:
		s.ref = -int32(j) - 1
	}
	for p := earlier; p >= 0; p = x.chain[p] {
		if exact || mk.equalWith(a, m, x.table.dv[p]) {
			return -1, false
		}
	}
	x.chain[j] = earlier
	first := -1
	for k := head; k >= 0; k = x.next[k] {
		if !exact && !mk.equalWith(a, m, x.table.ll[k]) {
			continue
		}
		if int(k) == j {
			return j, true
		}
		if first < 0 {
			first = int(k)
		}
		if int(k) > j {
			break // the chain ascends: j is not in it
		}
	}
	return first, true
}

// keyTable finds the slot of a key for a keyIndex: an open-addressing
// table of small slots that stays in the cache, where a map of keys took
// more than twice the time for twice the elements. A slot refers to the
// element that holds its key, which confirms a match.
type keyTable struct {
	slots  []keySlot
	used   int
	seed   maphash.Seed
	mk     mergeKey
	ll, dv []any
}

// keySlot is one slot of a keyTable: the high bits of the key's hash, and
// the element holding the key, live index k as k+1, desired index j as
// -(j+1), 0 for an empty slot.
type keySlot struct {
	tag uint32
	ref int32
}

// slot returns the slot of t, an empty one with t's tag if t is new.
func (kt *keyTable) slot(t keyTuple) *keySlot {
	if (kt.used+1)*3 > len(kt.slots)*2 {
		kt.grow()
	}
	h := t.hash(kt.seed)
	tag, mask := uint32(h>>32), uint64(len(kt.slots)-1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &kt.slots[i]
		if s.ref == 0 {
			s.tag = tag
			kt.used++
			return s
		}
		if s.tag == tag && kt.keyOf(s.ref) == t {
			return s
		}
	}
}

// keyOf returns the key of the element a slot refers to.
func (kt *keyTable) keyOf(ref int32) keyTuple {
	var e any
	if ref > 0 {
		e = kt.ll[ref-1]
	} else {
		e = kt.dv[-ref-1]
	}
	t, _ := kt.mk.tuple(e.(map[string]any))
	return t
}

// grow doubles the table: only when desired holds many keys live lacks.
func (kt *keyTable) grow() {
	old := kt.slots
	kt.slots = make([]keySlot, 2*len(old))
	mask := uint64(len(kt.slots) - 1)
	for _, s := range old {
		if s.ref == 0 {
			continue
		}
		for i := kt.keyOf(s.ref).hash(kt.seed) & mask; ; i = (i + 1) & mask {
			if kt.slots[i].ref == 0 {
				kt.slots[i] = s
				break
			}
		}
	}
}

// hash hashes a key for a keyTable; keys equal as keyTuples hash alike.
func (t keyTuple) hash(seed maphash.Seed) uint64 {
	h := maphash.String(seed, t.first.s)
	if isName(t) {
		return h
	}
	var b [34]byte
	b[0], b[1] = t.first.kind, t.second.kind
	binary.LittleEndian.PutUint64(b[2:], t.first.n)
	binary.LittleEndian.PutUint64(b[10:], t.second.n)
	binary.LittleEndian.PutUint64(b[18:], h)
	binary.LittleEndian.PutUint64(b[26:], maphash.String(seed, t.second.s))
	return maphash.Bytes(seed, b[:])
}

func isName(t keyTuple) bool { return t.first.kind == partString && t.second.kind == partAbsent }

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
