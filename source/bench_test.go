package source

import (
	"io"
	"os"
	"testing"

	"helm.sh/helm/v3/pkg/repo"
)

const (
	benchChart      = "chart123"
	benchConstraint = "6.5.*"
)

// BenchmarkResolveLargeIndex resolves one chart (constraint 6.5.*) from a
// generated Bitnami-shaped index.yaml of 250 charts × 80 versions (~22 MB):
//
//   - helmfleet: what HTTPResolver does with a new index: stream the file
//     through readChartEntries (scan, cache key of the bytes as they are
//     read), keep the entries in an IndexCache, select the version;
//   - helmfleet-revision: the same with the SHA-256 revision computed too,
//     as HTTPResolver does for a repository whose IndexDigest was asked;
//   - helmfleet-bytes: os.ReadFile and FindChartVersion, the in-memory API
//     (no digest);
//   - helm-sdk: Helm's repo.LoadIndexFile + IndexFile.Get;
//   - floor: only read the file (os.ReadFile);
//   - cached: a second resolution from an IndexCache hit.
func BenchmarkResolveLargeIndex(b *testing.B) { benchResolve(b, false) }

// BenchmarkResolveLargeIndexJSON is BenchmarkResolveLargeIndex on the same
// index written as JSON.
func BenchmarkResolveLargeIndexJSON(b *testing.B) { benchResolve(b, true) }

func benchResolve(b *testing.B, asJSON bool) {
	p := writeIndex(b, b.TempDir(), genIndex(250, 80), asJSON)
	want := "6.5.1"
	check := func(b *testing.B, cv *repo.ChartVersion, err error) {
		if err != nil {
			b.Fatal(err)
		}
		if cv.Version != want {
			b.Fatalf("got %s, want %s", cv.Version, want)
		}
	}
	b.Run("helmfleet", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cv, err := resolveFile(p, NewIndexCache(1), false)
			check(b, cv, err)
		}
	})
	b.Run("helmfleet-revision", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cv, err := resolveFile(p, NewIndexCache(1), true)
			check(b, cv, err)
		}
	})
	b.Run("helmfleet-bytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			raw, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			cv, err := FindChartVersion(raw, benchChart, benchConstraint)
			check(b, cv, err)
		}
	})
	b.Run("helm-sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f, err := repo.LoadIndexFile(p)
			if err != nil {
				b.Fatal(err)
			}
			cv, err := f.Get(benchChart, benchConstraint)
			check(b, cv, err)
		}
	})
	b.Run("floor", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		raw, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		c := NewIndexCache(DefaultIndexCacheSize)
		d := c.keyOf(raw)
		cv, err := c.Find(d, raw, benchChart, benchConstraint)
		check(b, cv, err)
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			cv, err := c.Find(d, nil, benchChart, benchConstraint)
			check(b, cv, err)
		}
	})
}

// resolveFile resolves the benchmark's chart from the index file at p the
// way HTTPResolver resolves it from a response body.
func resolveFile(p string, c *IndexCache, revision bool) (*repo.ChartVersion, error) {
	open := func() (io.ReadCloser, error) { return os.Open(p) }
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat() // as HTTPResolver passes Content-Length
	if err != nil {
		return nil, err
	}
	sums := c.sums(revision)
	e, err := readChartEntries(f, fi.Size(), DefaultMaxIndexSize, indexWindow, benchChart, open, sums)
	if err != nil {
		return nil, err
	}
	return c.put(cacheKey{sums.cacheKey(), benchChart}, e).resolve(benchConstraint)
}
