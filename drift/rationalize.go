package drift

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// The lengths wI2L/jsondiff (v0.6.1, helm-controller v1.6.3's) counts for
// an operation when it rationalizes: {"op":"","path":""} and ,"value":.
// An add counts no value: jsondiff records none for it.
const (
	opBaseLen     = len(`{"op":"","path":""}`)
	valueFieldLen = len(`,"value":`)
)

// rationalizer collapses the differences below a map or list into one
// replace of it where that is the shorter patch (Options.Rationalize).
type rationalizer struct {
	live map[string]any
	trie *pathNode
}

// rationalize returns ds (sorted by compareSteps) with the differences
// below a node replaced by one replace of the node wherever jsondiff's
// Rationalize would do so, working from the leaves up.
func (r *rationalizer) rationalize(ds []diff) []diff {
	return r.group(ds, 0)
}

// group rationalizes ds, which share their first depth steps.
func (r *rationalizer) group(ds []diff, depth int) []diff {
	var out []diff
	for i := 0; i < len(ds); {
		j := i + 1
		for j < len(ds) && sameStep(ds[j].steps[depth], ds[i].steps[depth]) {
			j++
		}
		g := ds[i:j]
		i = j
		if slices.ContainsFunc(g, func(d diff) bool { return len(d.steps) == depth+1 }) {
			out = append(out, g...)
			continue
		}
		sub := r.group(g, depth+1)
		if d, ok := r.replace(sub, g[0].steps[:depth+1]); ok {
			out = append(out, d)
		} else {
			out = append(out, sub...)
		}
	}
	return out
}

func sameStep(a, b step) bool {
	return a.index == b.index && a.key == b.key && (a.index != appendStep || a.dindex == b.dindex)
}

// replace returns the replace of the node at steps that stands for sub,
// when it is the shorter patch and the node may be replaced whole.
func (r *rationalizer) replace(sub []diff, steps []step) (diff, bool) {
	if len(steps) == 1 && steps[0].index == mapStep && steps[0].key == "metadata" {
		return diff{}, false
	}
	node := r.trie
	for _, s := range steps {
		if s.index == mapStep {
			node = node.child(s.key)
		} else {
			node = node.childIndex(int(s.dindex))
		}
	}
	if node != nil {
		// An ignored path lies below: a replace would write over it.
		return diff{}, false
	}
	lv, ok := liveAt(r.live, steps)
	if !ok {
		return diff{}, false
	}
	switch lv.(type) {
	case map[string]any, []any:
	default:
		return diff{}, false
	}
	cost := len(sub) - 1
	for _, d := range sub {
		cost += opLength(d)
	}
	ov := overlayOf(sub, len(steps))
	path := pointerOf(steps)
	budget := cost - opBaseLen - len("replace") - len(path) - valueFieldLen - 1
	if budget < 0 || overlayLength(lv, ov, budget) > budget {
		return diff{}, false
	}
	return diff{op: "replace", path: path, live: lv, desired: ov.apply(lv), steps: slices.Clone(steps)}, true
}

// opLength is the length jsondiff counts for d.
func opLength(d diff) int {
	n := opBaseLen + len(d.op) + len(d.path)
	if d.op == "replace" {
		n += valueFieldLen + jsonLength(d.desired, int(^uint(0)>>1))
	} else if d.op == "add" {
		n += valueFieldLen
	}
	return n
}

// liveAt returns the live value the steps lead to.
func liveAt(live map[string]any, steps []step) (any, bool) {
	var cur any = live
	for _, s := range steps {
		switch s.index {
		case mapStep:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s.key]; !ok {
				return nil, false
			}
		case appendStep:
			return nil, false
		default:
			l, ok := cur.([]any)
			if !ok || int(s.index) >= len(l) {
				return nil, false
			}
			cur = l[s.index]
		}
	}
	return cur, true
}

// overlay is the differences below one node, by the steps below it.
type overlay struct {
	// op and value are set for a difference at this node.
	op    string
	value any
	keys  map[string]*overlay
	elems map[int32]*overlay
	// appends are the elements added at the end of a list.
	appends []any
}

