package drift

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// step is one level of the path being walked. A map step has index -1; a
// list step has the element's index in the live list (or -2 for an element
// to append) and its index and key label in the desired list.
type step struct {
	key    string
	index  int32
	dindex int32
	// elem is the desired element of a keyed list; its label (name=web)
	// is built only when a difference is reported.
	elem map[string]any
}

const (
	mapStep    = -1
	appendStep = -2
)

// diff is one difference found by the walk, before it is turned into a
// patch operation and a readable change.
type diff struct {
	op      string
	path    string
	live    any
	desired any
	steps   []step
}

// walker compares one desired object with its live counterpart the way
// server-side apply sees it: only what desired sets counts.
type walker struct {
	steps []step
	diffs []diff
	// managers is scratch for the owners of each difference.
	managers [][]string
	// err is the limit the walk ran into at the first path (in string
	// order), so that the error does not depend on map order. The walk
	// does not go below a value that exceeds a limit.
	err *LimitError
	// seed seeds the hash of keyed lists' indexes, drawn for the first.
	seed   maphash.Seed
	seeded bool
}

// hashSeed returns the walker's seed, drawing it the first time.
func (w *walker) hashSeed() maphash.Seed {
	if !w.seeded {
		w.seed, w.seeded = maphash.MakeSeed(), true
	}
	return w.seed
}

// fail records a limit error at the current path, or at below under it.
func (w *walker) fail(side string, limit Limit, maxValue, actual int, below string) {
	path := pointerOf(w.steps) + below
	if w.err == nil || path < w.err.Path {
		w.err = &LimitError{Side: side, Path: path, Limit: limit, Max: maxValue, Actual: actual}
	}
}

func (w *walker) push(s step) { w.steps = append(w.steps, s) }
func (w *walker) pop()        { w.steps = w.steps[:len(w.steps)-1] }

// compareRoot walks the top level of an object. apiVersion and kind are
// identity, status belongs to controllers, and of metadata only labels and
// annotations are compared (as Flux does).
func (w *walker) compareRoot(d, l map[string]any, root *pathNode) {
	if root != nil && root.ignored {
		return
	}
	for k, dv := range d {
		switch k {
		case "apiVersion", "kind", "status":
			continue
		case "metadata":
			w.compareMetadata(dv, l["metadata"], root.child("metadata"))
			continue
		}
		if dv == nil {
			continue
		}
		child := root.child(k)
		if child != nil && child.ignored {
			continue
		}
		var flags walkFlags
		if k == "data" || k == "binaryData" || k == "stringData" {
			flags = strictKeys
		}
		w.push(step{key: k, index: mapStep})
		lv, ok := l[k]
		switch {
		case !ok && isEmptyValue(dv):
		case !ok:
			w.emit("add", nil, graft(dv, nil, child))
		default:
			w.walk(dv, lv, child, k, flags)
		}
		w.pop()
	}
}

func (w *walker) compareMetadata(d, l any, node *pathNode) {
	if node != nil && node.ignored {
		return
	}
	dm, _ := d.(map[string]any)
	lm, _ := l.(map[string]any)
	w.push(step{key: "metadata", index: mapStep})
	defer w.pop()
	for _, field := range [...]string{"labels", "annotations"} {
		dv, ok := dm[field].(map[string]any)
		if !ok || len(dv) == 0 {
			continue
		}
		child := node.child(field)
		if child != nil && child.ignored {
			continue
		}
		w.push(step{key: field, index: mapStep})
		if lv, ok := lm[field].(map[string]any); ok {
			w.walkMap(dv, lv, child, strictKeys)
		} else if v := graft(dv, nil, child); len(v.(map[string]any)) > 0 {
			w.emit("add", nil, v)
		}
		w.pop()
	}
}

// walkFlags carry what the parent knows about a value.
type walkFlags uint8

const (
	// strictKeys: a map whose keys are data (ConfigMap data, labels), where
	// a missing key is drift even if the desired value is empty.
	strictKeys walkFlags = 1 << iota
	// quantityValue: a scalar that is a resource quantity.
	quantityValue
)

