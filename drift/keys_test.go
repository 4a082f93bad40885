package drift

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// refPairing is how keyed lists were paired before they were indexed: a scan of the
// live list per desired element, and a scan of the earlier desired elements for
// duplicates. The index must pair exactly as it did.
func refPairing(dv, ll []any, mk mergeKey) ([]int, bool) {
	aligned := alignedList(dv, ll, mk)
	if !aligned {
		for j, e := range dv {
			m, ok := e.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok := m[mk.first]; !ok || v == nil {
				return nil, false
			}
			for _, prev := range dv[:j] {
				if mk.equal(m, prev) {
					return nil, false
				}
			}
		}
		for _, e := range ll {
			if _, ok := e.(map[string]any); !ok {
				return nil, false
			}
		}
	}
	out := make([]int, len(dv))
	for j, de := range dv {
		dm := de.(map[string]any)
		i := -1
		if aligned || j < len(ll) && mk.equal(dm, ll[j]) {
			i = j
		} else {
			for k := range ll {
				if mk.equal(dm, ll[k]) {
					i = k
					break
				}
			}
		}
		out[j] = i
	}
	return out, true
}

// pairing is how walk pairs keyed lists now.
func pairing(dv, ll []any, mk mergeKey) ([]int, bool) {
	out := make([]int, len(dv))
	if alignedList(dv, ll, mk) {
		for j := range out {
			out[j] = j
		}
		return out, true
	}
	idx := newKeyIndex(dv, ll, mk, maphash.MakeSeed())
	if idx == nil {
		return nil, false
	}
	for j := range dv {
		i, ok := idx.pair(j)
		if !ok {
			return nil, false
		}
		out[j] = i
	}
	return out, true
}

// keyValues are merge-key values that equalValues treats in every way it can: equal
// across types (1, 1.0, json-less int), never equal (NaN), unset (nil), composite,
// and integers beyond 2^53 that share a float64.
var keyValues = []any{
	"a", "b", "TCP", "UDP", int64(1), float64(1), 1.5, int32(1), true, false, nil,
	math.NaN(), []any{int64(1)}, []any{float64(1)}, map[string]any{"x": "a"}, map[string]any{"x": nil},
	int64(1 << 60), int64(1<<60 + 1), float64(1 << 60), uint64(1), -0.0, 0.0, int64(0),
}

// FuzzKeyedListPairing checks that indexed pairing of keyed lists gives the same
// pairs as the quadratic scan it replaced.
func FuzzKeyedListPairing(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3}, []byte{3, 2, 1, 0}, false)
	f.Add([]byte{4, 5, 7, 16, 17}, []byte{17, 18, 16, 5, 4}, false)
	f.Add([]byte{0, 2, 0x22, 0x42}, []byte{0x42, 0x02, 0x62, 0x21}, true)
	f.Add([]byte{11, 12, 13, 14, 15, 19, 20, 21, 22}, []byte{22, 21, 20, 19, 15, 14, 13, 12, 11, 0xff}, false)
	// More distinct keys than the index's table was sized for: it grows.
	f.Add([]byte{0, 1, 2, 3, 4, 6, 8, 9, 12}, []byte{14, 15, 16, 17, 20, 21, 4, 0, 22}, false)
	f.Fuzz(func(t *testing.T, desired, live []byte, ports bool) {
		mk := mergeKey{first: "name"}
		if ports {
			mk = mergeKey{first: "containerPort", second: "protocol", secondDefault: "TCP"}
		}
		elem := func(b byte) any {
			if b == 0xff {
				return "not a map"
			}
			m := map[string]any{"i": int64(b)}
			if v := keyValues[int(b&0x1f)%len(keyValues)]; b&0x1f != 0x1f {
				m[mk.first] = v
			}
			if ports {
				switch b >> 5 {
				case 1:
					m["protocol"] = "TCP"
				case 2:
					m["protocol"] = "UDP"
				case 3:
					m["protocol"] = nil
				case 4:
					m["protocol"] = math.NaN()
				}
			}
			return m
		}
		var dv, ll []any
		for _, b := range desired {
			dv = append(dv, elem(b))
		}
		for _, b := range live {
			ll = append(ll, elem(b))
		}
		want, wantOK := refPairing(dv, ll, mk)
		got, gotOK := pairing(dv, ll, mk)
		require.Equal(t, wantOK, gotOK)
		require.Equal(t, want, got)
	})
}

// refElementSet is the scan that elementSet replaced, returning every entry that
// matches (the scan returned whichever map order met first).
func refElementSet(set map[string]any, elem any, index int) []string {
	var out []string
	for k := range set {
		switch {
		case len(k) > 2 && k[:2] == "k:":
			var key map[string]any
			if json.Unmarshal([]byte(k[2:]), &key) != nil || len(key) == 0 {
				continue
			}
			em, ok := elem.(map[string]any)
			if !ok {
				continue
			}
			match := true
			for f, want := range key {
				if !equalValues(want, em[f]) {
					match = false
					break
				}
			}
			if match {
				out = append(out, k)
			}
		case len(k) > 2 && k[:2] == "v:":
			var val any
			if json.Unmarshal([]byte(k[2:]), &val) == nil && equalValues(val, elem) {
				out = append(out, k)
			}
		case len(k) > 2 && k[:2] == "i:":
			if i, err := strconv.Atoi(k[2:]); err == nil && i == index {
				out = append(out, k)
			}
		}
	}
	return out
}

