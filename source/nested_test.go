package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tgz packs files (name to content, in the order of names) into a gzipped
// tar stream, compressed as hard as gzip goes.
func tgz(t testing.TB, names []string, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	require.NoError(t, err)
	tw := tar.NewWriter(zw)
	for _, n := range names {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}))
		_, err := tw.Write(files[n])
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// subchartBomb returns a chart archive "app" holding width subchart
// archives, each holding one file of size zero bytes (which compresses
// a thousandfold) or, when entries > 0, that many empty files.
func subchartBomb(t testing.TB, width int, size int64, entries int) []byte {
	t.Helper()
	sub := func(name string) []byte {
		names := []string{name + "/Chart.yaml"}
		files := map[string][]byte{name + "/Chart.yaml": fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: 1.0.0\n", name)}
		if entries > 0 {
			for i := range entries {
				n := fmt.Sprintf("%s/files/f%d", name, i)
				names = append(names, n)
				files[n] = nil
			}
		} else {
			names = append(names, name+"/files/zeros")
			files[name+"/files/zeros"] = make([]byte, size)
		}
		return tgz(t, names, files)
	}
	names := []string{"app/Chart.yaml"}
	files := map[string][]byte{"app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n")}
	for i := range width {
		n := fmt.Sprintf("app/charts/s%d.tgz", i)
		names = append(names, n)
		files[n] = sub(fmt.Sprintf("s%d", i))
	}
	return tgz(t, names, files)
}

// nestedBomb returns a chart archive with subchart archives depth deep
// (app/charts/s1.tgz holding s1/charts/s2.tgz ...), the innermost holding
// size zero bytes.
func nestedBomb(t testing.TB, depth int, size int64) []byte {
	t.Helper()
	var inner []byte
	for d := depth; d >= 0; d-- {
		name := fmt.Sprintf("s%d", d)
		if d == 0 {
			name = "app"
		}
		names := []string{name + "/Chart.yaml"}
		files := map[string][]byte{name + "/Chart.yaml": fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: 1.0.0\n", name)}
		if inner == nil {
			names = append(names, name+"/files/zeros")
			files[name+"/files/zeros"] = make([]byte, size)
		} else {
			n := fmt.Sprintf("%s/charts/s%d.tgz", name, d+1)
			names = append(names, n)
			files[n] = inner
		}
		inner = tgz(t, names, files)
	}
	return inner
}

// allocatedBytes returns the bytes f allocates.
func allocatedBytes(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestSubchartArchivesShareTheCaps: the subchart archives in a chart
// (charts/*.tgz, which Helm's loader expands on its own) count against
// the chart's caps on bytes and entries, for an archive and for a chart
// directory, and a chart over them is refused before Helm's loader
// expands anything: small allocation for a small input.
func TestSubchartArchivesShareTheCaps(t *testing.T) {
	const limit = 1 << 20 // every archive below expands to more than this
	tests := []struct {
		name  string
		data  []byte
		limit int64
		want  LimitError
	}{
		// 8 subcharts of 1 MiB of zeros each: some 10 KiB of archive.
		{name: "wide, bytes", data: subchartBomb(t, 8, 1<<20, 0), limit: limit, want: LimitError{Chart: "app", What: LimitSize, Limit: limit}},
		{name: "deep, bytes", data: nestedBomb(t, 6, 4<<20), limit: limit, want: LimitError{Chart: "app", What: LimitSize, Limit: limit}},
		// 3 subcharts of 4,000 entries each: 12,000 in all, 6 MiB of
		// headers.
		{name: "wide, entries", data: subchartBomb(t, 3, 0, 4000), limit: DefaultMaxChartSize, want: LimitError{Chart: "app", What: LimitEntries, Limit: MaxChartEntries}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Less(t, len(tt.data), 64<<10, "the hostile input is small")
			var err error
			n := allocatedBytes(func() { _, err = loadArchive(tt.data, tt.limit) })
			require.ErrorIs(t, err, ErrTooLarge)
			var le *LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.want, *le)
			// Helm's loader would hold every expanded byte: the check holds
			// the compressed subcharts and its decompressors only.
			assert.Less(t, n, uint64(allocFactor*8<<20), "allocated %d bytes", n)
			t.Logf("%d-byte archive refused (%v) after %d bytes of allocation", len(tt.data), err, n)

			// The same chart as a directory: the archive's files, with the
			// subchart archives as they are.
			dir := filepath.Join(t.TempDir(), "app")
			unpackTo(t, tt.data, filepath.Dir(dir))
			n = allocatedBytes(func() { _, err = NewLocalResolver(tt.limit).Resolve(context.Background(), Ref{Path: dir}) })
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.want, *le)
			assert.Less(t, n, uint64(allocFactor*8<<20), "allocated %d bytes", n)
		})
	}
	t.Run("too deep", func(t *testing.T) {
		_, err := loadArchive(nestedBomb(t, MaxSubchartDepth+1, 10), limit)
		require.ErrorIs(t, err, ErrInvalidArchive)
		assert.Contains(t, err.Error(), "nested more than 16 deep")
		assert.Contains(t, err.Error(), "subchart archive app/charts/s1.tgz/s1/charts/s2.tgz/")
	})
	t.Run("within the caps", func(t *testing.T) {
		la, err := loadArchive(nestedBomb(t, 3, 1000), limit)
		require.NoError(t, err)
		require.Len(t, la.chart.Dependencies(), 1)
		la, err = loadArchive(subchartBomb(t, 3, 1000, 0), limit)
		require.NoError(t, err)
		assert.Len(t, la.chart.Dependencies(), 3)
	})
	t.Run("a broken subchart archive is named", func(t *testing.T) {
		data := tgz(t, []string{"app/Chart.yaml", "app/charts/bad.tgz"}, map[string][]byte{
			"app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"), "app/charts/bad.tgz": []byte("not gzip"),
		})
		_, err := loadArchive(data, limit)
		require.ErrorIs(t, err, ErrInvalidArchive)
		assert.Contains(t, err.Error(), "subchart archive app/charts/bad.tgz")
	})
}

