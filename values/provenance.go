package values

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Origin explains one leaf of the composed values: a scalar, a null, or an
// empty map or list.
type Origin struct {
	// Path of the leaf in Helm --set syntax, e.g. image.tag or hosts[0].
	Path string
	// Source set the value the leaf has now.
	Source Source
	// Overrode lists, oldest first, the sources whose values at this path (or
	// at the map or list it replaced) were overwritten on the way.
	Overrode []Source
	// Value is the leaf printed for people: YAML-like scalars, or a
	// redaction marker when Sensitive. It never holds Secret text.
	Value string
	// Sensitive is true when the value came from a Secret.
	Sensitive bool
}

// String renders the origin as one report line.
func (o Origin) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s = %s  <- %s", o.Path, o.Value, o.Source)
	if len(o.Overrode) > 0 {
		b.WriteString(" (overrode ")
		for i, s := range o.Overrode {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s.String())
		}
		b.WriteString(")")
	}
	return b.String()
}

// Provenance records where every leaf of a composition came from. It holds
// no Secret-sourced text, so it is safe to print, log and store.
type Provenance struct {
	origins []Origin // sorted by path
	index   map[string]int
}

// Origins returns every leaf's origin, sorted by path.
func (p *Provenance) Origins() []Origin {
	if p == nil {
		return nil
	}
	return slices.Clone(p.origins)
}

// Explain returns the origin of the leaf at path, or of every leaf under
// path when it names a map or a list, sorted by path. The path is in Helm
// --set syntax as printed by Origin.Path (escape dots in keys with \.); the
// empty path explains everything. It returns nil when nothing is there.
func (p *Provenance) Explain(path string) []Origin {
	if p == nil {
		return nil
	}
	want, err := parsePath(path)
	if err != nil {
		return nil
	}
	canon := formatPath(want)
	if i, ok := p.index[canon]; ok {
		return []Origin{p.origins[i]}
	}
	var out []Origin
	for _, o := range p.origins {
		segs, _ := parsePath(o.Path)
		if len(segs) > len(want) && comparePaths(segs[:len(want)], want) == 0 {
			out = append(out, o)
		}
	}
	return out
}

