package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// streamDocs are JSON indexes whose interesting bytes (keys, escapes,
// brackets inside strings, long strings, nested values) land on every
// window boundary once the window sizes below are tried.
func streamDocs(t testing.TB) map[string][]byte {
	long := strings.Repeat("x", 70_000)
	return map[string][]byte{
		"helm":    marshalIndex(t, genIndex(3, 6), true),
		"escaped": readIndexTB(t, "escaped.json"),
		"nested": []byte(`{"apiVersion":"v1","entries":{"a":[{"x":{"y":[[],{},"]}\"[{"],"z":{"w":null}},"version":"0.1.0"}],` +
			`"nginx":[{"name":"nginx","version":"1.0.0","digest":"d1","urls":["n-1.tgz"],"annotations":{"k":"}]\\\\"}},` +
			`{"name":"nginx","version":"1.1.0","urls":["n-2.tgz"],"keywords":["a\"b","\\\\","\u005c"]}],` +
			`"zz":[{"version":"9.9.9","n":[1,-2.5e3,true,false,null]}]},"generated":"2024-01-01T00:00:00Z"}`),
		"backslash runs": []byte(`{"apiVersion":"v1","entries":{"o\\\\":[{"d":"\\\\\\\"\\\\"}],` +
			`"nginx":[{"name":"nginx","version":"2.0.0","description":"ends in a backslash \\\\","urls":["x.tgz"]}]}}`),
		"long strings": []byte(`{"apiVersion":"v1","entries":{"other":[{"description":"` + long + `","version":"1.0.0"}],` +
			`"nginx":[{"name":"nginx","version":"3.0.0","description":"` + long + `\"` + long + `","urls":["y.tgz"]}]}}`),
		"long key": []byte(`{"apiVersion":"v1","entries":{"` + long + `":[],"nginx":[{"name":"nginx","version":"4.0.0"}],"` +
			long + `x":{"version":"0"}}}`),
		"whitespace": []byte("\n \t{ \"apiVersion\" :\n\"v1\" , \"entries\" : { \"nginx\" :\r\n [ { \"name\" : \"nginx\" , \"version\" : \"5.0.0\" } ] } }\n\n"),
		"missing":    []byte(`{"apiVersion":"v1","entries":{"other":[{"version":"1.0.0"}]}}`),
		"chart null": []byte(`{"apiVersion":"v1","entries":{"nginx":null}}`),
		"no api":     []byte(`{"entries":{"nginx":[{"version":"1.0.0"}]}}`),
		"trailing":   readIndexTB(t, "trailing-comma.json"),
		"garbage":    []byte(`{"apiVersion":"v1","entries":{"nginx":[{"version":"1.0.0"}]}} x`),
		"truncated":  []byte(`{"apiVersion":"v1","entries":{"nginx":[{"version":"1.0.0"}]}`),
		"yaml":       []byte("\n\n  \napiVersion: v1\nentries:\n  nginx:\n  - name: nginx\n    version: 6.0.0\n    urls: [z.tgz]\n"),
	}
}

func readIndexTB(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "index", name))
	require.NoError(t, err)
	return b
}

// reopener returns a reopen function serving doc and counting its calls.
func reopener(doc []byte, calls *int) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		*calls++
		return io.NopCloser(bytes.NewReader(doc)), nil
	}
}

// streamAgrees checks that streaming doc through a window of the given
// size gives what the in-memory scan gives: the same error, the same
// entries and the digest of doc.
func streamAgrees(t *testing.T, doc []byte, r io.Reader, window int, chartName string) {
	t.Helper()
	want, wantErr := parseChartEntries(doc, chartName)
	var reopened int
	cache := NewIndexCache(1)
	sums := cache.sums(true)
	got, err := readChartEntries(r, -1, DefaultMaxIndexSize, window, chartName, reopener(doc, &reopened), sums)
	if wantErr != nil {
		require.Error(t, err)
		assert.Equal(t, wantErr.Error(), err.Error())
		return
	}
	require.NoError(t, err)
	assert.Equal(t, sha256Digest(doc), sums.revision())
	assert.Equal(t, cache.keyOf(doc), sums.cacheKey())
	assert.Equal(t, want.format, got.format, "resolution path")
	assert.Equal(t, want.cands, got.cands)
	assert.Equal(t, string(want.block), string(got.block))
	assert.Equal(t, want.items, got.items)
	if want.format == formatDecoded && firstNonSpace(doc) == '{' {
		assert.Equal(t, 1, reopened, "the full parse read the document again")
	} else {
		assert.Zero(t, reopened)
	}
	for _, c := range []string{"*", ">=0.0.0-0"} {
		w, werr := want.resolve(c)
		g, gerr := got.resolve(c)
		assert.Equal(t, werr, gerr)
		assert.Equal(t, w, g)
	}
}

