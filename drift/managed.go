package drift

import (
	"encoding/json"
	"hash/maphash"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// owner is one managedFields entry of a live object: a field manager and
// the fieldsV1 set it owns.
type owner struct {
	manager string
	// apply tells an entry of operation Apply (server-side apply) from
	// one of operation Update.
	apply  bool
	fields map[string]any
}

// fieldOwners are the managedFields of one live object, with an index of
// each list's field set built the first time a difference needs it: with
// thousands of changed elements in one list, scanning (and decoding) the
// set's keys for each of them would take quadratic time.
type fieldOwners struct {
	owners []owner
	sets   map[unsafe.Pointer]*setIndex
	seed   maphash.Seed
	buf    []byte
	// keyFields is elementSet's scratch for a merge key's field names.
	keyFields []string
}

// ownersOf reads metadata.managedFields of a live object. Entries without
// a FieldsV1 set are skipped.
func ownersOf(live map[string]any) *fieldOwners {
	md, _ := live["metadata"].(map[string]any)
	list, _ := md["managedFields"].([]any)
	out := make([]owner, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		name, _ := m["manager"].(string)
		fields, _ := m["fieldsV1"].(map[string]any)
		if name == "" || fields == nil {
			continue
		}
		op, _ := m["operation"].(string)
		out = append(out, owner{manager: name, apply: op == "Apply", fields: fields})
	}
	return &fieldOwners{owners: out}
}

// applies reports whether manager has an Apply entry.
func (fo *fieldOwners) applies(manager string) bool {
	for _, o := range fo.owners {
		if o.apply && o.manager == manager {
			return true
		}
	}
	return false
}

// managersOf returns, sorted and without duplicates, the managers whose
// field set contains the path steps lead to in live.
func (fo *fieldOwners) managersOf(live map[string]any, steps []step) []string {
	var out []string
	for _, o := range fo.owners {
		if fo.owns(o.fields, live, steps) && !slices.Contains(out, o.manager) {
			out = append(out, o.manager)
		}
	}
	slices.Sort(out)
	return out
}

// owns follows steps through a fieldsV1 set ("f:name" for map keys;
// "k:{...}", "v:value" or "i:index" for list elements) alongside the live
// value, which it needs to match list elements by key. A leaf reached
// before the last step owns everything below it (an atomic list or map).
func (fo *fieldOwners) owns(set map[string]any, live any, steps []step) bool {
	cur := set
	lcur := live
	field := "" // the map key holding the list the next step indexes
	for i, s := range steps {
		if i > 0 && len(cur) == 0 {
			// A leaf owns its value whole: an atomic list or map.
			return true
		}
		var next any
		switch s.index {
		case mapStep:
			fo.buf = append(append(fo.buf[:0], "f:"...), s.key...)
			next = cur[string(fo.buf)]
			lm, _ := lcur.(map[string]any)
			lcur = lm[s.key]
			field = s.key
		case appendStep:
			return false
		default:
			ll, _ := lcur.([]any)
			if int(s.index) >= len(ll) {
				return false
			}
			elem := ll[s.index]
			next = fo.elementSet(cur, elem, int(s.index), field, ll)
			lcur = elem
			field = ""
		}
		m, ok := next.(map[string]any)
		if !ok {
			return false
		}
		cur = m
	}
	return true
}

// elementSet finds the field set of a list element: the entry of set whose
// "k:" key fields, "v:" value or "i:" index match the element. field names
// the list (the map key holding it) and list is the live list. The entry
// the API server writes for the element, its merge key spelled as
// spellKey spells it, is looked up first and wins: found, nothing else of
// the set is read, so a diff in a list of thousands of elements costs one
// lookup rather than a pass over every entry of the set. Otherwise, should
// several entries match, the least key wins. Either way the answer does
// not depend on map order. (Several entries match one element only in a
// set the API server did not write.)
func (fo *fieldOwners) elementSet(set map[string]any, elem any, index int, field string, list []any) any {
	if em, ok := elem.(map[string]any); ok {
		if mk, ok := mergeKeyFor(field, list); ok {
			fields := fo.keyFields[:0]
			fields = append(fields, mk.first)
			if _, has := em[mk.second]; mk.second != "" && has {
				fields = append(fields, mk.second)
				slices.Sort(fields)
			}
			fo.keyFields = fields
			if b, ok := spellKey(fo.buf[:0], fields, em); ok {
				fo.buf = b
				if v, in := set[string(b)]; in {
					return v
				}
			}
		}
	}
	id := reflect.ValueOf(set).UnsafePointer()
	x := fo.sets[id]
	if x == nil {
		if fo.sets == nil {
			fo.sets = make(map[unsafe.Pointer]*setIndex)
			fo.seed = maphash.MakeSeed()
		}
		x = newSetIndex(set, fo.seed)
		fo.sets[id] = x
	}
	best, found := "", false
	consider := func(k string) {
		if !found || k < best {
			best, found = k, true
		}
	}
	if em, ok := elem.(map[string]any); ok {
		for _, fields := range x.groups {
			if x.spelled {
				b, ok := spellKey(fo.buf[:0], fields, em)
				fo.buf = b
				if _, in := set[string(b)]; ok && in {
					consider(string(b))
				}
				continue
			}
			b, ok := append(fo.buf[:0], 'k'), true
			for _, f := range fields {
				b = appendCanonName(b, f)
				if b, ok = appendCanon(b, em[f], MaxDepth); !ok {
					break
				}
			}
			fo.buf = b
			if !ok {
				continue
			}
			for e := x.lookup(b); e >= 0; e = x.entries[e].next - 1 {
				if k := x.entries[e].key; k[0] == 'k' && keyMatches(k[2:], fields, em) {
					consider(k)
				}
			}
		}
	}
	if x.values {
		if b, ok := appendCanon(append(fo.buf[:0], 'v'), elem, MaxDepth); ok {
			fo.buf = b
			for e := x.lookup(b); e >= 0; e = x.entries[e].next - 1 {
				if k := x.entries[e].key; k[0] == 'v' && valueMatches(k[2:], elem) {
					consider(k)
				}
			}
		}
	}
	for _, k := range x.indices[index] {
		consider(k)
	}
	if !found {
		return nil
	}
	return set[best]
}

// keyMatches reports whether the "k:" key s has exactly the key fields
// fields and each equals the element's value of that field.
func keyMatches(s string, fields []string, em map[string]any) bool {
	kf, kv, ok := parseKey(s)
	if !ok || !slices.Equal(kf, fields) {
		return false
	}
	for i, f := range kf {
		if !equalValues(kv[i], em[f]) {
			return false
		}
	}
	return true
}

// valueMatches reports whether the "v:" value s equals elem.
func valueMatches(s string, elem any) bool {
	var val any
	return json.Unmarshal([]byte(s), &val) == nil && equalValues(val, elem)
}

// setIndex finds the entries of one fieldsV1 set that match a list
// element. Usually every entry is spelled as the API server spells it, one
// spelling per key (spellKey); then the index is just the field lists of
// the keys, and an element's entry is found by spelling its key: no table
// to build, nothing allocated per entry. Otherwise it indexes the "k:" and
// "v:" entries by a hash of the canonical form (appendCanon) of what they
// match: the key fields' names and values for "k:", the value for "v:".
// Building that allocates nothing per entry either, and its table is a
// flat array of small slots, so that a set of thousands of entries stays
// in the cache: with a map of strings per entry, twice the entries took
// more than twice the time. Entries are confirmed by decoding them again,
// which only the few looked up need.
type setIndex struct {
	// spelled tells that every "k:" entry is spelled by spellKey and
	// there is no "v:" entry.
	spelled bool
	seed    maphash.Seed
	// groups holds the distinct field lists of the "k:" entries, each
	// sorted, in order.
	groups [][]string
	// values tells whether there are "v:" entries.
	values bool
	// slots is an open-addressing table (its length a power of two) of
	// chains of entries whose canonical forms share a hash tag.
	slots   []setSlot
	entries []setEntry
	indices map[int][]string
}

// setSlot is one slot of setIndex's table: the high bits of the hash and
// the first entry of its chain, plus one (0 is an empty slot).
type setSlot struct {
	tag  uint32
	head int32
}

// setEntry is one "k:" or "v:" entry of a set; next is the following
// entry of its chain, plus one (0 ends it).
type setEntry struct {
	key  string
	next int32
}

func newSetIndex(set map[string]any, seed maphash.Seed) *setIndex {
	if x := newSpelledIndex(set); x != nil {
		return x
	}
	// Sized for the set up front: growing by doubling would make the bytes
	// allocated jump at powers of two. The table is at most two thirds
	// full, so a lookup probes about two slots.
	x := &setIndex{
		seed:    seed,
		slots:   make([]setSlot, tableSize(len(set))),
		entries: make([]setEntry, 0, len(set)),
	}
	var (
		b      []byte
		fs     []flatField
		last   = -1 // the group of the previous entry: usually all share one
		groups map[string]int
	)
	for k := range set {
		switch {
		case strings.HasPrefix(k, "k:"):
			var ok bool
			if fs, ok, _ = scanFlatKey(k[2:], fs[:0]); ok {
				b = append(b[:0], 'k')
				for _, f := range fs {
					b = appendCanonName(b, f.name)
					b = f.appendCanon(b)
				}
			} else if b, fs, ok = canonJSONKey(b[:0], k[2:], fs[:0]); !ok {
				continue // matches no element
			}
			if last < 0 || !sameNames(x.groups[last], fs) {
				last = x.group(fs, &groups)
			}
			x.insert(b, k)
		case strings.HasPrefix(k, "v:"):
			var ok bool
			if f, next, fast := scanFlatScalar(k, 2); fast && next == len(k) {
				b = f.appendCanon(append(b[:0], 'v'))
			} else {
				var val any
				if json.Unmarshal([]byte(k[2:]), &val) != nil {
					continue
				}
				if b, ok = appendCanon(append(b[:0], 'v'), val, MaxDepth); !ok {
					continue
				}
			}
			x.values = true
			x.insert(b, k)
		case strings.HasPrefix(k, "i:"):
			x.addIndex(k)
		}
	}
	// Groups in the order of their fields, so that the walk over them is
	// the same every time.
	slices.SortFunc(x.groups, slices.Compare)
	return x
}

// newSpelledIndex returns the index of a set whose "k:" entries are all
// spelled by spellKey, and that has no "v:" entry; nil for another set.
func newSpelledIndex(set map[string]any) *setIndex {
	x := &setIndex{spelled: true}
	var (
		fs     []flatField
		last   = -1
		groups map[string]int
	)
	for k := range set {
		switch {
		case strings.HasPrefix(k, "k:"):
			var ok, spelled bool
			if fs, ok, spelled = scanFlatKey(k[2:], fs[:0]); !ok || !spelled {
				return nil
			}
			if last < 0 || !sameNames(x.groups[last], fs) {
				last = x.group(fs, &groups)
			}
		case strings.HasPrefix(k, "v:"):
			return nil
		case strings.HasPrefix(k, "i:"):
			x.addIndex(k)
		}
	}
	slices.SortFunc(x.groups, slices.Compare)
	return x
}

// addIndex records the "i:" entry k.
func (x *setIndex) addIndex(k string) {
	i, err := strconv.Atoi(k[2:])
	if err != nil {
		return
	}
	if x.indices == nil {
		x.indices = map[int][]string{}
	}
	x.indices[i] = append(x.indices[i], k)
}

// spellKey appends the "k:" entry that an element's key would have in the
// fields given (sorted): k:{"name":"web"}, k:{"containerPort":80,"protocol":"TCP"}.
// ok is false when no entry scanFlatKey reads can match the element: a
// field it lacks, or whose value is not a string without escapes nor an
// integer. An entry that scanFlatKey finds spelled matches the element
// exactly when it is spelled so: strings are compared as they are, and a
// number has one spelling (the shortest that reads back as it).
func spellKey(b []byte, fields []string, em map[string]any) (_ []byte, ok bool) {
	b = append(b, "k:{"...)
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f...)
		b = append(b, '"', ':')
		switch v := em[f].(type) {
		case string:
			if !plain(v) {
				return b, false
			}
			b = append(b, '"')
			b = append(b, v...)
			b = append(b, '"')
		default:
			n, isNum := number(v)
			if !isNum || math.IsInf(n, 0) || n != math.Trunc(n) {
				return b, false
			}
			if n == 0 {
				n = 0 // -0 too is spelled 0
			}
			b = strconv.AppendFloat(b, n, 'f', -1, 64)
		}
	}
	return append(b, '}'), true
}

