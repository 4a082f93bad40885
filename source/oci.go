package source

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v3/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
	"github.com/helmfleet/helmfleet/internal/redact"
)

// OCIResolver resolves charts from OCI registries through Helm's registry
// client, which it builds for each resolution from OCIOptions (the
// caller's credentials, TLS and plain-HTTP settings). The reference is
// chosen as Flux does: a digest pins the
// artifact; for an OCI HelmRepository a concrete version is the tag;
// otherwise (a range, or any spec.ref.semver of an OCIRepository) the
// resolver lists the tags ("_" read as "+"; an OCIRepository's as the
// registry spells them, an OCI HelmRepository's through Helm's client,
// which keeps strict semver tags without "v", as Flux does), keeps those
// spec.ref.semverFilter matches (a regular expression over the tag as the
// registry holds it) and picks with SelectVersion; an OCIRepository with
// neither semver nor tag takes "latest". The manifest digest is
// reported, so a re-pushed tag shows up as a new Digest. The pulled
// chart's Chart.yaml must name the chart (when Ref.Chart names it, as an
// OCI HelmRepository does) and, when the tag or constraint chose a
// version, have that version; a digest, or a tag that is not a version
// ("latest", "stable"), reports the chart's own version.
//
// Helm's registry client takes no context, so the resolver gives it an
// HTTP client that binds every request to the resolution's: ctx, and the
// source's spec.timeout (OCIRepository.Spec.Timeout, or an OCI
// HelmRepository's), which bounds the registry work of one resolution, the
// tag list, manifest and chart blob together, as Flux bounds one pull. A
// registry that stalls fails within it, with an error naming the
// repository and the timeout that wraps context.DeadlineExceeded (the
// caller's own deadline or cancellation: ctx.Err()). Nothing of the pull
// runs on once Resolve has returned.
//
// An oci:// URL with user information, a query or a fragment is refused
// (ErrUnsupportedSource) before the registry client sees it: registries
// take credentials from the client, as Flux takes them from secretRef.
// Errors never print them, nor secrets in the URLs the registry client
// quotes (masked as https://***@host/…?sig=***). It is safe for
// concurrent use.
//
// Plain HTTP is per source, as in Flux: a source whose spec.insecure is
// true (OCIRepository, or a HelmRepository of type oci) is reached over
// plain HTTP, and every other one over HTTPS, in the same resolver. A
// registry that answers an HTTPS request in plain HTTP fails the
// resolution with an error wrapping ErrPlainHTTP that names the source
// and spec.insecure. registry.ClientOptPlainHTTP among
// OCIOptions.ClientOptions still makes every source plain HTTP.
type OCIResolver struct {
	opts       []registry.ClientOption
	httpClient *http.Client
	maxChart   int64
	secrets    SecretReader
	verified   verifiedCache
}

// OCIOptions configure an OCIResolver.
type OCIOptions struct {
	// ClientOptions configure the Helm registry client built for each
	// resolution: credentials (registry.ClientOptBasicAuth,
	// registry.ClientOptCredentialsFile), registry.ClientOptPlainHTTP, and
	// so on. The resolver adds its own registry.ClientOptHTTPClient, which
	// binds the requests to the resolution's context: it replaces one given
	// here (set HTTPClient instead), and a registry.ClientOptAuthorizer,
	// whose own HTTP client would escape it, makes Resolve fail.
	ClientOptions []registry.ClientOption
	// HTTPClient carries the registry's requests: TLS, proxies, a
	// client-wide Timeout; its idle connections are its owner's to close.
	// Nil means a transport of the resolution's own like Helm's (retries
	// included), closed when Resolve returns.
	HTTPClient *http.Client
	// MaxChartSize caps a pulled chart; <= 0 means DefaultMaxChartSize.
	MaxChartSize int64
	// Secrets reads the Secrets holding the trusted keys of spec.verify
	// (see Verification); nil refuses every chart that asks for it.
	Secrets SecretReader
}