// walk compares a desired value with the live value at the same place.
// field is the name of the map key holding the value; it picks list merge
// keys and marks maps of resource quantities.
func (w *walker) walk(d, l any, node *pathNode, field string, flags walkFlags) {
	if len(w.steps) > MaxDepth {
		w.fail("desired", LimitDepth, MaxDepth, len(w.steps), "")
		return
	}
	switch dv := d.(type) {
	case map[string]any:
		lm, ok := l.(map[string]any)
		if !ok {
			w.emit("replace", l, graft(dv, l, node))
			return
		}
		mapFlags := flags & strictKeys
		if isQuantityField(field) {
			mapFlags |= quantityValue
		}
		w.walkMap(dv, lm, node, mapFlags)
	case []any:
		ll, ok := l.([]any)
		if !ok {
			w.emit("replace", l, graft(dv, l, node))
			return
		}
		if mk, ok := mergeKeyFor(field, dv); ok {
			switch {
			case len(dv) > MaxKeyedListLength:
				w.fail("desired", LimitKeyedList, MaxKeyedListLength, len(dv), "")
				return
			case len(ll) > MaxKeyedListLength:
				w.fail("live", LimitKeyedList, MaxKeyedListLength, len(ll), "")
				return
			case alignedList(dv, ll, mk):
				w.walkKeyed(dv, ll, node, nil)
				return
			}
			if idx := newKeyIndex(dv, ll, mk, w.hashSeed()); idx != nil && w.walkKeyed(dv, ll, node, idx) {
				return
			}
		}
		if len(dv) != len(ll) {
			w.emit("replace", l, graft(dv, l, node))
			return
		}
		for i := range dv {
			if dv[i] == nil {
				continue
			}
			child := node.childIndex(i)
			if child != nil && child.ignored {
				continue
			}
			w.push(step{index: int32(i), dindex: int32(i)})
			w.walk(dv[i], ll[i], child, "", 0)
			w.pop()
		}
	default:
		if equalValues(d, l) || flags&quantityValue != 0 && equalQuantities(d, l) {
			return
		}
		w.emit("replace", l, d)
	}
}

// walkMap compares the keys desired sets. flags describe the map: with
// strictKeys a missing key always counts; with quantityValue the values
// are resource quantities.
func (w *walker) walkMap(dv, lm map[string]any, node *pathNode, flags walkFlags) {
	for k, dvv := range dv {
		if dvv == nil {
			continue
		}
		child := node.child(k)
		if child != nil && child.ignored {
			continue
		}
		lv, ok := lm[k]
		if !ok && flags&strictKeys == 0 && isEmptyValue(dvv) {
			// Typed API fields drop empty values on the way in, so an
			// empty desired value that live lacks is not drift.
			continue
		}
		if ok && sameScalar(dvv, lv) {
			continue
		}
		w.push(step{key: k, index: mapStep})
		if ok {
			w.walk(dvv, lv, child, k, flags&quantityValue)
		} else {
			w.emit("add", nil, graft(dvv, nil, child))
		}
		w.pop()
	}
}

// walkKeyed pairs desired and live elements by key. idx is nil when
// alignedList found that element j of both lists has the same key;
// otherwise it indexes the live elements by key, so that pairing takes
// linear time whatever the order of the lists. When idx finds that the
// list cannot be matched by key (a desired element without the key, or
// two with the same), walkKeyed takes back what it found and returns
// false, for the caller to compare by position.
func (w *walker) walkKeyed(dv, ll []any, node *pathNode, idx *keyIndex) bool {
	mark, err := len(w.diffs), w.err
	for j, de := range dv {
		i := j
		if idx != nil {
			var ok bool
			if i, ok = idx.pair(j); !ok {
				w.diffs, w.err = w.diffs[:mark], err
				return false
			}
		}
		dm := de.(map[string]any)
		child := node.childIndex(j)
		if child != nil && child.ignored {
			continue
		}
		if i < 0 {
			w.push(step{index: appendStep, dindex: int32(j), elem: dm})
			w.emit("add", nil, graft(dm, nil, child))
		} else {
			w.push(step{index: int32(i), dindex: int32(j), elem: dm})
			w.walk(dm, ll[i], child, "", 0)
		}
		w.pop()
	}
	return true
}

// emit records a difference at the current path. desired is the value the
// patch writes (already grafted around ignored paths).
func (w *walker) emit(op string, live, desired any) {
	// The values of a difference are shown and marshalled whole, so their
	// nesting counts towards the limit as well.
	room := MaxDepth - len(w.steps)
	if tooDeep(desired, room) {
		w.fail("desired", LimitDepth, MaxDepth, MaxDepth+1, deepPath(desired, room))
		return
	}
	if tooDeep(live, room) {
		w.fail("live", LimitDepth, MaxDepth, MaxDepth+1, deepPath(live, room))
		return
	}
	w.diffs = append(w.diffs, diff{
		op:      op,
		path:    pointerOf(w.steps),
		live:    live,
		desired: desired,
		steps:   slices.Clone(w.steps),
	})
}

