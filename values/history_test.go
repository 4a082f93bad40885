package values

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// listTracker is the tracker as it was before histories were shared: every
// record copies its Overrode list (quadratic, but plainly right). It is the
// model the shared histories must agree with.
type listTracker struct {
	recs map[string]listRecord
}

type listRecord struct {
	src      Source
	overrode []Source
}

func (t *listTracker) displace(path string, old any, acc []Source) []Source {
	switch v := old.(type) {
	case map[string]any:
		if len(v) > 0 {
			for _, k := range sortedKeys(v) {
				acc = t.displace(childKey(path, k), v[k], acc)
			}
			return acc
		}
	case []any:
		if len(v) > 0 {
			for i, e := range v {
				acc = t.displace(childIndex(path, i), e, acc)
			}
			return acc
		}
	}
	r, ok := t.recs[path]
	if !ok {
		return acc
	}
	delete(t.recs, path)
	for _, s := range r.overrode {
		if !slices.Contains(acc, s) {
			acc = append(acc, s)
		}
	}
	if !slices.Contains(acc, r.src) {
		acc = append(acc, r.src)
	}
	return acc
}

func (t *listTracker) assign(path string, old any, hadOld bool, v any, src Source) {
	if hadOld && !isContainer(old) && !isContainer(v) {
		var over []Source
		if r, ok := t.recs[path]; ok {
			for _, s := range r.overrode {
				if s != src {
					over = append(over, s)
				}
			}
			if r.src != src && !slices.Contains(over, r.src) {
				over = append(over, r.src)
			}
		}
		t.recs[path] = listRecord{src: src, overrode: over}
		return
	}
	var over []Source
	if hadOld {
		for _, s := range t.displace(path, old, nil) {
			if s != src {
				over = append(over, s)
			}
		}
	}
	forLeaves(path, v, func(p string, _ any) { t.recs[p] = listRecord{src: src, overrode: over} })
}

func (t *listTracker) mergeInto(dst, src map[string]any, prefix string, s Source) {
	for k, v := range src {
		p := childKey(prefix, k)
		if vm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				if len(vm) == 0 {
					continue
				}
				if len(dm) == 0 {
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

// FuzzHistoryMatchesList composes documents and --set lines from several
// sources with both trackers: every leaf has the same source and the same
// Overrode list, in the same order.
func FuzzHistoryMatchesList(f *testing.F) {
	f.Add("a: {b: 1, c: [1, 2]}\nd: x", "a: {b: {e: 1}, c: [3]}\nd: null", "a.b=1,a=2,a.x=3")
	f.Add("a: 1", "a: {b: {}}", "a.b.c=1,a.b=2")
	f.Add("l: [1, 2, 3]", "l: [{x: 1}]", "l[0].y=2,l[2]=z,l=1")
	f.Add("m: {x: 1, y: 2}", "m: {}", "m.z=1,m.x=2,m.x=3")
	f.Fuzz(func(t *testing.T, x, y, line string) {
		if len(x)+len(y)+len(line) > 1024 {
			return
		}
		a, errA := decodeDocument([]byte(x), DefaultLimits())
		b, errB := decodeDocument([]byte(y), DefaultLimits())
		if errA != nil || errB != nil {
			return
		}
		shared, list := newTracker(), &listTracker{recs: map[string]listRecord{}}
		accS, accL := map[string]any{}, map[string]any{}
		srcs := []Source{{Kind: SourceFile, Name: "a"}, {Kind: SourceFile, Name: "b", Index: 1},
			{Kind: SourceConfigMap, Name: "c", Index: 2}, {Kind: SourceFile, Name: "a again", Index: 3}}
		shared.mergeInto(accS, copyMap(a), "", srcs[0])
		list.mergeInto(accL, copyMap(a), "", srcs[0])
		shared.mergeInto(accS, copyMap(b), "", srcs[1])
		list.mergeInto(accL, copyMap(b), "", srcs[1])
		errS := setLine(accS, line, setTyped, func(p string, o any, h bool, v any) { shared.assign(p, o, h, v, srcs[2]) })
		errL := setLine(accL, line, setTyped, func(p string, o any, h bool, v any) { list.assign(p, o, h, v, srcs[2]) })
		require.Equal(t, errS == nil, errL == nil)
		if errS != nil {
			return
		}
		shared.mergeInto(accS, copyMap(a), "", srcs[3])
		list.mergeInto(accL, copyMap(a), "", srcs[3])
		require.Equal(t, accL, accS)
		for _, o := range shared.provenance(accS, &redactor{}).Origins() {
			r, ok := list.recs[o.Path]
			if !ok {
				require.Empty(t, o.Source.Kind, o.Path)
				continue
			}
			require.Equal(t, r.src, o.Source, o.Path)
			require.Equal(t, len(r.overrode), len(o.Overrode), "%s: %v vs %v", o.Path, r.overrode, o.Overrode)
			for i := range r.overrode {
				require.Equal(t, r.overrode[i], o.Overrode[i], o.Path)
			}
		}
	})
}