// unpackTo writes the regular files of a gzipped tar stream under dir.
func unpackTo(t *testing.T, data []byte, dir string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		var buf bytes.Buffer
		_, err = buf.ReadFrom(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
	}
}

func TestSubchartArchive(t *testing.T) {
	for rel, want := range map[string]bool{
		"charts/a.tgz":                   true,
		"charts/a/charts/b.tgz":          true,
		"charts/_a.tgz":                  false,
		"charts/.a.tgz":                  false,
		"charts/a/b.tgz":                 false,
		"files/charts/a.tgz":             false,
		"charts/a.tar.gz":                false,
		"charts/a/charts/b/c.tgz":        false,
		"charts/a/templates/b.tgz":       false,
		"charts//charts/b.tgz":           false,
		"charts/a/charts/b/charts/c.tgz": true,
	} {
		assert.Equal(t, want, subchartArchive(rel), rel)
	}
}

// aliasBomb is a YAML mapping with one anchored list of n scalars and
// copies aliases of it: some (copies+1)·n nodes once expanded, a ratio
// of aliased nodes that the YAML parser's own guard lets through.
func aliasBomb(n, copies int) string {
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

// TestYAMLAliasBudget: the YAML an index or a chart holds may expand
// through aliases only within strictyaml's budget; past it, the index or
// the chart is refused, naming the file, before anything expands it.
func TestYAMLAliasBudget(t *testing.T) {
	bomb := aliasBomb(20000, 15) // 150 KiB written, 320,000 nodes expanded
	t.Run("index, full parse", func(t *testing.T) {
		// Flow style sends the index to the full parse.
		index := "apiVersion: v1\n" + bomb + "entries: {nginx: [{apiVersion: v2, name: nginx, version: 1.0.0, urls: [a.tgz]}]}\n"
		var err error
		n := allocatedBytes(func() { _, err = FindChartVersion([]byte(index), "nginx", "*") })
		require.ErrorIs(t, err, ErrInvalidIndex)
		assert.Contains(t, err.Error(), "YAML aliases expand the document")
		assert.Less(t, n, uint64(allocFactor*100*len(index)), "allocated %d bytes for %d", n, len(index))
		t.Logf("%d-byte index refused after %d bytes of allocation", len(index), n)
	})
	chartYAMLs := map[string][]byte{"app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n")}
	tests := []struct {
		name, file string
		data       []byte
	}{
		{name: "values.yaml", file: "app/values.yaml", data: tgz(t, []string{"app/Chart.yaml", "app/values.yaml"}, map[string][]byte{
			"app/Chart.yaml": chartYAMLs["app/Chart.yaml"], "app/values.yaml": []byte(bomb)})},
		{name: "Chart.yaml", file: "app/Chart.yaml", data: tgz(t, []string{"app/Chart.yaml"}, map[string][]byte{
			"app/Chart.yaml": []byte("apiVersion: v2\nname: app\nversion: 1.0.0\nannotations:\n" + strings.ReplaceAll("  "+bomb, "\n", "\n  ") + "\n")})},
		{name: "a subchart's values.yaml", file: "app/charts/sub.tgz/sub/values.yaml", data: tgz(t, []string{"app/Chart.yaml", "app/charts/sub.tgz"}, map[string][]byte{
			"app/Chart.yaml": chartYAMLs["app/Chart.yaml"],
			"app/charts/sub.tgz": tgz(t, []string{"sub/Chart.yaml", "sub/values.yaml"}, map[string][]byte{
				"sub/Chart.yaml": []byte("apiVersion: v2\nname: sub\nversion: 1.0.0\n"), "sub/values.yaml": []byte(bomb)}),
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			n := allocatedBytes(func() { _, err = loadArchive(tt.data, DefaultMaxChartSize) })
			require.ErrorIs(t, err, ErrInvalidArchive)
			assert.Contains(t, err.Error(), tt.file+": YAML aliases expand the document")
			assert.Less(t, n, uint64(allocFactor*200*len(bomb)), "allocated %d bytes", n)

			dir := filepath.Join(t.TempDir(), "app")
			unpackTo(t, tt.data, filepath.Dir(dir))
			_, err = NewLocalResolver(0).Resolve(context.Background(), Ref{Path: dir})
			require.ErrorIs(t, err, ErrInvalidArchive)
			assert.Contains(t, err.Error(), strings.TrimPrefix(tt.file, "app/")+": YAML aliases expand the document")
		})
	}
}