// group returns the index of the group of fs's names, adding it if new.
// byName indexes the groups once there is more than one.
func (x *setIndex) group(fs []flatField, byName *map[string]int) int {
	if len(x.groups) == 0 {
		x.groups = append(x.groups, names(fs))
		return 0
	}
	if *byName == nil {
		*byName = map[string]int{strings.Join(x.groups[0], "\x00"): 0}
	}
	n := names(fs)
	name := strings.Join(n, "\x00")
	gi, ok := (*byName)[name]
	if !ok {
		gi = len(x.groups)
		x.groups = append(x.groups, n)
		(*byName)[name] = gi
	}
	return gi
}

func names(fs []flatField) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.name
	}
	return out
}

func sameNames(names []string, fs []flatField) bool {
	if len(names) != len(fs) {
		return false
	}
	for i, f := range fs {
		if names[i] != f.name {
			return false
		}
	}
	return true
}

// tableSize is the length of an open-addressing table for n keys: the
// power of two at least 3n/2, so that doubling n doubles it exactly.
func tableSize(n int) int {
	size := 8
	for size < n+n/2+1 {
		size <<= 1
	}
	return size
}

// insert adds the entry key, whose canonical form is canon, to the chain
// of canon's hash tag. The table has room: it holds at most one chain per
// entry and is larger than the set.
func (x *setIndex) insert(canon []byte, key string) {
	h := maphash.Bytes(x.seed, canon)
	tag, mask := uint32(h>>32), uint64(len(x.slots)-1)
	e := int32(len(x.entries)) + 1
	for i := h & mask; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.head == 0 || s.tag == tag {
			x.entries = append(x.entries, setEntry{key: key, next: s.head})
			*s = setSlot{tag: tag, head: e}
			return
		}
	}
}

