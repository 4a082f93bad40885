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
	const alphabet = `"\{}[]ab ,:{[` + "\x22\x5c\x7b\x7d\x5b\x5d\x00\xff\xa2\xdc\xfb\xfd\x02\x3b\x7f"
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