// NewOCIResolver returns a resolver that builds its registry clients from
// opts.
func NewOCIResolver(opts OCIOptions) *OCIResolver {
	if opts.MaxChartSize <= 0 {
		opts.MaxChartSize = DefaultMaxChartSize
	}
	return &OCIResolver{opts: slices.Clone(opts.ClientOptions), httpClient: opts.HTTPClient, maxChart: opts.MaxChartSize, secrets: opts.Secrets}
}

// session is the registry client of one resolution, with the transport
// that binds its requests to the resolution's context.
type session struct {
	client    *registry.Client
	transport *boundTransport
	// closeIdle closes the connections of a transport the session owns.
	closeIdle func()
}

// newSession builds the registry client of one resolution, its requests
// bound to ctx; plainHTTP (the source's spec.insecure) reaches the
// registry over plain HTTP.
func (r *OCIResolver) newSession(ctx context.Context, plainHTTP bool) (*session, error) {
	s := &session{closeIdle: func() {}}
	hc := &http.Client{}
	var base http.RoundTripper
	if r.httpClient != nil {
		*hc = *r.httpClient
		base = r.httpClient.Transport
		if base == nil {
			base = http.DefaultTransport
		}
	} else {
		// Helm's default: http.DefaultTransport's settings, with ORAS's
		// retries; but one of the resolution's own, so that no idle
		// connection (and its goroutines) outlives it.
		t := &http.Transport{}
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			t = dt.Clone()
		}
		base, s.closeIdle = retry.NewTransport(t), t.CloseIdleConnections
	}
	s.transport = &boundTransport{ctx: ctx, base: base}
	hc.Transport = s.transport
	opts := append(slices.Clone(r.opts), registry.ClientOptHTTPClient(hc))
	if plainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	client, err := registry.NewClient(opts...)
	if err != nil {
		s.closeIdle()
		return nil, err
	}
	s.client = client
	return s, nil
}

// bound reports an error when the registry client made requests without
// the session's transport (a registry.ClientOptAuthorizer with its own
// HTTP client): the resolution's context could not bound them. Call it
// after a registry call that succeeded, which always makes a request.
func (s *session) bound() error {
	if s.transport.requests.Load() == 0 {
		return fmt.Errorf("%w: the registry client sent its requests without the resolver's HTTP client (a registry.ClientOptAuthorizer among OCIOptions.ClientOptions?), so neither ctx nor spec.timeout could bound them",
			ErrUnsupportedSource)
	}
	return nil
}

// boundTransport gives every request the context of one resolution: Helm's
// registry client sends them with context.Background(), or with ORAS's
// contexts derived from it, which nothing else would end.
type boundTransport struct {
	ctx      context.Context
	base     http.RoundTripper
	requests atomic.Int64

	// listed holds the tags of every tag-list page the registry answered,
	// spelled as the registry holds them: Helm's client hands back only
	// strict semver tags without "v", rewritten, where Flux's
	// OCIRepository reads every tag.
	mu     sync.Mutex
	listed []string
	// pulled is how the registry last served a manifest: the signature
	// requests go the same way.
	pulled pullRoute
}

// pullRoute is the scheme, host and Authorization of a manifest request
// the registry answered.
type pullRoute struct {
	scheme, host, authorization string
}

// pulledWith returns how the registry last served a manifest.
func (t *boundTransport) pulledWith() pullRoute {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pulled
}

// maxTagList caps one page of a registry's tag list.
const maxTagList = 16 << 20

// tagsListed returns the tags the registry listed so far.
func (t *boundTransport) tagsListed() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.listed)
}