// String is the whole-tree report: one line per leaf, sorted by path.
func (p *Provenance) String() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for _, o := range p.origins {
		b.WriteString(o.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// record is the tracker's note for one leaf path.
type record struct {
	src    Source
	hist   *history // what the value overrode; nil for nothing
	secret bool     // the value is Secret data (from a Secret, or copied from one)
}

// history is an immutable, shared record of the sources whose values a leaf
// overrode. Overwriting a leaf adds one node in O(1) and displacing a map or
// list joins its leaves' histories in one node, instead of copying the lists,
// which made a composition of n references cost O(n²). The sequence a node
// stands for is seq(prev), then seq(p) for each of parts, then src when
// isSrc; Overrode is that sequence without repeats (first appearance) and
// without the leaf's own source. A source that rewrites its own leaves adds
// nothing, so each source enters a history when another overrides it.
type history struct {
	prev  *history
	parts []*history
	src   Source
	isSrc bool
}

// push returns h followed by s.
func (h *history) push(s Source) *history { return &history{prev: h, src: s, isSrc: true} }

// join returns the concatenation of parts (nil ones left out).
func join(parts []*history) *history {
	parts = slices.DeleteFunc(parts, func(p *history) bool { return p == nil })
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return parts[0]
	}
	return &history{parts: parts}
}

// sources lists the sequence of h without repeats, oldest first. A node seen
// before adds nothing (its sources are already listed), so the walk visits
// each node once however much the histories share.
func (h *history) sources() []Source {
	var out []Source
	seen := map[Source]bool{}
	visited := map[*history]bool{}
	var walk func(h *history)
	walk = func(h *history) {
		var chain []*history // newest first; iterative, chains can be long
		for n := h; n != nil && !visited[n]; n = n.prev {
			visited[n] = true
			chain = append(chain, n)
		}
		for i := len(chain) - 1; i >= 0; i-- {
			n := chain[i]
			for _, p := range n.parts {
				walk(p)
			}
			if n.isSrc && !seen[n.src] {
				seen[n.src] = true
				out = append(out, n.src)
			}
		}
	}
	walk(h)
	return out
}

// tracker follows leaves through a composition, keyed by printed path.
type tracker struct {
	recs map[string]record
}

func newTracker() *tracker { return &tracker{recs: map[string]record{}} }

func childKey(prefix, k string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(k) + 1)
	b.WriteString(prefix)
	if prefix != "" {
		b.WriteByte('.')
	}
	if k == "" {
		b.WriteString(emptyKey)
		return b.String()
	}
	for i := 0; i < len(k); i++ {
		if strings.IndexByte(pathKeyEscapes, k[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(k[i])
	}
	return b.String()
}

func childIndex(prefix string, i int) string {
	return prefix + "[" + strconv.Itoa(i) + "]"
}

// displace forgets the leaves of old at path, which source by replaces, and
// returns their history (what each overrode, then its source unless that is
// by), in key and index order.
func (t *tracker) displace(path string, old any, by Source) *history {
	var parts []*history
	t.displaceInto(path, old, by, &parts)
	return join(parts)
}

func (t *tracker) displaceInto(path string, old any, by Source, parts *[]*history) {
	switch v := old.(type) {
	case map[string]any:
		if len(v) > 0 {
			for _, k := range sortedKeys(v) {
				t.displaceInto(childKey(path, k), v[k], by, parts)
			}
			return
		}
	case []any:
		if len(v) > 0 {
			for i, e := range v {
				t.displaceInto(childIndex(path, i), e, by, parts)
			}
			return
		}
	}
	r, ok := t.recs[path]
	if !ok {
		return
	}
	delete(t.recs, path)
	if r.src == by {
		*parts = append(*parts, r.hist) // a source does not override itself
		return
	}
	*parts = append(*parts, r.hist.push(r.src))
}

// place records every leaf of v at path as set by src, having overrode over.
func (t *tracker) place(path string, v any, src Source, over *history) {
	forLeaves(path, v, func(p string, _ any) {
		t.recs[p] = record{src: src, hist: over, secret: src.Sensitive()}
	})
}

// forLeaves calls fn for every leaf of v (a scalar, a null, an empty map or
// list) with its printed path under path, in no particular order.
func forLeaves(path string, v any, fn func(path string, leaf any)) {
	switch x := v.(type) {
	case map[string]any:
		if len(x) > 0 {
			for k, e := range x {
				forLeaves(childKey(path, k), e, fn)
			}
			return
		}
	case []any:
		if len(x) > 0 {
			for i, e := range x {
				forLeaves(childIndex(path, i), e, fn)
			}
			return
		}
	}
	fn(path, v)
}

// assign is the tracker's view of one assignment old -> v at path.
func (t *tracker) assign(path string, old any, hadOld bool, v any, src Source) {
	if hadOld && !isContainer(old) && !isContainer(v) {
		// Leaf over leaf, the common case: one node on the old history.
		var over *history
		if r, ok := t.recs[path]; ok {
			over = r.hist
			if r.src != src {
				over = over.push(r.src)
			}
		}
		t.recs[path] = record{src: src, hist: over, secret: src.Sensitive()}
		return
	}
	var over *history
	if hadOld {
		over = t.displace(path, old, src)
	}
	t.place(path, v, src, over)
}

// markSecret records every leaf of values at the JSON pointer ptr as
// Secret data (Request.SecretInline). A pointer that does not parse marks
// every leaf; one that names nothing marks nothing.
func (t *tracker) markSecret(values map[string]any, ptr string) {
	t.atPointer(values, ptr, func(p string) {
		r := t.recs[p]
		r.secret = true
		t.recs[p] = r
	})
}

// atPointer calls fn with the printed path of every leaf of values at the
// JSON pointer ptr. A pointer that does not parse names every leaf; one
// that names nothing names none.
func (t *tracker) atPointer(values map[string]any, ptr string, fn func(path string)) {
	var node any = values
	path := ""
	if strings.HasPrefix(ptr, "/") {
		for tok := range strings.SplitSeq(ptr[1:], "/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
			switch x := node.(type) {
			case map[string]any:
				e, ok := x[tok]
				if !ok {
					return
				}
				node, path = e, childKey(path, tok)
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(x) || strconv.Itoa(i) != tok {
					return
				}
				node, path = x[i], childIndex(path, i)
			default:
				return
			}
		}
	}
	forLeaves(path, node, func(p string, _ any) { fn(p) })
}

// hasSecrets reports whether any leaf holds Secret data.
func (t *tracker) hasSecrets() bool {
	for _, r := range t.recs {
		if r.secret {
			return true
		}
	}
	return false
}

// mergeInto deep-merges src into dst in place (src is owned by the caller
// and becomes part of dst), recording provenance for src's leaves.
func (t *tracker) mergeInto(dst, src map[string]any, prefix string, s Source) {
	for k, v := range src {
		p := childKey(prefix, k)
		if vm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				if len(vm) == 0 {
					continue
				}
				if len(dm) == 0 {
					// An empty map stops being a leaf.
					t.assign(p, dm, true, vm, s)
					dst[k] = vm
					continue
				}
				t.mergeInto(dm, vm, p, s)
				continue
			}
		}
		old, had := dst[k]
		dst[k] = v
		t.assign(p, old, had, v, s)
	}
}

