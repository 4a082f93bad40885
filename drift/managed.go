package drift

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// owner is one managedFields entry of a live object: a field manager and
// the fieldsV1 set it owns.
type owner struct {
	manager string
	fields  map[string]any
}

// owners reads metadata.managedFields of a live object. Entries without a
// FieldsV1 set are skipped.
func ownersOf(live map[string]any) []owner {
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
	return out
}

// managersOf returns, sorted and without duplicates, the managers whose
// field set contains the path steps lead to in live.
func managersOf(owners []owner, live map[string]any, steps []step) []string {
	var out []string
	for _, o := range owners {
		if owns(o.fields, live, steps) && !slices.Contains(out, o.manager) {
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
func owns(set map[string]any, live any, steps []step) bool {
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
			next = elementSet(cur, elem, int(s.index))
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

// elementSet finds the field set of a list element.
func elementSet(set map[string]any, elem any, index int) any {
	for k, v := range set {
		switch {
		case strings.HasPrefix(k, "k:"):
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
				return v
			}
		case strings.HasPrefix(k, "v:"):
			var val any
			if json.Unmarshal([]byte(k[2:]), &val) == nil && equalValues(val, elem) {
				return v
			}
		case strings.HasPrefix(k, "i:"):
			if i, err := strconv.Atoi(k[2:]); err == nil && i == index {
				return v
			}
		}
	}
	return nil
}
