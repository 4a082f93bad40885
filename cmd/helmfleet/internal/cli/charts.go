package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/helmfleet/helmfleet/source"
)

// ErrChartNotCached is returned for a chart the chart cache does not hold.
var ErrChartNotCached = errors.New("chart not in the chart cache")

// CacheResolver resolves charts offline from a directory of chart
// archives named as `helm pull` names them, NAME-VERSION.tgz: the newest
// version of the chart's name that satisfies the release's constraint.
// A Ref with a Path (a chart in a GitRepository) is read from that path.
// Each archive is loaded once and shared by every member and release
// that resolves it.
type CacheResolver struct {
	dir   string
	local *source.LocalResolver

	mu     sync.Mutex
	loaded map[string]*source.Chart
}

// NewCacheResolver returns a resolver over dir.
func NewCacheResolver(dir string) *CacheResolver {
	return &CacheResolver{dir: dir, local: source.NewLocalResolver(0), loaded: map[string]*source.Chart{}}
}

// Resolve implements source.Resolver.
func (r *CacheResolver) Resolve(ctx context.Context, ref source.Ref) (*source.Chart, error) {
	if ref.Path != "" {
		return r.local.Resolve(ctx, ref)
	}
	name, constraint, from := ref.Chart, ref.Version, ""
	switch {
	case ref.OCIRepository != nil:
		from = ref.OCIRepository.Spec.URL
		name = path.Base(from)
		constraint = ""
		if rr := ref.OCIRepository.Spec.Reference; rr != nil {
			constraint = rr.Tag
			if rr.SemVer != "" {
				constraint = rr.SemVer
			}
		}
	case ref.HelmRepository != nil:
		from = ref.HelmRepository.Spec.URL
	}
	if ref.HelmChart != nil {
		if name == "" {
			name = ref.HelmChart.Spec.Chart
		}
		if constraint == "" {
			constraint = ref.HelmChart.Spec.Version
		}
	}
	file, err := r.pick(name, constraint)
	if err != nil {
		return nil, fmt.Errorf("chart %s %q from %s: %w", name, constraint, from, err)
	}
	key := fmt.Sprint(file, ref.ValuesFiles, ref.IgnoreMissingValuesFiles)
	r.mu.Lock()
	c, ok := r.loaded[key]
	r.mu.Unlock()
	if !ok {
		c, err = r.local.Resolve(ctx, source.Ref{Path: file, ValuesFiles: ref.ValuesFiles, IgnoreMissingValuesFiles: ref.IgnoreMissingValuesFiles})
		if err != nil {
			return nil, err
		}
		r.mu.Lock()
		r.loaded[key] = c
		r.mu.Unlock()
	}
	out := *c
	out.Source, out.SourceKind = from, source.KindLocal
	if ref.HelmRepository != nil {
		out.SourceKind = "HelmRepository"
	} else if ref.OCIRepository != nil {
		out.SourceKind = "OCIRepository"
	}
	return &out, nil
}

// pick returns the archive of the version of name constraint selects,
// as Flux's source-controller selects among an index's versions
// (source.SelectVersion).
func (r *CacheResolver) pick(name, constraint string) (string, error) {
	if r.dir == "" {
		return "", fmt.Errorf("%w: no --chart-cache given", ErrChartNotCached)
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		return "", fmt.Errorf("chart cache: %w", err)
	}
	var cands []source.Candidate
	var files []string
	for _, e := range entries {
		v, ok := strings.CutPrefix(e.Name(), name+"-")
		if !ok || e.IsDir() {
			continue
		}
		if v, ok = strings.CutSuffix(v, ".tgz"); ok {
			cands = append(cands, source.Candidate{Version: v})
			files = append(files, filepath.Join(r.dir, e.Name()))
		}
	}
	i, err := source.SelectVersion(constraint, cands)
	if err != nil {
		return "", fmt.Errorf("%w: in %s: %w", ErrChartNotCached, r.dir, err)
	}
	return files[i], nil
}
