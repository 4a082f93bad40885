package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The vector classifier and the portable one mark the same bytes, and
// both mark exactly the bytes they name.
func TestClassifyAgrees(t *testing.T) {
	const alphabet = `"\{}[]ab ,:{[` + "\n\n\x22\x5c\x7b\x7d\x5b\x5d\x00\xff\xa2\xdc\xfb\xfd\x02\x3b\x7f"
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 64)
	for range 20000 {
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		var got, portable, truth blockMasks
		classify(b, &got)
		classifyGeneric(b, &portable)
		for i, c := range b {
			bit := uint64(1) << i
			switch c {
			case '"':
				truth.quote |= bit
			case '\\':
				truth.backslash |= bit
			case '{', '[':
				truth.open |= bit
			case '}', ']':
				truth.close |= bit
			}
		}
		if got != truth || portable != truth {
			t.Fatalf("%q: vector %+v, portable %+v, want %+v", b, got, portable, truth)
		}
		var nl uint64
		for i, c := range b {
			if c == '\n' {
				nl |= 1 << i
			}
		}
		if newlines(b) != nl || newlinesGeneric(b) != nl {
			t.Fatalf("%q: newlines vector %b, portable %b, want %b", b, newlines(b), newlinesGeneric(b), nl)
		}
	}
}

// skip ends a value where encoding/json ends it, whatever its strings hold
// (escaped quotes, runs of backslashes, brackets) and wherever they fall
// against the 64-byte blocks and the edges of the streaming window.
func TestSkipMatchesEncodingJSON(t *testing.T) {
	vector := hasAVX2
	t.Cleanup(func() { hasAVX2 = vector })
	for _, hasAVX2 = range []bool{false, vector} {
		t.Run(fmt.Sprintf("avx2=%v", hasAVX2), testSkipMatchesEncodingJSON)
	}
}

func testSkipMatchesEncodingJSON(t *testing.T) {
	pieces := []string{`"plain"`, `"a\"b"`, `"\\"`, `"\\\\"`, `"\\\""`, `"[{"`, `"]}"`, `"x\\\\\"]"`, `"\u005d"`, `1`, `true`, `null`, `{}`, `[]`}
	rng := rand.New(rand.NewPCG(3, 4))
	var value func(depth int) string
	value = func(depth int) string {
		if depth > 3 || rng.IntN(3) == 0 {
			return pieces[rng.IntN(len(pieces))]
		}
		n := rng.IntN(5)
		parts := make([]string, n)
		if rng.IntN(2) == 0 {
			for i := range parts {
				parts[i] = value(depth + 1)
			}
			return "[" + strings.Join(parts, ",") + "]"
		}
		for i := range parts {
			parts[i] = fmt.Sprintf("%s:%s", pieces[rng.IntN(8)], value(depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	for n := range 400 {
		v := "[" + value(0) + "," + value(0) + "]"
		pad := strings.Repeat(" ", n%64)
		doc := []byte(pad + v + `,"after"`)
		require.True(t, json.Valid([]byte(v)), v)
		want := len(pad) + len(v)
		s := newJSONScan(doc)
		s.ws()
		s.skip()
		require.False(t, s.bad, v)
		assert.Equal(t, want, s.i, "in memory: %s", v)
		for _, window := range []int{1, 7, 64, 65, 200} {
			s := &jscan{r: bytes.NewReader(doc), buf: make([]byte, window), pin: -1}
			s.ws()
			s.skip()
			require.False(t, s.bad, v)
			assert.Equal(t, `,"after"`, string(s.b[s.i:])+restOf(t, s), "window %d: %s", window, v)
		}
	}
}

// restOf reads what the scanner has not read yet.
func restOf(t *testing.T, s *jscan) string {
	t.Helper()
	var rest bytes.Buffer
	_, err := rest.ReadFrom(s.r)
	require.NoError(t, err)
	return rest.String()
}

// findChartKey finds the chart's key line, or refuses a document it cannot
// read safely, wherever the lines fall against the 64-byte blocks.
func TestFindChartKeyAcrossBlocks(t *testing.T) {
	vector := hasAVX2
	t.Cleanup(func() { hasAVX2 = vector })
	rng := rand.New(rand.NewPCG(5, 6))
	for n := range 300 {
		var doc strings.Builder
		doc.WriteString("apiVersion: v1\nentries:\n")
		for c := range rng.IntN(6) {
			fmt.Fprintf(&doc, "  other%d:\n  - name: other%d%s\n    version: 1.0.%d\n", c, c, strings.Repeat("x", rng.IntN(70)), c)
		}
		want := doc.Len()
		doc.WriteString("  web:\n  - version: 1.2.3\n")
		bad := ""
		switch n % 4 {
		case 1:
			bad = "  web:\n  - version: 9.9.9\n" // a duplicate key
		case 2:
			bad = "\t- tabbed\n"
		}
		fill := strings.Repeat("y", rng.IntN(64))
		doc.WriteString("  z" + fill + ":\n  - version: 0.0.1\n" + bad)
		doc.WriteString("generated: \"2024-01-01T00:00:00Z\"\n")
		d := []byte(doc.String())
		pos := strings.Index(doc.String(), "entries:\n") + len("entries:\n")
		for _, hasAVX2 = range []bool{false, vector} {
			at, res := findChartKey(d, pos, 2, "web")
			if bad != "" {
				assert.Equal(t, scanUnsafe, res, "avx2=%v %q", hasAVX2, d)
				continue
			}
			assert.Equal(t, scanFound, res, "avx2=%v %q", hasAVX2, d)
			assert.Equal(t, want, at, "avx2=%v %q", hasAVX2, d)
		}
	}
}
