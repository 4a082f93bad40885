package drift

import (
	"encoding/json"
	"maps"
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
	fields  map[string]any
}

// fieldOwners are the managedFields of one live object, with an index of
// each list's field set built the first time a difference needs it: with
// thousands of changed elements in one list, scanning (and decoding) the
// set's keys for each of them would take quadratic time.
type fieldOwners struct {
	owners []owner
	sets   map[unsafe.Pointer]*setIndex
	buf    []byte
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
		out = append(out, owner{manager: name, fields: fields})
	}
	return &fieldOwners{owners: out}
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
	for i, s := range steps {
		if i > 0 && len(cur) == 0 {
			// A leaf owns its value whole: an atomic list or map.
			return true
		}
		var next any
		switch s.index {
		case mapStep:
			next = cur["f:"+s.key]
			lm, _ := lcur.(map[string]any)
			lcur = lm[s.key]
		case appendStep:
			return false
		default:
			ll, _ := lcur.([]any)
			if int(s.index) >= len(ll) {
				return false
			}
			elem := ll[s.index]
			next = fo.elementSet(cur, elem, int(s.index))
			lcur = elem
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
// "k:" key fields, "v:" value or "i:" index match the element. Should
// several match, the least key wins, so that the answer does not depend
// on map order.
func (fo *fieldOwners) elementSet(set map[string]any, elem any, index int) any {
	id := reflect.ValueOf(set).UnsafePointer()
	x := fo.sets[id]
	if x == nil {
		x = newSetIndex(set)
		if fo.sets == nil {
			fo.sets = make(map[unsafe.Pointer]*setIndex)
		}
		fo.sets[id] = x
	}
	best, found := "", false
	consider := func(k string) {
		if !found || k < best {
			best, found = k, true
		}
	}
	if em, ok := elem.(map[string]any); ok {
		for _, g := range x.keyed {
			b, ok := fo.buf[:0], true
			for _, f := range g.fields {
				if b, ok = appendCanon(b, em[f], MaxDepth); !ok {
					break
				}
			}
			fo.buf = b
			if !ok {
				continue
			}
			e, found := g.head[string(b)]
			for ; found && e >= 0; e = x.entries[e].next {
				match := true
				for i, f := range g.fields {
					if !equalValues(x.entries[e].values[i], em[f]) {
						match = false
						break
					}
				}
				if match {
					consider(x.entries[e].key)
				}
			}
		}
	}
	if x.values != nil {
		if b, ok := appendCanon(fo.buf[:0], elem, MaxDepth); ok {
			fo.buf = b
			e, found := x.values[string(b)]
			for ; found && e >= 0; e = x.entries[e].next {
				if equalValues(x.entries[e].values[0], elem) {
					consider(x.entries[e].key)
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

// setIndex indexes the element entries of one fieldsV1 set by the
// canonical form (appendCanon) of what they match.
type setIndex struct {
	// keyed holds the "k:" entries grouped by their key fields, in order
	// of the fields.
	keyed []keyedEntries
	// values holds the "v:" entries.
	values  map[string]int32
	indices map[int][]string
	entries []setEntry
}

// keyedEntries are the "k:" entries of a set with the same key fields:
// the first entry per canonical form of the key values (in field order).
type keyedEntries struct {
	fields []string
	head   map[string]int32
}

// setEntry is one decoded "k:" or "v:" entry of a set: the values of the
// key fields, or the value. next chains the entries of the same canonical
// form, ending in -1.
type setEntry struct {
	key    string
	values []any
	next   int32
}

func newSetIndex(set map[string]any) *setIndex {
	// Sized for the set up front: growing by doubling would make the bytes
	// allocated jump at powers of two.
	x := &setIndex{entries: make([]setEntry, 0, len(set))}
	groups := map[string]int{}
	// add chains a new entry in front of head[canon].
	add := func(head map[string]int32, canon []byte, e setEntry) {
		e.next = -1
		if h, ok := head[string(canon)]; ok {
			e.next = h
		}
		head[string(canon)] = int32(len(x.entries))
		x.entries = append(x.entries, e)
	}
	var b []byte
	for k := range set {
		switch {
		case strings.HasPrefix(k, "k:"):
			fields, values, ok := parseFlatKey(k[2:])
			if !ok {
				var key map[string]any
				if json.Unmarshal([]byte(k[2:]), &key) != nil || len(key) == 0 {
					continue
				}
				fields = slices.Sorted(maps.Keys(key))
				values = make([]any, len(fields))
				for i, f := range fields {
					values[i] = key[f]
				}
			}
			b = b[:0]
			for _, v := range values {
				if b, ok = appendCanon(b, v, MaxDepth); !ok {
					break
				}
			}
			if !ok {
				continue // matches no element
			}
			name := strings.Join(fields, "\x00")
			gi, seen := groups[name]
			if !seen {
				gi = len(x.keyed)
				groups[name] = gi
				size := 0
				if gi == 0 {
					size = len(set) // the usual case: one kind of key
				}
				x.keyed = append(x.keyed, keyedEntries{fields: fields, head: make(map[string]int32, size)})
			}
			add(x.keyed[gi].head, b, setEntry{key: k, values: values})
		case strings.HasPrefix(k, "v:"):
			var val any
			if json.Unmarshal([]byte(k[2:]), &val) != nil {
				continue
			}
			var ok bool
			if b, ok = appendCanon(b[:0], val, MaxDepth); !ok {
				continue
			}
			if x.values == nil {
				x.values = map[string]int32{}
			}
			add(x.values, b, setEntry{key: k, values: []any{val}})
		case strings.HasPrefix(k, "i:"):
			if i, err := strconv.Atoi(k[2:]); err == nil {
				if x.indices == nil {
					x.indices = map[int][]string{}
				}
				x.indices[i] = append(x.indices[i], k)
			}
		}
	}
	// Groups in the order of their fields, so that the walk over them is
	// the same every time.
	slices.SortFunc(x.keyed, func(a, b keyedEntries) int { return slices.Compare(a.fields, b.fields) })
	return x
}

// parseFlatKey decodes the usual form of a "k:" key without allocating a
// map: a JSON object without spaces whose values are strings without
// escapes or integers, such as {"name":"web"} or
// {"containerPort":80,"protocol":"TCP"}. It returns the fields sorted and
// their values as encoding/json would decode them (numbers as float64);
// ok is false for any other form, which encoding/json then decodes.
func parseFlatKey(s string) (fields []string, values []any, ok bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, nil, false
	}
	for i := 1; i < len(s)-1; {
		name, next, ok := plainString(s, i)
		if !ok || next >= len(s) || s[next] != ':' || slices.Contains(fields, name) {
			return nil, nil, false
		}
		i = next + 1
		var v any
		if i < len(s) && s[i] == '"' {
			if v, i, ok = plainString(s, i); !ok {
				return nil, nil, false
			}
		} else {
			j := i
			if j < len(s) && s[j] == '-' {
				j++
			}
			digits := j
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			if j == digits || s[digits] == '0' && j > digits+1 {
				return nil, nil, false
			}
			f, err := strconv.ParseFloat(s[i:j], 64)
			if err != nil {
				return nil, nil, false
			}
			v, i = f, j
		}
		fields, values = append(fields, name), append(values, v)
		switch {
		case s[i] == ',' && i+1 < len(s)-1:
			i++
		case i == len(s)-1:
		default:
			return nil, nil, false
		}
	}
	if len(fields) == 0 {
		return nil, nil, false
	}
	// Insertion sort: keys have one or two fields.
	for a := 1; a < len(fields); a++ {
		for c := a; c > 0 && fields[c] < fields[c-1]; c-- {
			fields[c], fields[c-1] = fields[c-1], fields[c]
			values[c], values[c-1] = values[c-1], values[c]
		}
	}
	return fields, values, true
}

// plainString reads the JSON string at s[i] if it needs no decoding: no
// escapes, no control characters, valid UTF-8. It returns the string and
// the index after its closing quote.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", i, false
	}
	end := strings.IndexByte(s[i+1:], '"')
	if end < 0 {
		return "", i, false
	}
	str := s[i+1 : i+1+end]
	for k := 0; k < len(str); k++ {
		if str[k] < 0x20 || str[k] == '\\' {
			return "", i, false
		}
	}
	if !utf8.ValidString(str) {
		return "", i, false
	}
	return str, i + 2 + end, true
}