// overlayOf arranges ds by their steps below the first depth.
func overlayOf(ds []diff, depth int) *overlay {
	root := &overlay{}
	for _, d := range ds {
		cur := root
		for k, s := range d.steps[depth:] {
			last := depth+k == len(d.steps)-1
			if last && s.index == appendStep {
				cur.appends = append(cur.appends, d.desired)
				break
			}
			var next *overlay
			if s.index == mapStep {
				if cur.keys == nil {
					cur.keys = map[string]*overlay{}
				}
				if next = cur.keys[s.key]; next == nil {
					next = &overlay{}
					cur.keys[s.key] = next
				}
			} else {
				if cur.elems == nil {
					cur.elems = map[int32]*overlay{}
				}
				if next = cur.elems[s.index]; next == nil {
					next = &overlay{}
					cur.elems[s.index] = next
				}
			}
			cur = next
			if last {
				cur.op, cur.value = d.op, d.desired
			}
		}
	}
	return root
}

// overlayLength is the length of the JSON of v with ov applied, or more
// than budget once it exceeds it.
func overlayLength(v any, ov *overlay, budget int) int {
	if ov == nil {
		return jsonLength(v, budget)
	}
	if ov.op != "" {
		return jsonLength(ov.value, budget)
	}
	n, members := 2, 0
	member := func(l int) {
		if members > 0 {
			n++
		}
		members++
		n += l
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			c := ov.keys[k]
			if c != nil && c.op == "remove" {
				continue
			}
			member(stringLength(k) + 1 + overlayLength(e, c, budget-n))
			if n > budget {
				return n
			}
		}
		for k, c := range ov.keys {
			if _, ok := x[k]; !ok && c.op != "" && c.op != "remove" {
				member(stringLength(k) + 1 + jsonLength(c.value, budget-n))
				if n > budget {
					return n
				}
			}
		}
	case []any:
		for i, e := range x {
			c := ov.elems[int32(i)]
			if c != nil && c.op == "remove" {
				continue
			}
			member(overlayLength(e, c, budget-n))
			if n > budget {
				return n
			}
		}
		for _, e := range ov.appends {
			member(jsonLength(e, budget-n))
			if n > budget {
				return n
			}
		}
	default:
		return jsonLength(v, budget)
	}
	return n
}

// apply returns v with ov applied; it copies only the maps and lists it
// changes.
func (ov *overlay) apply(v any) any {
	if ov == nil {
		return v
	}
	if ov.op != "" {
		return ov.value
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x)+len(ov.keys))
		for k, e := range x {
			c := ov.keys[k]
			if c != nil && c.op == "remove" {
				continue
			}
			out[k] = c.apply(e)
		}
		for k, c := range ov.keys {
			if _, ok := x[k]; !ok && c.op != "" && c.op != "remove" {
				out[k] = c.value
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x)+len(ov.appends))
		for i, e := range x {
			c := ov.elems[int32(i)]
			if c != nil && c.op == "remove" {
				continue
			}
			out = append(out, c.apply(e))
		}
		return append(out, ov.appends...)
	}
	return v
}

// jsonLength is len(json.Marshal(v)) for the values of an unstructured
// object, or more than budget once it exceeds it.
func jsonLength(v any, budget int) int {
	switch x := v.(type) {
	case nil:
		return 4
	case bool:
		if x {
			return 4
		}
		return 5
	case string:
		return stringLength(x)
	case int64:
		return len(strconv.AppendInt(nil, x, 10))
	case map[string]any:
		n := 2
		first := true
		for k, e := range x {
			if !first {
				n++
			}
			first = false
			n += stringLength(k) + 1 + jsonLength(e, budget-n)
			if n > budget {
				return n
			}
		}
		return n
	case []any:
		n := 2
		for i, e := range x {
			if i > 0 {
				n++
			}
			n += jsonLength(e, budget-n)
			if n > budget {
				return n
			}
		}
		return n
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// stringLength is the length of s as encoding/json writes it, escapes
// included.
func stringLength(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6 // \ufffd
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