// TestReadChartEntriesWindows streams each document through windows of
// 1 to 40 bytes and larger, read whole or a byte at a time, so that every
// key, string, escape and bracket is split across refills somewhere.
func TestReadChartEntriesWindows(t *testing.T) {
	windows := []int{64, 1000, 4096, indexWindow}
	for w := 1; w <= 40; w++ {
		windows = append(windows, w)
	}
	for name, doc := range streamDocs(t) {
		t.Run(name, func(t *testing.T) {
			for _, w := range windows {
				streamAgrees(t, doc, bytes.NewReader(doc), w, "nginx")
			}
			streamAgrees(t, doc, iotest.OneByteReader(bytes.NewReader(doc)), 7, "nginx")
			streamAgrees(t, doc, iotest.HalfReader(bytes.NewReader(doc)), 3, "nginx")
			streamAgrees(t, doc, iotest.DataErrReader(bytes.NewReader(doc)), 5, "nginx")
		})
	}
}

func TestReadChartEntriesErrors(t *testing.T) {
	doc := marshalIndex(t, genIndex(3, 6), true)
	noReopen := func() (io.ReadCloser, error) { return nil, errors.New("not expected") }
	t.Run("over the limit", func(t *testing.T) {
		_, err := readChartEntries(bytes.NewReader(doc), -1, int64(len(doc)-1), 64, "nginx", noReopen, testSums(false))
		require.ErrorIs(t, err, ErrTooLarge)
		_, err = readChartEntries(bytes.NewReader(doc), -1, int64(len(doc)), 64, "nginx", noReopen, testSums(false))
		require.NoError(t, err, "exactly at the limit")
		yamlDoc := marshalIndex(t, genIndex(3, 6), false)
		_, err = readChartEntries(bytes.NewReader(yamlDoc), int64(len(yamlDoc)), int64(len(yamlDoc)-1), 64, "nginx", noReopen, testSums(false))
		require.ErrorIs(t, err, ErrTooLarge)
	})
	t.Run("read error mid-stream", func(t *testing.T) {
		boom := errors.New("connection reset")
		r := io.MultiReader(bytes.NewReader(doc[:len(doc)/2]), iotest.ErrReader(boom))
		_, err := readChartEntries(r, -1, DefaultMaxIndexSize, 64, "nginx", noReopen, testSums(false))
		require.ErrorIs(t, err, boom)
	})
	t.Run("reopen fails", func(t *testing.T) {
		boom := errors.New("gone")
		_, err := readChartEntries(strings.NewReader(`{"apiVersion":"v1",}`), -1, DefaultMaxIndexSize, 64, "nginx",
			func() (io.ReadCloser, error) { return nil, boom }, testSums(false))
		require.ErrorIs(t, err, boom)
	})
	t.Run("empty", func(t *testing.T) {
		_, err := readChartEntries(strings.NewReader(" \n\t "), -1, DefaultMaxIndexSize, 2, "nginx", noReopen, testSums(false))
		require.ErrorIs(t, err, ErrInvalidIndex)
	})
	t.Run("empty chart name", func(t *testing.T) {
		_, err := readChartEntries(bytes.NewReader(doc), -1, DefaultMaxIndexSize, 64, "", noReopen, testSums(false))
		require.ErrorIs(t, err, ErrChartNotFound)
	})
	t.Run("the window holds only the chart's array", func(t *testing.T) {
		big := marshalIndex(t, genIndex(40, 20), true)
		s := &jscan{r: bytes.NewReader(big), buf: make([]byte, 4096), pin: -1}
		e, res := scanJSON(s, "chart007")
		require.Equal(t, scanFound, res)
		assert.Less(t, len(s.buf), 4*len(e.block)+4096, "window %d bytes for a %d-byte array in a %d-byte index", len(s.buf), len(e.block), len(big))
	})
}

