package release

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nestedLists returns a stream of v1 Lists nested depth deep around one
// HelmRelease, in flow style ({...} on one line) or in JSON.
func nestedLists(depth int, asJSON bool) string {
	open, closing := `{apiVersion: v1, kind: List, items: [`, `]}`
	leaf := `{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, metadata: {name: x, namespace: apps}, spec: {interval: 1m, chartRef: {kind: HelmChart, name: c}}}`
	if asJSON {
		open = `{"apiVersion": "v1", "kind": "List", "items": [`
		leaf = `{"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x", "namespace": "apps"}, "spec": {"interval": "1m", "chartRef": {"kind": "HelmChart", "name": "c"}}}`
	}
	return strings.Repeat(open, depth) + leaf + strings.Repeat(closing, depth) + "\n"
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeNestedLists: Lists inside Lists are read up to MaxListDepth
// deep, and a deeper nesting is refused, naming the path of the List
// that is too deep, at a cost linear in the stream (no item is encoded
// again for every level above it).
func TestDecodeNestedLists(t *testing.T) {
	t.Run("within the cap", func(t *testing.T) {
		for _, asJSON := range []bool{false, true} {
			objs, err := Decode(strings.NewReader(nestedLists(MaxListDepth, asJSON)))
			require.NoError(t, err)
			require.Len(t, objs.Releases, 1)
			assert.Equal(t, "x", objs.Releases[0].Name)
		}
	})
	t.Run("one too deep", func(t *testing.T) {
		_, err := Decode(strings.NewReader(nestedLists(MaxListDepth+1, false)))
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		require.Len(t, de.Problems, 1)
		p := de.Problems[0]
		assert.Equal(t, strings.Repeat("items[0].", MaxListDepth)[:len("items[0].")*MaxListDepth-1], p.Path)
		assert.Contains(t, p.Error(), "document 1 (List, line 1)")
		assert.Contains(t, p.Message, "Lists nested more than")
	})
	for _, tt := range []struct {
		name   string
		depth  int
		asJSON bool
	}{
		{name: "flow style, 2000 deep", depth: 2000},
		{name: "JSON, 2000 deep", depth: 2000, asJSON: true},
		{name: "flow style, 4900 deep", depth: 4900},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := nestedLists(tt.depth, tt.asJSON)
			var err error
			n := allocated(func() { _, err = Decode(strings.NewReader(stream)) })
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.Contains(t, err.Error(), "Lists nested more than")
			// Linear: a few hundred bytes of allocation per byte of input
			// at most (the quadratic decode allocated gigabytes here).
			assert.Less(t, n, uint64(allocFactor*400*len(stream)), "allocated %d bytes for a %d-byte stream", n, len(stream))
			t.Logf("%d bytes in, %d bytes allocated", len(stream), n)
		})
	}
}

// TestDecodeAliasBudget: a document whose YAML aliases expand past
// strictyaml's budget is refused, naming the document, and the others
// still decode.
func TestDecodeAliasBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: x, namespace: apps}\nspec:\n  interval: 1m\n  chartRef: {kind: HelmChart, name: c}\n  values:\n    big: &big\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "    - v%d\n", i)
	}
	for i := range 15 {
		fmt.Fprintf(&b, "    c%d: *big\n", i)
	}
	stream := strings.TrimSuffix(nestedLists(0, false), "\n") + "\n---\n" + b.String()
	var (
		objs *Objects
		err  error
	)
	n := allocated(func() { objs, err = Decode(strings.NewReader(stream)) })
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.Len(t, de.Problems, 1)
	assert.Equal(t, 2, de.Problems[0].Document)
	assert.Contains(t, de.Problems[0].Error(), "document 2 (line 3): invalid YAML: YAML aliases expand the document past")
	require.Len(t, objs.Releases, 1, "the first document still decodes")
	assert.Less(t, n, uint64(allocFactor*100*len(stream)), "allocated %d bytes for %d", n, len(stream))
}
