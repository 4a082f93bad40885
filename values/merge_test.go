package values

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMerge(t *testing.T) {
	tests := []struct {
		name     string
		dst, src map[string]any
		want     map[string]any
	}{
		{name: "nil inputs", want: map[string]any{}},
		{name: "maps recurse", dst: map[string]any{"a": map[string]any{"x": 1, "y": 2}}, src: map[string]any{"a": map[string]any{"y": 3, "z": 4}},
			want: map[string]any{"a": map[string]any{"x": 1, "y": 3, "z": 4}}},
		{name: "lists replace", dst: map[string]any{"l": []any{1, 2, 3}}, src: map[string]any{"l": []any{9}}, want: map[string]any{"l": []any{9}}},
		{name: "scalar replaces map", dst: map[string]any{"a": map[string]any{"x": 1}}, src: map[string]any{"a": "s"}, want: map[string]any{"a": "s"}},
		{name: "map replaces scalar", dst: map[string]any{"a": "s"}, src: map[string]any{"a": map[string]any{"x": 1}}, want: map[string]any{"a": map[string]any{"x": 1}}},
		{name: "null is kept for Helm to delete the default", dst: map[string]any{"a": 1}, src: map[string]any{"a": nil}, want: map[string]any{"a": nil}},
		{name: "empty map merges to nothing", dst: map[string]any{"a": map[string]any{"x": 1}}, src: map[string]any{"a": map[string]any{}}, want: map[string]any{"a": map[string]any{"x": 1}}},
		{name: "typed maps and slices become generic", dst: map[string]any{"a": map[string]string{"x": "1"}}, src: map[string]any{"a": map[string]any{"y": []string{"p"}}},
			want: map[string]any{"a": map[string]any{"x": "1", "y": []any{"p"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst, src := copyMap(tt.dst), copyMap(tt.src)
			got := Merge(tt.dst, tt.src)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, dst, copyMap(tt.dst), "dst unchanged")
			assert.Equal(t, src, copyMap(tt.src), "src unchanged")
		})
	}
}

func TestMergeSharesNothing(t *testing.T) {
	dst := map[string]any{"keep": map[string]any{"l": []any{1}}}
	src := map[string]any{"new": map[string]any{"l": []any{2}}}
	out := Merge(dst, src)
	out["keep"].(map[string]any)["l"].([]any)[0] = "changed"
	out["new"].(map[string]any)["l"].([]any)[0] = "changed"
	assert.Equal(t, 1, dst["keep"].(map[string]any)["l"].([]any)[0])
	assert.Equal(t, 2, src["new"].(map[string]any)["l"].([]any)[0])
}

func TestDigest(t *testing.T) {
	a := map[string]any{"a": 1, "b": map[string]any{"c": []any{"x", true, nil}}, "f": 2.5}
	b := map[string]any{"f": 2.5, "b": map[string]any{"c": []any{"x", true, nil}}, "a": 1.0}
	assert.Equal(t, Digest(a), Digest(b), "order and integer width do not matter")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, Digest(a))
	for name, changed := range map[string]map[string]any{
		"value":      {"a": 2, "b": map[string]any{"c": []any{"x", true, nil}}, "f": 2.5},
		"list order": {"a": 1, "b": map[string]any{"c": []any{true, "x", nil}}, "f": 2.5},
		"type":       {"a": "1", "b": map[string]any{"c": []any{"x", true, nil}}, "f": 2.5},
		"null":       {"a": 1, "b": map[string]any{"c": []any{"x", true}}, "f": 2.5},
		"key":        {"A": 1, "b": map[string]any{"c": []any{"x", true, nil}}, "f": 2.5},
		"nesting":    {"a": 1, "b": map[string]any{"c": []any{[]any{"x", true, nil}}}, "f": 2.5},
	} {
		assert.NotEqual(t, Digest(a), Digest(changed), name)
	}
	assert.NotEqual(t, Digest(map[string]any{"ab": "c"}), Digest(map[string]any{"a": "bc"}), "length prefixes separate fields")
	assert.Equal(t, Digest(map[string]any{}), Digest(nil))
}

// mergeModel is the reference: Flux's MergeMaps, written plainly.
func mergeModel(a, b map[string]any) map[string]any {
	out := maps.Clone(a)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range b {
		if vm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeModel(am, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

func FuzzMerge(f *testing.F) {
	f.Add("a: {b: 1, c: [1, 2]}\nd: x", "a: {b: {e: 1}, c: [3]}\nd: null")
	f.Add("a: 1", "a: {b: {}}")
	f.Add("{}", "a: &x {b: 1}\nc: *x")
	f.Fuzz(func(t *testing.T, x, y string) {
		if len(x)+len(y) > 1024 {
			return
		}
		a, errA := decodeDocument([]byte(x), DefaultLimits())
		b, errB := decodeDocument([]byte(y), DefaultLimits())
		if errA != nil || errB != nil {
			return
		}
		aBefore, bBefore := Digest(a), Digest(b)
		got := Merge(a, b)
		require.Equal(t, aBefore, Digest(a), "dst modified")
		require.Equal(t, bBefore, Digest(b), "src modified")
		require.Equal(t, Digest(mergeModel(copyMap(a), copyMap(b))), Digest(got))
		require.Equal(t, Digest(got), Digest(Merge(got, b)), "merging the same source twice changes nothing")

		// The tracked merge Compose uses gives the same tree, and provenance
		// has exactly one origin per leaf.
		tr := newTracker()
		acc := map[string]any{}
		tr.mergeInto(acc, copyMap(a), "", Source{Kind: SourceFile, Name: "a"})
		tr.mergeInto(acc, copyMap(b), "", Source{Kind: SourceFile, Name: "b"})
		require.Equal(t, Digest(got), Digest(acc))
		p := tr.provenance(acc, &redactor{})
		for _, o := range p.Origins() {
			require.NotEmpty(t, o.Source.Kind, "leaf %q has no origin", o.Path)
		}
	})
}