// lookup returns the first entry of canon's chain, or -1. The chain may
// hold entries of other canonical forms with the same tag: callers
// confirm each.
func (x *setIndex) lookup(canon []byte) int32 {
	h := maphash.Bytes(x.seed, canon)
	tag, mask := uint32(h>>32), uint64(len(x.slots)-1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s.head == 0 {
			return -1
		}
		if s.tag == tag {
			return s.head - 1
		}
	}
}

// appendCanonName appends a key field's name to a canonical form.
func appendCanonName(b []byte, name string) []byte {
	b = strconv.AppendInt(b, int64(len(name)), 10)
	b = append(b, ':')
	return append(b, name...)
}

// canonJSONKey decodes a "k:" key with encoding/json (any form the fast
// scan does not take) and appends its canonical form to b; fs returns the
// field names, sorted. ok is false for a key that matches no element: not
// an object, empty, or a value that equals nothing.
func canonJSONKey(b []byte, s string, fs []flatField) (_ []byte, _ []flatField, ok bool) {
	var key map[string]any
	if json.Unmarshal([]byte(s), &key) != nil || len(key) == 0 {
		return b, fs, false
	}
	b = append(b, 'k')
	for _, f := range slices.Sorted(maps.Keys(key)) {
		b = appendCanonName(b, f)
		if b, ok = appendCanon(b, key[f], MaxDepth); !ok {
			return b, fs, false
		}
		fs = append(fs, flatField{name: f})
	}
	return b, fs, true
}