// TestQuoteOrBackslash compares the eight-bytes-at-a-time search with a
// byte loop on random text rich in the bytes it looks for.
func TestQuoteOrBackslash(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\\x00\x80\xff\x22\x5c\x21\x23\x5b\x5d")
	for n := 0; n < 2000; n++ {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = byte(rng.IntN(256))
			}
		}
		from := 0
		if len(b) > 0 {
			from = rng.IntN(len(b) + 1)
		}
		want := len(b)
		for i := from; i < len(b); i++ {
			if b[i] == '"' || b[i] == '\\' {
				want = i
				break
			}
		}
		require.Equal(t, want, quoteOrBackslash(b, from), "%q from %d", b, from)
	}
}

// FuzzReadChartEntries streams fuzzed documents through fuzzed windows and
// read sizes: the streaming scan must agree with the in-memory one (which
// FuzzFindChartVersion holds to Helm's full parse).
func FuzzReadChartEntries(f *testing.F) {
	for _, doc := range streamDocs(f) {
		if len(doc) < 4096 {
			f.Add(doc, "nginx", uint8(3), false)
			f.Add(doc, "nginx", uint8(1), true)
		}
	}
	f.Fuzz(func(t *testing.T, doc []byte, chartName string, window uint8, oneByte bool) {
		if chartName == "" {
			return
		}
		var r io.Reader = bytes.NewReader(doc)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		streamAgrees(t, doc, r, int(window%64)+1, chartName)
	})
}

// TestHTTPResolverJSONStream resolves from a JSON index streamed off a real
// httptest repository: a chart the cache holds is revalidated (304), one it
// does not hold costs an unconditional download, and an index the scanner
// cannot read safely is downloaded again for the full parse.
func TestHTTPResolverJSONStream(t *testing.T) {
	tr := newTestRepo(t)
	tr.add("app", "1.0.0", packageChart(t, "app", "1.0.0", nil), "")
	tr.add("other", "2.0.0", packageChart(t, "other", "2.0.0", nil), "")
	var f repo.IndexFile
	require.NoError(t, yaml.Unmarshal(tr.index, &f))
	asJSON, err := json.Marshal(&f)
	require.NoError(t, err)
	tr.setIndex(asJSON)
	r := NewHTTPResolver(tr.srv.Client(), HTTPOptions{})
	ctx := context.Background()
	resolve := func(chartName string) *Chart {
		t.Helper()
		c, err := r.Resolve(ctx, Ref{Chart: chartName, HelmRepository: helmRepo(tr.srv.URL)})
		require.NoError(t, err)
		return c
	}

	assert.Equal(t, "1.0.0", resolve("app").Version)
	assert.Equal(t, 1, tr.count("/index.yaml"))
	digest, err := r.IndexDigest(ctx, tr.srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "sha256:"+hexDigest(asJSON), digest)
	assert.Equal(t, 0, tr.notMod, "Resolve did not compute the revision: the first IndexDigest downloads")
	again, err := r.IndexDigest(ctx, tr.srv.URL)
	require.NoError(t, err)
	assert.Equal(t, digest, again)
	assert.Equal(t, 1, tr.notMod, "then IndexDigest revalidates")

	assert.Equal(t, "1.0.0", resolve("app").Version)
	assert.Equal(t, 2, tr.notMod, "the cached chart was revalidated")
	assert.Equal(t, "2.0.0", resolve("other").Version)
	assert.Equal(t, 2, tr.notMod, "a chart not cached is downloaded unconditionally")
	again, err = r.IndexDigest(ctx, tr.srv.URL)
	require.NoError(t, err)
	assert.Equal(t, digest, again)
	assert.Equal(t, 3, tr.notMod, "Resolve now hashes this repository's index: IndexDigest revalidates")
	assert.Equal(t, 6, tr.count("/index.yaml"))

	// Not valid JSON (a trailing comma), valid YAML: Helm reads it, so do we,
	// from a second download.
	tr.setIndex(append(append([]byte(nil), asJSON[:len(asJSON)-1]...), ",}"...))
	r = NewHTTPResolver(tr.srv.Client(), HTTPOptions{})
	assert.Equal(t, "2.0.0", resolve("other").Version)
	assert.Equal(t, 8, tr.count("/index.yaml"))
}

// keyOf returns the key of index in c.
func (c *IndexCache) keyOf(index []byte) string {
	h := c.sums(false)
	h.Write(index)
	return h.cacheKey()
}

// testSums returns fresh sums of a new cache.
func testSums(revision bool) *indexSums { return NewIndexCache(1).sums(revision) }
