package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/helmfleet/helmfleet/internal/redact"
)

// OCIResolver resolves charts from OCI registries through Helm's registry
// client, which carries the caller's credentials, TLS and plain-HTTP
// settings. The reference is chosen as Flux does: a digest pins the
// artifact; otherwise a concrete version is the tag, a range lists the
// tags ("_" read as "+"), keeps those spec.ref.semverFilter matches (a
// regular expression over the tag as the registry holds it) and picks
// with SelectVersion (with a filter, even a concrete version is looked up
// among the filtered tags); an OCIRepository with neither semver nor tag
// takes "latest". The manifest digest is
// reported, so a re-pushed tag shows up as a new Digest. The pulled
// chart's Chart.yaml must name the chart (when Ref.Chart names it, as an
// OCI HelmRepository does) and, when the tag or constraint chose a
// version, have that version; a digest, or a tag that is not a version
// ("latest", "stable"), reports the chart's own version.
//
// An oci:// URL with user information, a query or a fragment is refused
// (ErrUnsupportedSource) before the registry client sees it: registries
// take credentials from the client, as Flux takes them from secretRef.
// Errors never print them, nor secrets in the URLs the registry client
// quotes (see internal/redact).
//
// Helm's registry client takes no context: ctx is checked before each
// registry call, but a pull in progress runs to its end.
type OCIResolver struct {
	client   *registry.Client
	maxChart int64
}

// NewOCIResolver returns a resolver using client; maxChartSize <= 0 means
// DefaultMaxChartSize.
func NewOCIResolver(client *registry.Client, maxChartSize int64) *OCIResolver {
	if maxChartSize <= 0 {
		maxChartSize = DefaultMaxChartSize
	}
	return &OCIResolver{client: client, maxChart: maxChartSize}
}

// Resolve implements Resolver for an OCIRepository or an OCI HelmRepository.
func (r *OCIResolver) Resolve(ctx context.Context, ref Ref) (*Chart, error) {
	ref = ref.normalize()
	var (
		repoURL, kind string
		digest, tag   string
		filter        string
		constraint    = ref.Version
	)
	switch {
	case ref.OCIRepository != nil:
		repoURL, kind = ref.OCIRepository.Spec.URL, KindOCIRepository
		if rr := ref.OCIRepository.Spec.Reference; rr != nil {
			digest, tag = rr.Digest, rr.Tag
			if rr.SemVer != "" {
				constraint, filter = rr.SemVer, rr.SemverFilter
			}
		}
		if constraint == "" && tag == "" && digest == "" {
			tag = "latest"
		}
	case ref.HelmRepository != nil && isOCIRepository(ref.HelmRepository):
		repoURL, kind = strings.TrimSuffix(ref.HelmRepository.Spec.URL, "/")+"/"+ref.Chart, KindHelmRepository
	default:
		return nil, &Error{Op: "resolve", Chart: ref.Chart, Constraint: ref.Version,
			Err: fmt.Errorf("%w: OCIResolver needs an OCIRepository or an OCI HelmRepository", ErrUnsupportedSource)}
	}
	base := strings.TrimPrefix(repoURL, "oci://")
	fail := func(op string, err error) error {
		return &Error{Op: op, Source: Redact(repoURL), Chart: ref.Chart, Constraint: constraint, Err: err}
	}
	// The registry client quotes the references it is given, and the
	// URLs of the requests it makes.
	registryFail := func(op string, err error, refs ...string) error {
		return fail(op, registryError(redact.Error(err, append(refs, repoURL, base)...)))
	}
	if base == repoURL || base == "" {
		return nil, fail("resolve", fmt.Errorf("%w: %q is not an oci:// URL", ErrUnsupportedSource, Redact(repoURL)))
	}
	if strings.ContainsAny(base, "@?#") {
		// Registries take credentials from the client, never from the
		// reference; Helm's client would quote them back in its errors.
		return nil, fail("resolve", fmt.Errorf("%w: %s: an oci:// URL cannot carry credentials, a query or a fragment; the registry client holds the credentials",
			ErrUnsupportedSource, redact.URL(repoURL)))
	}
	var pullRef, version string
	switch {
	case digest != "":
		pullRef = base + "@" + digest
	case tag != "" && constraint == "":
		pullRef = base + ":" + tag
		if _, err := semver.StrictNewVersion(strings.TrimPrefix(tagToVersion(tag), "v")); err == nil {
			version = tagToVersion(tag)
		}
	default:
		if _, err := semver.StrictNewVersion(strings.TrimPrefix(constraint, "v")); err == nil && constraint != "" && filter == "" {
			version = constraint // a concrete version is the tag
		} else {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			tags, err := r.client.Tags(base)
			if err != nil {
				return nil, registryFail("list tags", err)
			}
			if filter != "" {
				// Flux's semverFilter: a tag must match it as the
				// registry holds it ("_" for "+"; Helm's client hands
				// the tags back with "+") before the range is applied.
				re, err := regexp.Compile(filter)
				if err != nil {
					return nil, fail("select version", fmt.Errorf("spec.ref.semverFilter %q: %w", filter, err))
				}
				tags = slices.DeleteFunc(slices.Clone(tags), func(t string) bool { return !re.MatchString(versionToTag(t)) })
			}
			cands := tagCandidates(tags)
			i, err := SelectVersion(constraint, cands)
			if err != nil {
				return nil, fail("select version", err)
			}
			version = cands[i].Version
		}
		pullRef = base + ":" + versionToTag(version)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := r.client.Pull(pullRef)
	if err != nil {
		return nil, registryFail("pull chart", err, pullRef)
	}
	if digest != "" && res.Manifest.Digest != digest {
		return nil, fail("pull chart", fmt.Errorf("%w: want %s, got %s", ErrDigestMismatch, digest, res.Manifest.Digest))
	}
	if int64(len(res.Chart.Data)) > r.maxChart {
		return nil, fail("pull chart", fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(res.Chart.Data), r.maxChart))
	}
	if err := verifyDigest(res.Chart.Data, res.Chart.Digest); err != nil {
		return nil, fail("pull chart", err)
	}
	la, err := loadArchive(res.Chart.Data, r.maxChart)
	if err != nil {
		return nil, fail("load chart", err)
	}
	if err := checkChart(la.chart, ref.Chart, version); err != nil {
		return nil, fail("load chart", err)
	}
	if version == "" {
		version = la.chart.Metadata.Version
	}
	return finish(&Chart{
		Chart:      la.chart,
		Version:    version,
		Digest:     res.Manifest.Digest,
		Source:     Redact(repoURL),
		SourceKind: kind,
		URL:        Redact("oci://" + res.Ref),
	}, ref, func(err error) error { return fail("read values files", err) })
}

// registryError maps an error of Helm's registry client, already
// redacted, to a sentinel; the cause stays in the chain.
func registryError(err error) error {
	var er *errcode.ErrorResponse
	if errors.As(err, &er) {
		return fmt.Errorf("%w: %w", statusError(er.StatusCode), err)
	}
	var ne net.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) {
		return fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	if strings.Contains(err.Error(), "not found") {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return fmt.Errorf("%w: %w", ErrServer, err)
}