// parseKey decodes a "k:" key into its fields, sorted, and their values
// as encoding/json decodes them (numbers as float64). ok is false when it
// is not a non-empty JSON object.
func parseKey(s string) (fields []string, values []any, ok bool) {
	if fields, values, ok = parseFlatKey(s); ok {
		return fields, values, true
	}
	var key map[string]any
	if json.Unmarshal([]byte(s), &key) != nil || len(key) == 0 {
		return nil, nil, false
	}
	fields = slices.Sorted(maps.Keys(key))
	values = make([]any, len(fields))
	for i, f := range fields {
		values[i] = key[f]
	}
	return fields, values, true
}

// parseFlatKey decodes the usual form of a "k:" key without a map (see
// scanFlatKey). It returns the fields sorted and their values as
// encoding/json would decode them (numbers as float64); ok is false for
// any other form, which encoding/json then decodes.
func parseFlatKey(s string) (fields []string, values []any, ok bool) {
	fs, ok, _ := scanFlatKey(s, nil)
	if !ok {
		return nil, nil, false
	}
	fields, values = make([]string, len(fs)), make([]any, len(fs))
	for i, f := range fs {
		fields[i], values[i] = f.name, f.str
		if f.isNum {
			values[i] = f.num
		}
	}
	return fields, values, true
}

