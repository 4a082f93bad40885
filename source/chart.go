package source

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
)

// Resolver turns a chart reference into a loaded, verified chart. The
// release package consumes it; callers may wrap one (caching, mirroring,
// metrics) or replace it (an air-gapped store).
type Resolver interface {
	// Resolve fetches, verifies and loads the chart ref names.
	Resolve(ctx context.Context, ref Ref) (*Chart, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, ref Ref) (*Chart, error)

// Resolve calls f.
func (f ResolverFunc) Resolve(ctx context.Context, ref Ref) (*Chart, error) { return f(ctx, ref) }

// Ref names a chart and where it lives: a HelmRelease's chart.spec with its
// source object, or a chartRef. Exactly one of HelmRepository,
// OCIRepository or Path says where; HelmChart, when set, supplies Chart,
// Version, ValuesFiles and IgnoreMissingValuesFiles that Ref leaves empty,
// and its repository goes in HelmRepository.
type Ref struct {
	// Chart is the chart's name in a Helm repository. Not used for an
	// OCIRepository (the URL names the chart) or a Path.
	Chart string
	// Version is an exact version or a semver constraint; "" means "*".
	Version string
	// ValuesFiles are chart-relative files that replace the chart's
	// values.yaml; they are returned in order, unmerged, in Chart.ValuesFiles.
	ValuesFiles []string
	// IgnoreMissingValuesFiles skips listed files the chart lacks.
	IgnoreMissingValuesFiles bool

	// HelmRepository is an HTTP(S) repository with an index, or an OCI
	// registry when its type is "oci" or its URL starts with oci://.
	HelmRepository *HelmRepository
	// OCIRepository is one chart artifact in an OCI registry.
	OCIRepository *OCIRepository
	// HelmChart is Flux's HelmChart object, used with HelmRepository.
	HelmChart *HelmChart
	// Path is a local chart directory or .tgz archive.
	Path string
	// Verify, when set, is the signature check the chart must pass (a
	// HelmRelease's spec.chart.spec.verify); when nil, the HelmChart's or
	// OCIRepository's spec.verify applies. Only the OCI resolver can
	// verify: every other resolver refuses a Ref that asks for it.
	Verify *Verification
	// RewriteChartURL, when set, maps an absolute chart URL that an
	// HTTP(S) repository's index lists before the archive is downloaded
	// (a mirror of the host the index points to); the Chart's URL is the
	// one it returns. A relative URL resolves against the repository URL
	// and is not passed to it.
	RewriteChartURL func(chartURL string) string
}

// Chart is a resolved chart.
type Chart struct {
	// Chart is the chart as Helm's loader loaded it.
	Chart *chart.Chart
	// Version is the version that was selected.
	Version string
	// Digest identifies the artifact: "sha256:…" of the archive for HTTP
	// repositories and local archives, the manifest digest for OCI (so a
	// re-pushed tag is a new digest); empty for a chart directory.
	Digest string
	// Source says where the chart came from: the repository URL or path,
	// without credentials.
	Source string
	// SourceKind is HelmRepository, OCIRepository or "Local".
	SourceKind string
	// URL is the archive or artifact reference it was downloaded from,
	// without credentials; empty for local charts.
	URL string
	// Verified says who signed the artifact when the source asked for
	// verification (spec.verify); nil when it did not.
	Verified *Verified
	// Warnings say what was accepted that is refused by default, for the
	// engine to carry to the release's status: today an archive taken
	// unverified from an index entry without a digest, which the
	// HelmRepository allows (AnnotationAllowMissingDigest). Nil when none.
	Warnings []string
	// ValuesFiles holds ref.ValuesFiles as read from the chart, in order.
	// When Ref listed any, they replace the chart's values.yaml: the values
	// package merges them; this package never merges values.
	ValuesFiles []ValuesFile
}

// ValuesFile is one chart-relative values file, raw.
type ValuesFile struct {
	// Name is the path inside the chart, as listed in valuesFiles.
	Name string
	// Data is the file's content.
	Data []byte
}

// KindLocal is the SourceKind of charts read from a local path.
const KindLocal = "Local"

// normalize fills Chart, Version and the values-file settings from
// ref.HelmChart where ref leaves them empty.
func (r Ref) normalize() Ref {
	if hc := r.HelmChart; hc != nil {
		if r.Chart == "" {
			r.Chart = hc.Spec.Chart
		}
		if r.Version == "" {
			r.Version = hc.Spec.Version
		}
		if len(r.ValuesFiles) == 0 {
			r.ValuesFiles = hc.Spec.ValuesFiles
			r.IgnoreMissingValuesFiles = r.IgnoreMissingValuesFiles || hc.Spec.IgnoreMissingValuesFiles
		}
	}
	return r
}

// valuesFiles reads the listed files out of a loaded chart, in order.
func valuesFiles(c *chart.Chart, names []string, ignoreMissing bool) ([]ValuesFile, error) {
	if len(names) == 0 {
		return nil, nil
	}
	byName := make(map[string][]byte, len(c.Raw))
	for _, f := range c.Raw {
		byName[path.Clean(f.Name)] = f.Data
	}
	out := make([]ValuesFile, 0, len(names))
	for i, n := range names {
		data, ok := byName[path.Clean(strings.TrimPrefix(n, "./"))]
		if !ok {
			if ignoreMissing {
				continue
			}
			return nil, fmt.Errorf("%w: valuesFiles[%d]: %q", ErrValuesFileMissing, i, n)
		}
		out = append(out, ValuesFile{Name: n, Data: data})
	}
	return out, nil
}

// finish attaches the values files to a loaded chart.
func finish(c *Chart, ref Ref, op func(error) error) (*Chart, error) {
	vf, err := valuesFiles(c.Chart, ref.ValuesFiles, ref.IgnoreMissingValuesFiles)
	if err != nil {
		return nil, op(err)
	}
	c.ValuesFiles = vf
	return c, nil
}

// Composite dispatches a Ref to the resolver for its source: OCI for an
// OCIRepository or an OCI HelmRepository, HTTP for any other
// HelmRepository, Local for a Path. A nil field makes that kind of source
// an ErrUnsupportedSource error.
type Composite struct {
	// HTTP resolves charts from HTTP(S) Helm repositories.
	HTTP Resolver
	// OCI resolves charts from OCI registries.
	OCI Resolver
	// Local resolves chart directories and archives on disk.
	Local Resolver
}

// Resolve implements Resolver.
func (c Composite) Resolve(ctx context.Context, ref Ref) (*Chart, error) {
	ref = ref.normalize()
	var (
		r    Resolver
		kind string
		src  string
	)
	n := 0
	if ref.HelmRepository != nil {
		n++
		src = Redact(ref.HelmRepository.Spec.URL)
		if isOCIRepository(ref.HelmRepository) {
			r, kind = c.OCI, "OCI HelmRepository"
		} else {
			r, kind = c.HTTP, KindHelmRepository
		}
	}
	if ref.OCIRepository != nil {
		n++
		r, kind, src = c.OCI, KindOCIRepository, Redact(ref.OCIRepository.Spec.URL)
	}
	if ref.Path != "" {
		n++
		r, kind, src = c.Local, KindLocal, ref.Path
	}
	if n != 1 {
		return nil, &Error{Op: "resolve", Chart: ref.Chart, Constraint: ref.Version,
			Err: fmt.Errorf("%w: exactly one of HelmRepository, OCIRepository or Path must be set, got %d", ErrUnsupportedSource, n)}
	}
	if ref.OCIRepository == nil && (ref.HelmRepository == nil || !isOCIRepository(ref.HelmRepository)) {
		// Whatever resolver handles it, a source that is not OCI cannot
		// be verified.
		if err := refuseUnverifiable(ref, src); err != nil {
			return nil, err
		}
	}
	if r == nil {
		return nil, &Error{Op: "resolve", Source: src, Chart: ref.Chart, Constraint: ref.Version,
			Err: fmt.Errorf("%w: no resolver for %s", ErrUnsupportedSource, kind)}
	}
	return r.Resolve(ctx, ref)
}

func isOCIRepository(r *HelmRepository) bool {
	return r.Spec.Type == RepositoryTypeOCI || strings.HasPrefix(r.Spec.URL, "oci://")
}

// chartNameForm is the chart name Flux's remote chart builder accepts for
// a Helm repository (HTTP or OCI): lower-case letters, digits and dashes,
// in parts separated by single slashes or periods. It keeps a name from
// climbing out of an OCI repository path ("../x") and from matching what
// Flux would refuse.
var chartNameForm = regexp.MustCompile(`^([-a-z0-9]+/?\.?)+$`)

// checkChartName refuses a chart name Flux refuses, before any request.
func checkChartName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: the chart name is empty", ErrInvalidChartName)
	}
	if !chartNameForm.MatchString(name) {
		return fmt.Errorf("%w: %q: a chart name is lower-case letters, digits and dashes, in parts separated by single slashes or periods",
			ErrInvalidChartName, name)
	}
	return nil
}
