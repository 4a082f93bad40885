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

	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// Default size limits. Flux caps an index at 50 MiB; Helm's loader refuses
// archives that expand beyond 100 MiB.
const (
	// DefaultMaxIndexSize caps a repository index download.
	DefaultMaxIndexSize int64 = 50 << 20
	// DefaultMaxChartSize caps a chart archive download and also the size
	// it expands to: the whole uncompressed tar stream, headers and padding
	// included, so that a flood of empty files counts too, and the streams
	// of the subchart archives (charts/*.tgz, however deep) with it. For a
	// chart directory it caps the total size of the files read and of what
	// the subchart archives among them expand to.
	DefaultMaxChartSize int64 = 10 << 20
	// MaxChartEntries caps the number of entries of a chart archive (every
	// tar header: files, directories, anything else) and of files read from
	// a chart directory, those of its subchart archives counted in. Helm's loader keeps every file in memory with its
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
		return fmt.Errorf("%w: no digest to verify the bytes against", ErrDigestMismatch)
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

// errStreamTooLarge is what capReader returns past its budget.
var errStreamTooLarge = errors.New("uncompressed stream over the limit")

// MaxSubchartDepth caps how deep subchart archives nest inside a chart
// (charts/a.tgz holding charts/b.tgz is 2 deep). Each level is a
// decompressor open at once while the levels are checked, and no chart
// we know of nests more than a few.
const MaxSubchartDepth = 16

// budget is what one chart may still expand to: the bytes of every tar
// stream (the archive's and those of the subchart archives it holds,
// however deep) and the entries of all of them, shared, so that a small
// archive of archives cannot expand past the caps one level at a time.
type budget struct {
	chart   string // the top chart's name, for LimitError
	limit   int64
	size    int64 // bytes expanded so far
	entries int   // entries (tar headers, or files and directories) so far
}

func (b *budget) tooLarge() error {
	return &LimitError{Chart: b.chart, What: LimitSize, Limit: b.limit}
}

func (b *budget) tooMany() error {
	return &LimitError{Chart: b.chart, What: LimitEntries, Limit: MaxChartEntries}
}

// capReader counts what is read through it into a budget and fails past
// the budget's limit.
type capReader struct {
	r io.Reader
	b *budget
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.b.size > c.b.limit {
		return 0, errStreamTooLarge
	}
	if rest := c.b.limit + 1 - c.b.size; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.b.size += int64(n)
	if c.b.size > c.b.limit {
		return n, errStreamTooLarge
	}
	return n, err
}

// subchartArchive reports whether rel, a path inside a chart, is a
// subchart archive Helm's loader expands: charts/<name>.tgz, in the chart
// or in one of its subchart directories (charts/a/charts/b.tgz), with a
// name that does not start with "_" or "." (Helm skips those).
func subchartArchive(rel string) bool {
	parts := strings.Split(rel, "/")
	if len(parts)%2 != 0 || !strings.HasSuffix(rel, ".tgz") {
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		if parts[i] != "charts" || parts[i+1] == "" || strings.IndexAny(parts[i+1], "_.") == 0 {
			return false
		}
	}
	return true
}

// chartYAML reports whether rel, a path inside a chart, is a YAML file
// that Helm's loader parses: Chart.yaml, values.yaml, Chart.lock,
// requirements.yaml or requirements.lock of the chart or of one of its
// subchart directories (charts/a/values.yaml).
func chartYAML(rel string) bool {
	dir, base := path.Split(rel)
	switch base {
	case "Chart.yaml", "values.yaml", "Chart.lock", "requirements.yaml", "requirements.lock":
	default:
		return false
	}
	return dir == "" || subchartArchive(strings.TrimSuffix(dir, "/")+".tgz")
}

// checkYAML refuses a chart's YAML file (chartYAML) whose aliases expand
// past strictyaml's budget, before Helm's loader expands them without one.
func checkYAML(name string, data []byte) error {
	if err := strictyaml.CheckAliases(data); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidArchive, name, err)
	}
	return nil
}

// checkArchive walks a gzipped chart tarball before Helm's loader sees it:
// every entry must stay inside the chart directory and be a file or a
// directory, and the archive with every subchart archive in it (which
// Helm's loader expands too) may have at most MaxChartEntries entries and
// expand to at most limit bytes, all counted together; the YAML files
// Helm parses (chartYAML) must be within strictyaml's alias budget. It
// returns the chart's directory (the first entry's first path element).
func checkArchive(data []byte, limit int64) (string, error) {
	b := &budget{limit: limit}
	return b.checkArchive(data, "", 0)
}

