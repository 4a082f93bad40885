package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Default size limits. Flux caps an index at 50 MiB; Helm's loader refuses
// archives that expand beyond 100 MiB.
const (
	// DefaultMaxIndexSize caps a repository index download.
	DefaultMaxIndexSize int64 = 50 << 20
	// DefaultMaxChartSize caps a chart archive download and also the size
	// it expands to: the whole uncompressed tar stream, headers and padding
	// included, so that a flood of empty files counts too. For a chart
	// directory it caps the total size of the files read.
	DefaultMaxChartSize int64 = 10 << 20
	// MaxChartEntries caps the number of entries of a chart archive (every
	// tar header: files, directories, anything else) and of files read from
	// a chart directory. Helm's loader keeps every file in memory with its
	// own bookkeeping and templates every one, so an archive of 200,000
	// tiny entries costs far more than its bytes suggest. 10,000 is an
	// order of magnitude above the charts we know of, umbrella charts with
	// their subcharts and dashboards included, and keeps the loader cheap.
	MaxChartEntries = 10_000
)

// readCapped reads r to the end, failing with ErrTooLarge past limit bytes.
func readCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge(limit)
	}
	return data, nil
}

// sha256Digest returns "sha256:<hex>" of data.
func sha256Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// verifyDigest compares data with an expected digest, given as bare hex
// (Helm index entries) or "sha256:<hex>".
func verifyDigest(data []byte, want string) error {
	if want == "" {
		return fmt.Errorf("%w: the index entry has no digest to verify the archive against", ErrDigestMismatch)
	}
	got := sha256Digest(data)
	w := strings.ToLower(want)
	if !strings.HasPrefix(w, "sha256:") {
		w = "sha256:" + w
	}
	if got != w {
		return fmt.Errorf("%w: want %s, got %s", ErrDigestMismatch, w, got)
	}
	return nil
}

// errStreamTooLarge is what capReader returns past its limit.
var errStreamTooLarge = errors.New("uncompressed stream over the limit")

// capReader counts what is read through it and fails past limit bytes.
type capReader struct {
	r     io.Reader
	n     int64
	limit int64
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n > c.limit {
		return 0, errStreamTooLarge
	}
	if rest := c.limit + 1 - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, errStreamTooLarge
	}
	return n, err
}

// checkArchive walks a gzipped chart tarball before Helm's loader sees it:
// every entry must stay inside the chart directory and be a file or a
// directory, there may be at most MaxChartEntries of them, and the
// uncompressed stream must stay within limit bytes. It returns the chart's
// directory (the first entry's first path element).
func checkArchive(data []byte, limit int64) (string, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidArchive, err)
	}
	defer zr.Close()
	cr := &capReader{r: zr, limit: limit}
	tr := tar.NewReader(cr)
	top := ""
	tooLarge := func() error { return &LimitError{Chart: top, What: LimitSize, Limit: limit} }
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return top, nil
		}
		if errors.Is(err, errStreamTooLarge) {
			return top, tooLarge()
		}
		if err != nil {
			return top, fmt.Errorf("%w: %v", ErrInvalidArchive, err)
		}
		name := strings.ReplaceAll(h.Name, "\\", "/")
		if top == "" {
			top, _, _ = strings.Cut(strings.TrimPrefix(name, "./"), "/")
		}
		if entries >= MaxChartEntries {
			return top, &LimitError{Chart: top, What: LimitEntries, Limit: MaxChartEntries}
		}
		if path.IsAbs(name) || strings.HasPrefix(name, "../") || name == ".." ||
			strings.Contains(name, "/../") || strings.HasSuffix(name, "/..") {
			return top, fmt.Errorf("%w: entry %q leaves the chart directory", ErrInvalidArchive, h.Name)
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			return top, fmt.Errorf("%w: entry %q is a link", ErrInvalidArchive, h.Name)
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			if errors.Is(err, errStreamTooLarge) {
				return top, tooLarge()
			}
			return top, fmt.Errorf("%w: %v", ErrInvalidArchive, err)
		}
	}
}

// loadArchive checks and loads a chart archive.
func loadArchive(data []byte, limit int64) (*loadedArchive, error) {
	if _, err := checkArchive(data, limit); err != nil {
		return nil, err
	}
	c, err := loader.LoadArchive(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidArchive, err)
	}
	return &loadedArchive{chart: c, digest: sha256Digest(data)}, nil
}

type loadedArchive struct {
	chart  *chart.Chart
	digest string
}

// checkChart verifies that a loaded chart is what it was resolved as: its
// Chart.yaml must name the chart name (when not empty) and have the
// version (when not empty). Versions are compared as semantic versions
// when both parse ("v1.0" is "1.0.0"), build metadata included: it tells
// two artifacts apart; otherwise as strings.
func checkChart(c *chart.Chart, name, version string) error {
	if c.Metadata == nil {
		return fmt.Errorf("%w: the chart has no Chart.yaml", ErrInvalidArchive)
	}
	if name != "" && c.Metadata.Name != name {
		return fmt.Errorf("%w: Chart.yaml names chart %q, resolved as chart %q", ErrChartMismatch, c.Metadata.Name, name)
	}
	if version != "" && !sameVersion(c.Metadata.Version, version) {
		return fmt.Errorf("%w: Chart.yaml has version %q, resolved as version %q", ErrChartMismatch, c.Metadata.Version, version)
	}
	return nil
}

// sameVersion reports whether a and b name the same version.
func sameVersion(a, b string) bool {
	if a == b {
		return true
	}
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	return errA == nil && errB == nil && va.Equal(vb) && va.Metadata() == vb.Metadata()
}