// provenance builds the final report from the composed values.
func (t *tracker) provenance(values map[string]any, red *redactor) *Provenance {
	p := &Provenance{index: map[string]int{}}
	type item struct {
		segs []segment
		o    Origin
	}
	var items []item
	// Leaves placed together share one history: list it once.
	listed := map[*history][]Source{}
	overrode := func(r record) []Source {
		if r.hist == nil {
			return nil
		}
		all, ok := listed[r.hist]
		if !ok {
			all = r.hist.sources()
			listed[r.hist] = all
		}
		var out []Source
		for _, s := range all {
			if s != r.src {
				out = append(out, s)
			}
		}
		return out
	}
	var walk func(v any, path string, segs []segment)
	walk = func(v any, path string, segs []segment) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) > 0 || path == "" {
				for k, e := range x {
					walk(e, childKey(path, k), appendKey(segs, k))
				}
				return
			}
		case []any:
			if len(x) > 0 {
				for i, e := range x {
					walk(e, childIndex(path, i), appendIndex(segs, i))
				}
				return
			}
		}
		o := Origin{Path: path}
		if r, ok := t.recs[path]; ok {
			o.Source = r.src
			o.Overrode = overrode(r)
		}
		o.Sensitive = t.sensitive(path)
		if o.Sensitive {
			o.Value = red.marker(v)
		} else {
			o.Value = display(v)
		}
		items = append(items, item{segs: segs, o: o})
	}
	walk(values, "", nil)
	slices.SortFunc(items, func(a, b item) int { return comparePaths(a.segs, b.segs) })
	p.origins = make([]Origin, len(items))
	for i, it := range items {
		p.origins[i] = it.o
		p.index[it.o.Path] = i
	}
	return p
}

// sensitive reports whether the leaf at path came from a Secret.
func (t *tracker) sensitive(path string) bool {
	r, ok := t.recs[path]
	return ok && r.secret
}

// reconcile takes the tree a JSON patch produced and keeps, wherever a leaf
// did not change (JSON-equal), the old value with its original type and its
// provenance; changed leaves are attributed to src. A changed leaf whose
// value equals a Secret-sourced value stays redacted (a copy or move).
func (t *tracker) reconcile(old, cur any, path string, src Source, secrets map[string]bool) any {
	switch c := cur.(type) {
	case map[string]any:
		o, ok := old.(map[string]any)
		if ok && len(o) == 0 && len(c) == 0 {
			return old
		}
		if ok && len(o) > 0 && len(c) > 0 {
			for k, ov := range o {
				if _, ok := c[k]; !ok {
					t.displace(childKey(path, k), ov, src)
				}
			}
			for k, cv := range c {
				p := childKey(path, k)
				if ov, ok := o[k]; ok {
					c[k] = t.reconcile(ov, cv, p, src, secrets)
				} else {
					t.placePatched(p, cv, src, nil, secrets)
				}
			}
			return c
		}
	case []any:
		o, ok := old.([]any)
		if ok && len(o) == 0 && len(c) == 0 {
			return old
		}
		if ok && len(o) > 0 && len(c) > 0 {
			for i := len(c); i < len(o); i++ {
				t.displace(childIndex(path, i), o[i], src)
			}
			for i, cv := range c {
				p := childIndex(path, i)
				if i < len(o) {
					c[i] = t.reconcile(o[i], cv, p, src, secrets)
				} else {
					t.placePatched(p, cv, src, nil, secrets)
				}
			}
			return c
		}
	default:
		if jsonEqual(old, cur) && !isContainer(old) {
			return old
		}
	}
	t.placePatched(path, cur, src, t.displace(path, old, src), secrets)
	return cur
}

func isContainer(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return true
	}
	return false
}

// placePatched is place for patch results, keeping copied secrets redacted.
func (t *tracker) placePatched(path string, v any, src Source, over *history, secrets map[string]bool) {
	t.place(path, v, src, over)
	if len(secrets) == 0 {
		return
	}
	forLeaves(path, v, func(p string, leaf any) {
		if secrets[Digest(map[string]any{"": leaf})] {
			r := t.recs[p]
			r.secret = true
			t.recs[p] = r
		}
	})
}

// jsonEqual compares two leaves as JSON does (numbers by value).
func jsonEqual(a, b any) bool {
	fa, aok := number(a)
	fb, bok := number(b)
	if aok || bok {
		return aok && bok && fa == fb
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case int32:
		return float64(x), true
	}
	return 0, false
}

// display prints a non-secret leaf for people.
func display(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(x)
	case map[string]any:
		return "{}"
	case []any:
		return "[]"
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	default:
		return fmt.Sprint(x)
	}
}
