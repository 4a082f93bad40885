package strictyaml

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Laughs returns a "billion laughs" document: levels anchors, each a list
// of width aliases of the one before, so that it expands to width^levels
// nodes from a few hundred bytes.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [" + strings.TrimSuffix(strings.Repeat("x, ", width), ", ") + "]\n")
	for i := 1; i <= levels; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), width), ", ")
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, refs)
	}
	return b.String()
}

// wideAlias returns a document with one anchored list of n scalars and
// copies aliases of it: it expands to about (copies+1)·n nodes, a ratio of
// aliased to decoded nodes that yaml.v2's own guard lets through.
func wideAlias(n, copies int) string {
	var b strings.Builder
	b.WriteString("big: &big\n")
	for i := range n {
		fmt.Fprintf(&b, "- v%d\n", i)
	}
	for i := range copies {
		fmt.Fprintf(&b, "c%d: *big\n", i)
	}
	return b.String()
}

func allocs(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestCheckAliases(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ok   bool
	}{
		{name: "no aliases", doc: "a: &x 1\nb: [1, 2, 3]\n", ok: true},
		{name: "a block repeated a few times", doc: wideAlias(1000, 3), ok: true},
		{name: "small expansion under the floor", doc: wideAlias(100, 50), ok: true},
		{name: "merge keys", doc: "base: &b {a: 1, b: 2}\nx: {<<: *b, c: 3}\ny: {<<: *b}\n", ok: true},
		{name: "billion laughs", doc: laughs(9, 10)},
		{name: "laughs, narrow and deep", doc: laughs(60, 2)},
		{name: "one block aliased many times", doc: wideAlias(5000, 10)},
		{name: "not YAML", doc: "a: &x [\n*x", ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocs(func() { err = CheckAliases([]byte(tt.doc)) })
			if tt.ok {
				require.NoError(t, err)
				return
			}
			var ae *AliasError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, AliasFactor*ae.Written+AliasFloor, ae.Limit)
			assert.Contains(t, err.Error(), "YAML aliases expand the document past")
			// Linear in the document as written, whatever it expands to.
			assert.Less(t, n, uint64(allocFactor*(2000*len(tt.doc)+(1<<20))), "allocated %d bytes for %d", n, len(tt.doc))

			_, err = ToJSON(Split([]byte(tt.doc))[0])
			require.ErrorAs(t, err, &ae, "ToJSON checks first")
		})
	}
}

func FuzzCheckAliases(f *testing.F) {
	f.Add([]byte(laughs(3, 3)))
	f.Add([]byte(wideAlias(10, 2)))
	f.Add([]byte("a: &a {b: *a}\n"))
	f.Add([]byte("- &a [&b x, *b]\n- *a\n- {<<: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckAliases(data)
		if err == nil {
			return
		}
		var ae *AliasError
		require.ErrorAs(t, err, &ae)
		require.Positive(t, ae.Written)
	})
}

func TestCheckAliasesStream(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   string // "" for no error
	}{
		{name: "one document", stream: wideAlias(1000, 3)},
		{name: "several documents within budget", stream: wideAlias(100, 50) + "---\n" + wideAlias(100, 50) + "---\n" + wideAlias(1000, 3)},
		{name: "bomb in the first document", stream: laughs(9, 10) + "---\na: 1\n", want: "document 1: "},
		{name: "bomb in the second document", stream: "a: &a 1\nb: *a\n---\n" + laughs(9, 10), want: "document 2: "},
		{name: "bomb in the third document after an empty one", stream: "a: 1\n---\n---\n" + laughs(9, 10), want: "document 3: "},
		{name: "unparsable document stops the check", stream: "a: [\n---\n" + laughs(9, 10)},
		{name: "no indicators", stream: "a: 1\n---\nb: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAliasesStream([]byte(tt.stream))
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			var ae *AliasError
			require.ErrorAs(t, err, &ae)
			assert.True(t, strings.HasPrefix(err.Error(), tt.want), err.Error())
		})
	}
	// The first document alone is what CheckAliases sees.
	assert.NoError(t, CheckAliases([]byte("a: &a 1\nb: *a\n---\n"+laughs(9, 10))))
}