// flatField is one field of a key read by scanFlatKey (or, without a
// name, a value read by scanFlatScalar): a string or a number.
type flatField struct {
	name  string
	str   string
	num   float64
	isNum bool
}

// appendCanon appends the canonical form of f's value, as appendCanon
// does for the value encoding/json decodes.
func (f flatField) appendCanon(b []byte) []byte {
	if f.isNum {
		return appendCanonNumber(b, floatBits(f.num))
	}
	return appendCanonString(b, f.str)
}

// scanFlatKey reads the usual form of a "k:" key without allocating: a
// JSON object without spaces whose values are strings without escapes or
// integers, such as {"name":"web"} or {"containerPort":80,"protocol":"TCP"}.
// It appends the fields to fs sorted by name; ok is false for any other
// form (and for an empty object or a repeated field). spelled tells that
// the key is spelled as spellKey spells it: fields in order, numbers
// in their shortest form.
func scanFlatKey(s string, fs []flatField) (_ []flatField, ok, spelled bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return fs, false, false
	}
	start := len(fs)
	spelled = true
	for i := 1; i < len(s)-1; {
		name, next, ok := plainString(s, i)
		if !ok || next >= len(s) || s[next] != ':' || slices.ContainsFunc(fs[start:], func(f flatField) bool { return f.name == name }) {
			return fs, false, false
		}
		var f flatField
		if f, i, ok = scanFlatScalar(s, next+1); !ok {
			return fs, false, false
		}
		if f.isNum && !shortestInteger(s[next+1:i], f.num) || len(fs) > start && name < fs[len(fs)-1].name {
			spelled = false
		}
		f.name = name
		fs = append(fs, f)
		switch {
		case s[i] == ',' && i+1 < len(s)-1:
			i++
		case i == len(s)-1:
		default:
			return fs, false, false
		}
	}
	if len(fs) == start {
		return fs, false, false
	}
	// Insertion sort: keys have one or two fields.
	for a := start + 1; a < len(fs); a++ {
		for c := a; c > start && fs[c].name < fs[c-1].name; c-- {
			fs[c], fs[c-1] = fs[c-1], fs[c]
		}
	}
	return fs, true, spelled
}

// shortestInteger reports whether text, an integer that reads as n, is
// how strconv spells n: not -0, and no digits beyond what n keeps.
func shortestInteger(text string, n float64) bool {
	switch {
	case text == "-0":
		return false
	case len(text) <= 15:
		return true // below 2^53: every integer is exact
	}
	var buf [32]byte
	return string(strconv.AppendFloat(buf[:0], n, 'f', -1, 64)) == text
}

// scanFlatScalar reads, at s[i], a JSON string that needs no decoding or
// an integer (as a float64, the way encoding/json decodes it), and returns
// it with the index after it.
func scanFlatScalar(s string, i int) (flatField, int, bool) {
	if i < len(s) && s[i] == '"' {
		str, next, ok := plainString(s, i)
		return flatField{str: str}, next, ok
	}
	j := i
	if j < len(s) && s[j] == '-' {
		j++
	}
	digits := j
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == digits || s[digits] == '0' && j > digits+1 {
		return flatField{}, i, false
	}
	f, err := strconv.ParseFloat(s[i:j], 64)
	if err != nil {
		return flatField{}, i, false
	}
	return flatField{num: f, isNum: true}, j, true
}

// plainString reads the JSON string at s[i] if it needs no decoding
// (plain). It returns the string and the index after its closing quote.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", i, false
	}
	end := strings.IndexByte(s[i+1:], '"')
	if end < 0 {
		return "", i, false
	}
	str := s[i+1 : i+1+end]
	if !plain(str) {
		return "", i, false
	}
	return str, i + 2 + end, true
}

// plain reports whether JSON spells s as it is between quotes: no quote,
// backslash or control character, and valid UTF-8.
func plain(s string) bool {
	ascii := true
	for k := 0; k < len(s); k++ {
		c := s[k]
		if c < 0x20 || c == '\\' || c == '"' {
			return false
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	return ascii || utf8.ValidString(s)
}