// checkArchive checks one archive against b; within names the subchart
// archive it is ("app/charts/db.tgz"), empty for the top one, and depth
// how deep it is nested.
func (b *budget) checkArchive(data []byte, within string, depth int) (string, error) {
	invalid := func(format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if within != "" {
			msg = "subchart archive " + within + ": " + msg
		}
		return fmt.Errorf("%w: %s", ErrInvalidArchive, msg)
	}
	if depth > MaxSubchartDepth {
		return "", invalid("subchart archives nested more than %d deep (source.MaxSubchartDepth)", MaxSubchartDepth)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return "", invalid("%v", err)
	}
	defer zr.Close()
	tr := tar.NewReader(&capReader{r: zr, b: b})
	top := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return top, nil
		}
		if errors.Is(err, errStreamTooLarge) {
			return top, b.tooLarge()
		}
		if err != nil {
			return top, invalid("%v", err)
		}
		name := strings.ReplaceAll(h.Name, "\\", "/")
		if top == "" {
			top, _, _ = strings.Cut(strings.TrimPrefix(name, "./"), "/")
			if b.chart == "" {
				b.chart = top
			}
		}
		if b.entries++; b.entries > MaxChartEntries {
			return top, b.tooMany()
		}
		if path.IsAbs(name) || strings.HasPrefix(name, "../") || name == ".." ||
			strings.Contains(name, "/../") || strings.HasSuffix(name, "/..") {
			return top, invalid("entry %q leaves the chart directory", h.Name)
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			return top, invalid("entry %q is a link", h.Name)
		}
		_, rel, _ := strings.Cut(strings.TrimPrefix(name, "./"), "/")
		if h.Typeflag == tar.TypeReg && subchartArchive(rel) {
			// Read it (its bytes count as this stream's) and check what
			// it expands to against the same budget.
			nested, err := io.ReadAll(tr)
			if err != nil {
				if errors.Is(err, errStreamTooLarge) {
					return top, b.tooLarge()
				}
				return top, invalid("%v", err)
			}
			if _, err := b.checkArchive(nested, path.Join(within, strings.TrimPrefix(name, "./")), depth+1); err != nil {
				return top, err
			}
			continue
		}
		if h.Typeflag == tar.TypeReg && chartYAML(rel) {
			data, err := io.ReadAll(tr)
			if err != nil {
				if errors.Is(err, errStreamTooLarge) {
					return top, b.tooLarge()
				}
				return top, invalid("%v", err)
			}
			if err := checkYAML(path.Join(within, strings.TrimPrefix(name, "./")), data); err != nil {
				return top, err
			}
			continue
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			if errors.Is(err, errStreamTooLarge) {
				return top, b.tooLarge()
			}
			return top, invalid("%v", err)
		}
	}
}

// checkFiles checks the subchart archives among files (a chart
// directory's, read already within b) against b, and the YAML files Helm
// parses against the alias budget, as checkArchive checks those of an
// archive.
func (b *budget) checkFiles(files []*loader.BufferedFile) error {
	for _, f := range files {
		if chartYAML(f.Name) {
			if err := checkYAML(f.Name, f.Data); err != nil {
				return err
			}
		}
		if subchartArchive(f.Name) {
			if _, err := b.checkArchive(f.Data, f.Name, 1); err != nil {
				return err
			}
		}
	}
	return nil
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
// Chart.yaml must name the chart ref (when not empty) and have the version
// (when not empty). A chart is named by the last element of its reference,
// as Helm names it: "another/grafana" in oci://host/my_repo is the chart
// "grafana" at oci://host/my_repo/another/grafana. Versions are compared
// as semantic versions when both parse ("v1.0" is "1.0.0"), build metadata
// included: it tells two artifacts apart; otherwise as strings.
func checkChart(c *chart.Chart, ref, version string) error {
	if c.Metadata == nil {
		return fmt.Errorf("%w: the chart has no Chart.yaml", ErrInvalidArchive)
	}
	if name := path.Base(ref); ref != "" && c.Metadata.Name != name {
		if name != ref {
			return fmt.Errorf("%w: Chart.yaml names chart %q, resolved as chart %q (the last element of %q)", ErrChartMismatch, c.Metadata.Name, name, ref)
		}
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