// FuzzElementSet checks the indexed lookup of a list element's field set against the
// scan: the same entry when one matches, the least key when several do,
// except that the entry the API server writes for a list with a known
// merge key (field), when the set holds it, wins without a scan; it must
// then be one the scan finds matching.
func FuzzElementSet(f *testing.F) {
	f.Add([]byte(`{"k:{\"name\":\"a\"}":{"x":1},"k:{\"name\":\"b\"}":{},"v:\"a\"":{},"i:0":{}}`), []byte(`{"name":"a","image":"i"}`), 0, "")
	f.Add([]byte(`{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{},"k:{\"containerPort\":80}":{}}`), []byte(`{"containerPort":80,"protocol":"TCP"}`), 1, "")
	f.Add([]byte(`{"v:1":{},"v:1.0":{},"v:[1,{\"a\":null}]":{},"i:3":{}}`), []byte(`[1,{"a":null}]`), 3, "")
	f.Add([]byte(`{"k:{\"a\":null}":{},"k:{\"a\":{\"b\":[1]}}":{}}`), []byte(`{"a":{"b":[1.0]}}`), -1, "")
	// Sets spelled as the API server spells them are looked up by spelling
	// the element's key; any other spelling (-0, digits a float64 drops,
	// fields out of order) makes the set indexed by hash.
	f.Add([]byte(`{"k:{\"a\":\"x\",\"b\":1}":{},"k:{\"a\":\"x\"}":{},"i:0":{}}`), []byte(`{"a":"x","b":1.0}`), 0, "")
	f.Add([]byte(`{"k:{\"p\":9007199254740992}":{}}`), []byte(`{"p":9007199254740993}`), 0, "")
	f.Add([]byte(`{"k:{\"p\":9007199254740993}":{},"k:{\"q\":1}":{}}`), []byte(`{"p":9007199254740992}`), 0, "")
	f.Add([]byte(`{"k:{\"p\":-0}":{},"k:{\"p\":0,\"q\":\"r\"}":{}}`), []byte(`{"p":0,"q":"r"}`), 0, "")
	f.Add([]byte(`{"k:{\"b\":1,\"a\":\"x\"}":{}}`), []byte(`{"a":"x","b":1}`), 0, "")
	f.Add([]byte(`{"k:{\"a\":\"x\\\"\"}":{},"k:{\"a\":\"y\"}":{}}`), []byte(`{"a":"x\""}`), 0, "")
	// With the list's field: the spelled merge key first, even when a
	// lesser key matches too; other spellings still go through the index.
	f.Add([]byte(`{"k:{\"name\":\"web\"}":{"x":1},"k:{ \"name\":\"web\"}":{},"i:0":{}}`), []byte(`{"name":"web","image":"i"}`), 0, "containers")
	f.Add([]byte(`{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{},"k:{\"containerPort\":80}":{}}`), []byte(`{"containerPort":80,"protocol":"TCP"}`), 1, "ports")
	f.Add([]byte(`{"k:{\"containerPort\":80}":{},"k:{\"containerPort\":80.0}":{}}`), []byte(`{"containerPort":80}`), 0, "ports")
	f.Add([]byte(`{"k:{\"name\":\"a\\u0062\"}":{}}`), []byte(`{"name":"ab"}`), 0, "env")
	f.Add([]byte(`{"k:{\"mountPath\":\"/x\"}":{}}`), []byte(`{"mountPath":"/x"}`), 2, "volumeMounts")
	f.Fuzz(func(t *testing.T, setDoc, elemDoc []byte, index int, field string) {
		var set map[string]any
		var elem any
		if json.Unmarshal(setDoc, &set) != nil || json.Unmarshal(elemDoc, &elem) != nil {
			return
		}
		for k, v := range set {
			if _, ok := v.(map[string]any); !ok {
				set[k] = map[string]any{}
			}
		}
		want := refElementSet(set, elem, index)
		list := []any{elem}
		got := (&fieldOwners{}).elementSet(set, elem, index, field, list)
		if len(want) == 0 {
			require.Nil(t, got)
			return
		}
		slices.Sort(want)
		exp := want[0]
		if em, ok := elem.(map[string]any); ok {
			if mk, ok := mergeKeyFor(field, list); ok {
				fields := []string{mk.first}
				if _, has := em[mk.second]; mk.second != "" && has {
					fields = append(fields, mk.second)
					slices.Sort(fields)
				}
				if b, ok := spellKey(nil, fields, em); ok && slices.Contains(want, string(b)) {
					exp = string(b)
				}
			}
		}
		require.Equal(t, set[exp], got)
		// The entries are distinct maps: check it is the expected key's, not just an equal one.
		if m, ok := got.(map[string]any); ok {
			m["marker"] = true
			require.Equal(t, true, set[exp].(map[string]any)["marker"])
		}
	})
}
