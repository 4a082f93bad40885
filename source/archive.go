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

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Default size limits. Flux caps an index at 50 MiB; Helm's loader refuses
// archives that expand beyond 100 MiB.
const (
	// DefaultMaxIndexSize caps a repository index download.
	DefaultMaxIndexSize int64 = 50 << 20
	// DefaultMaxChartSize caps a chart archive download and also the total
	// size of the files it expands to.
	DefaultMaxChartSize int64 = 10 << 20
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

// checkArchive walks a gzipped chart tarball before Helm's loader sees it:
// every entry must stay inside the chart directory and the expanded size
// must stay under limit.
func checkArchive(data []byte, limit int64) error {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArchive, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidArchive, err)
		}
		name := strings.ReplaceAll(h.Name, "\\", "/")
		if path.IsAbs(name) || strings.HasPrefix(name, "../") || name == ".." ||
			strings.Contains(name, "/../") || strings.HasSuffix(name, "/..") {
			return fmt.Errorf("%w: entry %q leaves the chart directory", ErrInvalidArchive, h.Name)
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			return fmt.Errorf("%w: entry %q is a link", ErrInvalidArchive, h.Name)
		}
		n, err := io.Copy(io.Discard, io.LimitReader(tr, limit-total+1))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrInvalidArchive, err)
		}
		total += n
		if total > limit {
			return fmt.Errorf("%w: the archive expands to more than %d bytes", ErrTooLarge, limit)
		}
	}
}

// loadArchive checks and loads a chart archive.
func loadArchive(data []byte, limit int64) (*loadedArchive, error) {
	if err := checkArchive(data, limit); err != nil {
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