func pointerOf(steps []step) string {
	var b strings.Builder
	for _, s := range steps {
		b.WriteByte('/')
		switch s.index {
		case mapStep:
			writeEscaped(&b, s.key)
		case appendStep:
			b.WriteByte('-')
		default:
			b.WriteString(strconv.Itoa(int(s.index)))
		}
	}
	return b.String()
}

// fieldOf renders steps for people. With labels, elements of keyed lists
// are named by their key (containers[name=web]); without, by their index
// in the desired list, for paths whose values must not be shown (a
// Secret's data).
func fieldOf(steps []step, labels bool) string {
	var b strings.Builder
	for i, s := range steps {
		switch {
		case s.index == mapStep && plainKey(s.key):
			if i > 0 {
				b.WriteByte('.')
			}
			b.WriteString(s.key)
		case s.index == mapStep:
			b.WriteByte('[')
			b.WriteString(strconv.Quote(s.key))
			b.WriteByte(']')
		case labels && s.elem != nil && i > 0:
			// A keyed list's merge key follows from the field holding it.
			mk, _ := mergeKeyFor(steps[i-1].key, []any{s.elem})
			b.WriteByte('[')
			b.WriteString(mk.label(s.elem))
			b.WriteByte(']')
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(int(s.dindex)))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// childIndex is child for a list index; it formats the index only when
// some pointer goes below n.
func (n *pathNode) childIndex(i int) *pathNode {
	if n == nil || n.children == nil {
		return nil
	}
	return n.children[strconv.Itoa(i)]
}

// graft returns the value a patch writes in place of live: desired, except
// that ignored paths keep what live has there (or are left out when live
// has nothing). It copies only along ignored paths.
func graft(d, l any, node *pathNode) any {
	if node == nil || len(node.children) == 0 {
		return d
	}
	switch dv := d.(type) {
	case map[string]any:
		lm, _ := l.(map[string]any)
		out := make(map[string]any, len(dv))
		for k, v := range dv {
			c := node.children[k]
			switch {
			case c == nil:
				out[k] = v
			case c.ignored:
				if lv, ok := lm[k]; ok {
					out[k] = lv
				}
			default:
				out[k] = graft(v, lm[k], c)
			}
		}
		for k, c := range node.children {
			if _, inDesired := dv[k]; c.ignored && !inDesired {
				if lv, ok := lm[k]; ok {
					out[k] = lv
				}
			}
		}
		return out
	case []any:
		ll, _ := l.([]any)
		out := make([]any, len(dv))
		for i, v := range dv {
			c := node.children[strconv.Itoa(i)]
			var lv any
			if i < len(ll) {
				lv = ll[i]
			}
			switch {
			case c == nil:
				out[i] = v
			case c.ignored && i < len(ll):
				out[i] = lv
			case c.ignored:
				// A list cannot have a hole: with no live element to keep,
				// the desired one stays.
				out[i] = v
			default:
				out[i] = graft(v, lv, c)
			}
		}
		return out
	}
	return d
}

// mergeKey names the fields that identify an element of an associative
// list (Kubernetes' patchMergeKey / listMapKeys), with a default for the
// second field when the API defaults it (protocol: TCP).
type mergeKey struct {
	first, second string
	secondDefault string
}

// mergeKeyFor returns the merge key of the list held by field, for the
// built-in kinds' associative lists. Other lists are compared by position.
func mergeKeyFor(field string, elems []any) (mergeKey, bool) {
	switch field {
	case "containers", "initContainers", "ephemeralContainers", "volumes", "env",
		"imagePullSecrets", "resourceClaims", "schedulingGates":
		return mergeKey{first: "name"}, true
	case "volumeMounts":
		return mergeKey{first: "mountPath"}, true
	case "volumeDevices":
		return mergeKey{first: "devicePath"}, true
	case "hostAliases":
		return mergeKey{first: "ip"}, true
	case "conditions":
		return mergeKey{first: "type"}, true
	case "topologySpreadConstraints":
		return mergeKey{first: "topologyKey", second: "whenUnsatisfiable"}, true
	case "ports":
		if len(elems) == 0 {
			return mergeKey{}, false
		}
		first, _ := elems[0].(map[string]any)
		if _, ok := first["containerPort"]; ok {
			return mergeKey{first: "containerPort", second: "protocol", secondDefault: "TCP"}, true
		}
		if _, ok := first["port"]; ok {
			return mergeKey{first: "port", second: "protocol", secondDefault: "TCP"}, true
		}
	}
	return mergeKey{}, false
}

func (mk mergeKey) field(m map[string]any, name, def string) (any, bool) {
	if v, ok := m[name]; ok && v != nil {
		return v, true
	}
	if def != "" {
		return def, true
	}
	return nil, false
}

// equal reports whether a desired element and a live element have the
// same key.
func (mk mergeKey) equal(dm map[string]any, l any) bool {
	a, _ := mk.field(dm, mk.first, "")
	return mk.equalWith(a, dm, l)
}

// equalWith is equal for a desired element whose first key field holds a.
func (mk mergeKey) equalWith(a any, dm map[string]any, l any) bool {
	lm, ok := l.(map[string]any)
	if !ok {
		return false
	}
	b, ok := mk.field(lm, mk.first, "")
	if !ok || !equalValues(a, b) {
		return false
	}
	if mk.second == "" {
		return true
	}
	a, aok := mk.field(dm, mk.second, mk.secondDefault)
	b, bok := mk.field(lm, mk.second, mk.secondDefault)
	return aok == bok && (!aok || equalValues(a, b))
}

func (mk mergeKey) label(dm map[string]any) string {
	s := mk.first + "=" + scalarText(dm[mk.first])
	if mk.second != "" {
		if v, ok := dm[mk.second]; ok {
			s += "," + mk.second + "=" + scalarText(v)
		}
	}
	return s
}

func scalarText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// alignedList reports the common case of a keyed list: desired element j
// has the key of live element j for every j. Matching by key then pairs
// elements by position, so duplicate keys need no check.
func alignedList(dv, ll []any, mk mergeKey) bool {
	if len(ll) < len(dv) {
		return false
	}
	for j, e := range dv {
		m, ok := e.(map[string]any)
		if !ok {
			return false
		}
		if v, ok := m[mk.first]; !ok || v == nil || !mk.equalWith(v, m, ll[j]) {
			return false
		}
	}
	return true
}

// sameScalar is the fast path of the walk: equal strings, integers or
// booleans need no path bookkeeping.
func sameScalar(d, l any) bool {
	switch dv := d.(type) {
	case string:
		lv, ok := l.(string)
		return ok && lv == dv
	case int64:
		lv, ok := l.(int64)
		return ok && lv == dv
	case bool:
		lv, ok := l.(bool)
		return ok && lv == dv
	}
	return false
}

// isEmptyValue reports values that typed API fields omit when empty.
func isEmptyValue(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	case string:
		return x == ""
	case bool:
		return !x
	}
	f, ok := number(v)
	return ok && f == 0
}

// equalValues compares JSON-like values, treating numbers by value
// (unstructured holds int64 and float64; JSON decoding gives float64).
// Values nested deeper than MaxDepth are never equal: Detect rejects them
// anyway, and the bound keeps the recursion's stack small.
func equalValues(a, b any) bool { return equalDepth(a, b, MaxDepth) }

func equalDepth(a, b any, room int) bool {
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case nil:
		return b == nil
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok || len(av) != len(bv) || room <= 0 {
			return false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok || !equalDepth(x, y, room-1) {
				return false
			}
		}
		return true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) || room <= 0 {
			return false
		}
		for i := range av {
			if !equalDepth(av[i], bv[i], room-1) {
				return false
			}
		}
		return true
	}
	if ai, ok := a.(int64); ok {
		if bi, ok := b.(int64); ok {
			return ai == bi
		}
	}
	x, ok1 := number(a)
	y, ok2 := number(b)
	return ok1 && ok2 && x == y
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		return n, !math.IsNaN(n)
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// isQuantityField reports maps of resource quantities, which the API
// server rewrites to canonical form ("0.5" becomes "500m").
func isQuantityField(field string) bool {
	switch field {
	case "limits", "requests", "hard", "capacity", "allocatable", "overhead":
		return true
	}
	return false
}

// equalQuantities compares two scalars as resource quantities.
func equalQuantities(a, b any) bool {
	qa, ok1 := parseQuantity(a)
	qb, ok2 := parseQuantity(b)
	return ok1 && ok2 && qa.Cmp(qb) == 0
}

func parseQuantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}
