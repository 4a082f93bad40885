package source

import (
	"context"
	"fmt"
	"os"

	"helm.sh/helm/v3/pkg/chart"
)

// LocalResolver loads charts from the local file system: a chart
// directory or a .tgz archive at Ref.Path. An archive gets the same size,
// entry and path checks as a downloaded one. A directory is read with
// Helm's rules (.helmignore included) but within the same caps, and a
// symbolic link in it is followed only when its target stays inside the
// directory: a link that leaves it (templates/x.yaml -> /etc/hostname), a
// cycle of links, and devices, FIFOs and sockets are errors naming the
// file (ErrInvalidArchive), as Flux's loader refuses them. Links inside
// the directory stay allowed.
type LocalResolver struct {
	maxChart int64
}

// NewLocalResolver returns a LocalResolver; maxChartSize <= 0 means
// DefaultMaxChartSize.
func NewLocalResolver(maxChartSize int64) *LocalResolver {
	if maxChartSize <= 0 {
		maxChartSize = DefaultMaxChartSize
	}
	return &LocalResolver{maxChart: maxChartSize}
}

// Resolve implements Resolver for a Ref with a Path. If Ref.Version is set
// (and not "*"), the chart's own version must satisfy it.
func (r *LocalResolver) Resolve(ctx context.Context, ref Ref) (*Chart, error) {
	ref = ref.normalize()
	if err := refuseUnverifiable(ref, ref.Path); err != nil {
		return nil, err
	}
	fail := func(op string, err error) error {
		return &Error{Op: op, Source: ref.Path, Chart: ref.Chart, Constraint: ref.Version, Err: err}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fi, err := os.Stat(ref.Path)
	if err != nil {
		return nil, fail("load chart", fmt.Errorf("%w: %v", ErrChartNotFound, err))
	}
	var (
		c      *chart.Chart
		digest string
	)
	if fi.IsDir() {
		c, err = loadDir(ref.Path, r.maxChart)
		if err != nil {
			return nil, fail("load chart", err)
		}
	} else {
		if fi.Size() > r.maxChart {
			return nil, fail("load chart", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, fi.Size(), r.maxChart))
		}
		f, err := os.Open(ref.Path)
		if err != nil {
			return nil, fail("load chart", fmt.Errorf("%w: %v", ErrChartNotFound, err))
		}
		data, err := readCapped(f, r.maxChart)
		f.Close()
		if err != nil {
			return nil, fail("load chart", err)
		}
		la, err := loadArchive(data, r.maxChart)
		if err != nil {
			return nil, fail("load chart", err)
		}
		c, digest = la.chart, la.digest
	}
	if ref.Chart != "" && c.Name() != ref.Chart {
		return nil, fail("load chart", fmt.Errorf("%w: the chart at the path is %q", ErrChartNotFound, c.Name()))
	}
	if ref.Version != "" && ref.Version != "*" {
		if _, err := SelectVersion(ref.Version, []Candidate{{Version: c.Metadata.Version}}); err != nil {
			return nil, fail("select version", fmt.Errorf("%w (the chart's version is %s)", err, c.Metadata.Version))
		}
	}
	return finish(&Chart{
		Chart:      c,
		Version:    c.Metadata.Version,
		Digest:     digest,
		Source:     ref.Path,
		SourceKind: KindLocal,
	}, ref, func(err error) error { return fail("read values files", err) })
}