// keepTags records the tags of a tag-list page and hands the page on.
func (t *boundTransport) keepTags(resp *http.Response) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTagList+1))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	if len(body) > maxTagList {
		return nil, fmt.Errorf("%w: the registry's tag list is over %d bytes", ErrTooLarge, maxTagList)
	}
	var page struct {
		Tags []string `json:"tags"`
	}
	if json.Unmarshal(body, &page) == nil {
		t.mu.Lock()
		t.listed = append(t.listed, page.Tags...)
		t.mu.Unlock()
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// RoundTrip implements http.RoundTripper. A request ends with the
// resolution's context, and with its own too (ORAS cancels the other
// fetches of a copy that failed). The layers below the registry client's
// authorizer need none of its context's values.
func (t *boundTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.requests.Add(1)
	ctx, cancel := context.WithCancel(t.ctx)
	context.AfterFunc(req.Context(), cancel)
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err == nil && resp.StatusCode == http.StatusOK && strings.Contains(req.URL.Path, "/manifests/") {
		t.mu.Lock()
		t.pulled = pullRoute{scheme: req.URL.Scheme, host: req.URL.Host, authorization: req.Header.Get("Authorization")}
		t.mu.Unlock()
	}
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasSuffix(req.URL.Path, "/tags/list") {
		return resp, err
	}
	return t.keepTags(resp)
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
		if err := checkChartName(ref.Chart); err != nil {
			return nil, &Error{Op: "resolve", Source: Redact(ref.HelmRepository.Spec.URL), Chart: ref.Chart, Constraint: ref.Version, Err: err}
		}
		// Flux's NormalizeURL drops every trailing slash of an oci:// URL.
		repoURL, kind = strings.TrimRight(ref.HelmRepository.Spec.URL, "/")+"/"+ref.Chart, KindHelmRepository
	default:
		return nil, &Error{Op: "resolve", Chart: ref.Chart, Constraint: ref.Version,
			Err: fmt.Errorf("%w: OCIResolver needs an OCIRepository or an OCI HelmRepository", ErrUnsupportedSource)}
	}
	base := strings.TrimPrefix(repoURL, "oci://")
	fail := func(op string, err error) error {
		return &Error{Op: op, Source: Redact(repoURL), Chart: ref.Chart, Constraint: constraint, Err: err}
	}
	insecure := sourceInsecure(ref)
	var sess *session // built for the first registry call
	var timeout time.Duration
	if t := sourceTimeout(ref); t != nil && t.Duration > 0 {
		timeout = t.Duration
	}
	// pullCtx bounds the registry work of this resolution; once Resolve
	// returns, it ends whatever is left.
	pullCtx, cancel := context.WithCancel(ctx)
	if timeout > 0 {
		pullCtx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	// The registry client quotes the references it is given, and the
	// URLs of the requests it makes.
	registryFail := func(op string, err error, refs ...string) error {
		err = redact.Error(err, append(refs, repoURL, base)...)
		switch {
		case ctx.Err() != nil:
			return fail(op, ctx.Err())
		case pullCtx.Err() != nil:
			if !errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
			}
			return fail(op, fmt.Errorf("spec.timeout %s exceeded: %w", timeout, err))
		}
		if !insecure && errors.Is(err, http.ErrSchemeMismatch) {
			host, _, _ := strings.Cut(base, "/")
			return fail(op, fmt.Errorf("%w: %w: %s: spec.insecure is not set, so %s is reached over HTTPS, and it answered in plain HTTP; set spec.insecure: true on this source to allow plain HTTP to it: %w",
				ErrUnreachable, ErrPlainHTTP, sourceName(ref, repoURL), host, err))
		}
		return fail(op, registryError(err))
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
	if _, err := url.Parse(repoURL); err != nil || strings.ContainsAny(base, " \t\r\n") {
		return nil, fail("resolve", fmt.Errorf("%w: %s is not a valid oci:// URL", ErrUnsupportedSource, redact.URL(repoURL)))
	}
	if digest != "" && !digestForm.MatchString(digest) {
		return nil, fail("resolve", fmt.Errorf("%w: spec.ref.digest %q is not a digest (algorithm:hex)", ErrUnsupportedSource, digest))
	}
	start := func(op string) error {
		if err := ctx.Err(); err != nil {
			return fail(op, err)
		}
		if sess != nil {
			return nil
		}
		var err error
		if sess, err = r.newSession(pullCtx, insecure); err != nil {
			return fail(op, fmt.Errorf("%w: registry client: %w", ErrUnreachable, redact.Error(err)))
		}
		return nil
	}
	defer func() {
		if sess != nil {
			sess.closeIdle()
		}
	}()
	var pullRef, version string
	switch {
	case digest != "":
		pullRef = base + "@" + digest
	case tag != "" && constraint == "":
		pullRef = base + ":" + tag
		if _, err := parseVersion(tagToVersion(tag)); err == nil {
			version = tagToVersion(tag)
		}
	default:
		if _, err := parseVersion(constraint); err == nil && ref.OCIRepository == nil {
			// An OCI HelmRepository takes a concrete version as the tag,
			// as Flux's OCIChartRepository does; an OCIRepository's
			// spec.ref.semver is always matched against the tags, so
			// "1.0.0" finds a tag 1.0.0_build.1 too.
			version = constraint
		} else {
			if err := start("list tags"); err != nil {
				return nil, err
			}
			tags, err := sess.client.Tags(base)
			if err != nil {
				return nil, registryFail("list tags", err)
			}
			if err := sess.bound(); err != nil {
				return nil, fail("list tags", err)
			}
			if ref.OCIRepository != nil {
				// Flux's OCIRepository reads every tag as the registry
				// spells it ("v1.2.3" included); an OCI HelmRepository
				// takes Helm's list, as Flux's does.
				tags = sess.transport.tagsListed()
			}
			if filter != "" {
				// Flux's semverFilter: a tag must match it as the
				// registry holds it before the range is applied.
				re, err := regexp.Compile(filter)
				if err != nil {
					return nil, fail("select version", fmt.Errorf("spec.ref.semverFilter %q: %w", filter, err))
				}
				tags = slices.DeleteFunc(tags, func(t string) bool { return !re.MatchString(t) })
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
	if err := start("pull chart"); err != nil {
		return nil, err
	}
	res, err := sess.client.Pull(pullRef)
	if err != nil {
		return nil, registryFail("pull chart", err, pullRef)
	}
	if err := sess.bound(); err != nil {
		return nil, fail("pull chart", err)
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
	verified, err := r.verifySignature(pullCtx, sess, base, ref, res.Manifest.Digest)
	if err != nil {
		return nil, fail("verify", err)
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
		Verified:   verified,
	}, ref, func(err error) error { return fail("read values files", err) })
}

// digestForm is the grammar of an OCI content digest (algorithm:encoded).
var digestForm = regexp.MustCompile(`^[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)

// sourceTimeout returns the spec.timeout of the source ref names.
func sourceTimeout(ref Ref) *metav1.Duration {
	if ref.OCIRepository != nil {
		return ref.OCIRepository.Spec.Timeout
	}
	return ref.HelmRepository.Spec.Timeout
}

// ErrPlainHTTP: an OCI registry answered an HTTPS request in plain HTTP,
// for a source that does not set spec.insecure. It comes wrapped with
// ErrUnreachable.
var ErrPlainHTTP = errors.New("registry answered in plain HTTP")

// sourceInsecure reports whether the source of ref sets spec.insecure:
// its registry is reached over plain HTTP.
func sourceInsecure(ref Ref) bool {
	if ref.OCIRepository != nil {
		return ref.OCIRepository.Spec.Insecure
	}
	return ref.HelmRepository != nil && ref.HelmRepository.Spec.Insecure
}

// sourceName names the source object of ref, "OCIRepository ns/name",
// or its kind and URL when it has no name.
func sourceName(ref Ref, repoURL string) string {
	kind, ns, name := KindHelmRepository, "", ""
	switch {
	case ref.OCIRepository != nil:
		kind, ns, name = KindOCIRepository, ref.OCIRepository.Namespace, ref.OCIRepository.Name
	case ref.HelmRepository != nil:
		ns, name = ref.HelmRepository.Namespace, ref.HelmRepository.Name
	}
	if name == "" {
		return kind + " " + redact.URL(repoURL)
	}
	return fieldcheck.ObjectName(kind, ns, name)
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
