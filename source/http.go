package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/repo"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
	"github.com/helmfleet/helmfleet/internal/redact"
)

// HTTPOptions are the optional settings of an HTTPResolver; the zero value
// gives the defaults.
type HTTPOptions struct {
	// MaxIndexSize caps an index download; default DefaultMaxIndexSize.
	MaxIndexSize int64
	// MaxChartSize caps an archive download and its expanded size; default
	// DefaultMaxChartSize.
	MaxChartSize int64
	// Cache keeps parsed chart entries per index digest; default a new
	// IndexCache of DefaultIndexCacheSize. Share one between resolvers to
	// share the work.
	Cache *IndexCache
}

// HTTPResolver resolves charts from Helm HTTP(S) repositories. It fetches
// <url>/index.yaml with the caller's *http.Client (auth, TLS and proxies
// are the caller's business), resolves the chart from it as the body
// streams in without decoding the rest of the index (see FindChartVersion;
// a JSON index is not even held: it is scanned through a fixed window and
// only the chart's entries are kept, while a YAML index is held for the
// scan and dropped), downloads the archive, verifies its digest
// against the index entry, loads it with Helm's loader and checks that its
// Chart.yaml names the chart and version the index promised. Only verified
// bytes are kept. HelmRepository.Spec.Timeout, when set, bounds each
// download from the repository: the index, then the archive, each within
// its own Timeout, as Flux's getter applies it to every request. It is
// safe for concurrent use.
//
// The repository URL's query (an object store's signed token) is kept on
// every request, as Helm does: index.yaml goes in its path. Errors and the
// returned Chart never print it, nor the URL's user information: Source
// fields are redacted with Redact, and URLs quoted in messages (the
// archive's, a redirect target's) are masked as
// https://***@host/app-1.0.0.tgz?sig=***.
//
// Per repository it remembers only the last good index's ETag,
// Last-Modified and key, never its bytes; the chart's parsed entries
// live in the IndexCache under that key. The index is revalidated with
// a conditional request when the cache holds the asked chart's entries for
// it, so a 304 costs no download and no scan. A chart not resolved from the
// current index before (or evicted since) costs one unconditional download
// instead: the trade of a second transfer for not keeping a 20–100 MB
// index in memory per repository.
type HTTPResolver struct {
	client   *http.Client
	maxIndex int64
	maxChart int64
	cache    *IndexCache

	mu        sync.Mutex
	indexes   map[string]*indexState // by index URL
	revisions map[string]bool        // index URLs whose revision was asked for
}

// indexState is what is remembered of one repository's last good index:
// its validators, its key in the IndexCache and, once asked for, its
// revision; not its bytes.
type indexState struct {
	etag, lastModified string
	key                string // the IndexCache key of its bytes
	revision           string // "sha256:<hex>", or "" when never asked for
}

// conditional returns the headers that revalidate st.
func (st *indexState) conditional() http.Header {
	hdr := http.Header{}
	if st.etag != "" {
		hdr.Set("If-None-Match", st.etag)
	}
	if st.lastModified != "" {
		hdr.Set("If-Modified-Since", st.lastModified)
	}
	return hdr
}

// NewHTTPResolver returns a resolver that does every request through
// client.
func NewHTTPResolver(client *http.Client, opts HTTPOptions) *HTTPResolver {
	if opts.MaxIndexSize <= 0 {
		opts.MaxIndexSize = DefaultMaxIndexSize
	}
	if opts.MaxChartSize <= 0 {
		opts.MaxChartSize = DefaultMaxChartSize
	}
	if opts.Cache == nil {
		opts.Cache = NewIndexCache(DefaultIndexCacheSize)
	}
	return &HTTPResolver{
		client:    client,
		maxIndex:  opts.MaxIndexSize,
		maxChart:  opts.MaxChartSize,
		cache:     opts.Cache,
		indexes:   map[string]*indexState{},
		revisions: map[string]bool{},
	}
}

// Resolve implements Resolver for a Ref with an HTTP(S) HelmRepository.
func (r *HTTPResolver) Resolve(ctx context.Context, ref Ref) (*Chart, error) {
	ref = ref.normalize()
	if err := refuseUnverifiable(ref, Redact(sourceURL(ref))); err != nil {
		return nil, err
	}
	if ref.HelmRepository == nil || isOCIRepository(ref.HelmRepository) {
		return nil, &Error{Op: "resolve", Chart: ref.Chart, Constraint: ref.Version,
			Err: fmt.Errorf("%w: HTTPResolver needs an HTTP(S) HelmRepository", ErrUnsupportedSource)}
	}
	repoURL := ref.HelmRepository.Spec.URL
	fail := func(op string, status int, err error) error {
		return &Error{Op: op, Source: Redact(repoURL), Chart: ref.Chart, Constraint: ref.Version, StatusCode: status, Err: err}
	}
	if err := checkChartName(ref.Chart); err != nil {
		return nil, fail("resolve", 0, err)
	}
	if u, err := url.Parse(repoURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fail("resolve", 0, fmt.Errorf("%w: %s is not an http(s):// URL", ErrUnsupportedSource, redact.URL(repoURL)))
	}
	timeout := time.Duration(0)
	if t := ref.HelmRepository.Spec.Timeout; t != nil && t.Duration > 0 {
		timeout = t.Duration
	}
	fetchCtx, cancel := withTimeout(ctx, timeout)
	// Flux normalises the URL first (NormalizeURL): the index and relative
	// archive URLs are resolved against the path with one trailing slash.
	base := normalizeRepoURL(repoURL)
	e, st, status, err := r.findEntries(fetchCtx, base, ref.Chart)
	cancel()
	if err != nil {
		err = timeoutErr(ctx, err, timeout)
		op := "fetch index"
		if errors.Is(err, ErrInvalidIndex) || errors.Is(err, ErrChartNotFound) {
			op, status = "select version", 0
		}
		return nil, fail(op, status, err)
	}
	cv, err := e.resolve(ref.Version)
	if err != nil {
		return nil, fail("select version", 0, err)
	}
	r.keep(indexURL(base), st)
	if len(cv.URLs) == 0 {
		return nil, fail("download chart", 0, fmt.Errorf("%w: version %s lists no URL", ErrInvalidIndex, cv.Version))
	}
	archiveURL, err := repo.ResolveReferenceURL(base, cv.URLs[0])
	if err != nil {
		return nil, fail("download chart", 0, fmt.Errorf("%w: %w", ErrInvalidIndex, redact.Error(err, repoURL, base, cv.URLs[0])))
	}
	if u, err := url.Parse(cv.URLs[0]); err == nil && u.IsAbs() && ref.RewriteChartURL != nil {
		archiveURL = ref.RewriteChartURL(archiveURL)
	}
	var warnings []string
	if cv.Digest == "" {
		w, err := missingDigest(ref.HelmRepository, ref.Chart, cv.Version, archiveURL)
		if err != nil {
			return nil, fail("download chart", 0, err)
		}
		warnings = append(warnings, w)
	}
	getCtx, cancel := withTimeout(ctx, timeout)
	data, status, err := r.get(getCtx, archiveURL, r.maxChart)
	cancel()
	if err != nil {
		return nil, fail("download chart", status, fmt.Errorf("GET %s: %w", redact.URL(archiveURL), timeoutErr(ctx, err, timeout)))
	}
	if cv.Digest != "" {
		if err := verifyDigest(data, cv.Digest); err != nil {
			return nil, fail("download chart", 0, fmt.Errorf("GET %s: %w", redact.URL(archiveURL), err))
		}
	}
	la, err := loadArchive(data, r.maxChart)
	if err != nil {
		return nil, fail("load chart", 0, err)
	}
	if err := checkChart(la.chart, ref.Chart, cv.Version); err != nil {
		return nil, fail("load chart", 0, err)
	}
	return finish(&Chart{
		Chart:      la.chart,
		Version:    cv.Version,
		Digest:     la.digest,
		Source:     Redact(repoURL),
		SourceKind: KindHelmRepository,
		URL:        Redact(archiveURL),
		Warnings:   warnings,
	}, ref, func(err error) error { return fail("read values files", 0, err) })
}

// missingDigest decides on an index entry without a digest, before its
// archive is downloaded: refused (ErrDigestMissing) unless repo allows it
// (AnnotationAllowMissingDigest), in which case it returns the warning
// that says the archive goes unverified.
func missingDigest(repo *HelmRepository, chart, version, archiveURL string) (string, error) {
	name := Redact(repo.Spec.URL)
	if repo.Name != "" {
		name = fieldcheck.ObjectName("", repo.Namespace, repo.Name)
	}
	if !repo.AllowsMissingDigest() {
		return "", fmt.Errorf("%w: the index entry of chart %s version %s (%s) has no digest to verify its archive against (HelmRepository %s: metadata.annotations[%s]: %q accepts it unverified)",
			ErrDigestMissing, chart, version, redact.URL(archiveURL), name, AnnotationAllowMissingDigest, "true")
	}
	return fmt.Sprintf("chart %s version %s from repository %s has no digest in its index entry: accepted unverified (allow-missing-digest)", chart, version, name), nil
}

// IndexDigest returns the SHA-256 digest ("sha256:<hex>") of a
// repository's current index, Flux's revision of a HelmRepository. The
// bytes are hashed as they arrive, not kept.
//
// Resolve does not compute it: a SHA-256 costs as much as the scan of a
// JSON index, so it is paid only for the repositories whose revision is
// wanted. The first call for a repository downloads the index; from then
// on Resolve hashes that repository's index too, and IndexDigest
// revalidates with a conditional request (a 304 costs no download).
func (r *HTTPResolver) IndexDigest(ctx context.Context, repoURL string) (string, error) {
	fail := func(status int, err error) (string, error) {
		return "", &Error{Op: "fetch index", Source: Redact(repoURL), StatusCode: status, Err: err}
	}
	u := indexURL(repoURL)
	r.mu.Lock()
	r.revisions[u] = true
	r.mu.Unlock()
	old := r.kept(u)
	var hdr http.Header
	if old != nil && old.revision != "" {
		hdr = old.conditional()
	}
	resp, status, err := r.open(ctx, u, hdr, r.maxIndex)
	if err != nil {
		return fail(status, err)
	}
	if resp == nil {
		if hdr == nil {
			return fail(status, fmt.Errorf("%w: HTTP %d to an unconditional request", ErrServer, status))
		}
		return old.revision, nil
	}
	defer resp.Body.Close()
	sums := r.cache.sums(true)
	if _, err := io.Copy(sums, io.LimitReader(resp.Body, r.maxIndex+1)); err != nil {
		return fail(status, r.readErr(ctx, u, err))
	}
	if sums.n > r.maxIndex {
		return fail(status, errTooLarge(r.maxIndex))
	}
	// Keeping this index's state is safe even when it is not a valid index:
	// the cache holds entries only for indexes that resolved, so a Resolve
	// finding none under its key downloads the index unconditionally.
	st := &indexState{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"),
		key: sums.cacheKey(), revision: sums.revision()}
	r.keep(u, st)
	return st.revision, nil
}

// indexURL is the repository's index.yaml, the way Helm builds it: the
// file joins the URL's path and the query (a signed token) is kept.
func indexURL(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil {
		// The request will fail on the same URL, with a redacted error.
		return strings.TrimRight(repoURL, "/") + "/index.yaml"
	}
	// As Flux: path.Join of the normalised path and index.yaml.
	u.Path = path.Join(strings.TrimRight(u.Path, "/")+"/", "index.yaml")
	if u.RawPath != "" {
		u.RawPath = path.Join(strings.TrimRight(u.RawPath, "/")+"/", "index.yaml")
	}
	return u.String()
}

// normalizeRepoURL is Flux's NormalizeURL for an HTTP(S) repository: the
// path ends in exactly one slash. A URL that does not parse is returned as
// it is (Resolve refuses it first).
func normalizeRepoURL(repoURL string) string {
	u, err := url.Parse(repoURL)
	if err != nil {
		return repoURL
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/"
	if u.RawPath != "" {
		u.RawPath = strings.TrimRight(u.RawPath, "/") + "/"
	}
	return u.String()
}

// withTimeout bounds one download by the repository's spec.timeout, when
// set.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// timeoutErr says that a deadline the download met was spec.timeout's,
// not the caller's; errors.Is(err, context.DeadlineExceeded) still holds.
func timeoutErr(ctx context.Context, err error, d time.Duration) error {
	if d > 0 && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("spec.timeout %s exceeded: %w", d, err)
	}
	return err
}

// findEntries returns chartName's entries in the repository's current index
// and the state to keep once they proved usable (see keep), so that a
// failed or malformed download never replaces a good index. A kept index is
// revalidated only when the cache holds the chart's entries for it;
// otherwise the index is downloaded and scanned as it streams in. Errors
// wrapping ErrInvalidIndex or ErrChartNotFound are about the index; the
// others about the download.
func (r *HTTPResolver) findEntries(ctx context.Context, repoURL, chartName string) (*chartEntries, *indexState, int, error) {
	u := indexURL(repoURL)
	old := r.kept(u)
	var (
		known *chartEntries
		hdr   http.Header
	)
	if old != nil {
		if known = r.cache.get(cacheKey{old.key, chartName}); known != nil {
			hdr = old.conditional()
		}
	}
	resp, status, err := r.open(ctx, u, hdr, r.maxIndex)
	if err != nil {
		return nil, nil, status, err
	}
	if resp == nil {
		if known == nil {
			return nil, nil, status, fmt.Errorf("%w: HTTP %d to an unconditional request", ErrServer, status)
		}
		return known, old, status, nil
	}
	defer resp.Body.Close()
	st := &indexState{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}
	// The full-parse fallback reads the index again from the start.
	reopen := func() (io.ReadCloser, error) {
		again, status, err := r.open(ctx, u, nil, r.maxIndex)
		if err == nil && again == nil {
			err = fmt.Errorf("%w: HTTP %d to an unconditional request", ErrServer, status)
		}
		if err != nil {
			return nil, err
		}
		return again.Body, nil
	}
	r.mu.Lock()
	sums := r.cache.sums(r.revisions[u])
	r.mu.Unlock()
	e, err := readChartEntries(resp.Body, resp.ContentLength, r.maxIndex, indexWindow, chartName, reopen, sums)
	if err != nil {
		if !errors.Is(err, ErrInvalidIndex) && !errors.Is(err, ErrChartNotFound) {
			err = r.readErr(ctx, u, err)
		}
		return nil, nil, status, err
	}
	st.key, st.revision = sums.cacheKey(), sums.revision()
	return r.cache.put(cacheKey{st.key, chartName}, e), st, status, nil
}

// kept returns the last good index state of u, or nil.
func (r *HTTPResolver) kept(u string) *indexState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.indexes[u]
}

// keep remembers st as the last good index of u.
func (r *HTTPResolver) keep(u string, st *indexState) {
	r.mu.Lock()
	r.indexes[u] = st
	r.mu.Unlock()
}

// readErr classifies an error met while reading a response body: a
// cancelled context as itself, ErrTooLarge and already-typed errors as
// they are, anything else as ErrUnreachable.
func (r *HTTPResolver) readErr(ctx context.Context, u string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	for _, typed := range []error{ErrTooLarge, ErrUnreachable, ErrUnauthorized, ErrForbidden, ErrNotFound, ErrServer} {
		if errors.Is(err, typed) {
			return err
		}
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, redact.Error(err, u))
}

func (r *HTTPResolver) get(ctx context.Context, u string, limit int64) ([]byte, int, error) {
	resp, status, err := r.open(ctx, u, nil, limit)
	if err == nil && resp == nil {
		err = fmt.Errorf("%w: HTTP %d to an unconditional request", ErrServer, status)
	}
	if err != nil {
		return nil, status, err
	}
	defer resp.Body.Close()
	data, err := readCapped(resp.Body, limit)
	if err != nil {
		return nil, status, r.readErr(ctx, u, err)
	}
	return data, status, nil
}

// open does a GET and returns a 200 response, its body to be closed by the
// caller, once its announced length is within limit; a 304 gives a nil
// response and no error.
func (r *HTTPResolver) open(ctx context.Context, u string, hdr http.Header, limit int64) (*http.Response, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %w", ErrUnreachable, redact.Error(err, u))
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	// The client follows redirects itself, and its errors quote a
	// Location as the server sent it: a relative one ("/a.tgz?sig=…") has
	// no scheme for redact.Text to find, so every Location seen is
	// recorded and redacted by name.
	client, locations := recordLocations(r.client)
	resp, err := client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, 0, ctxErr
		}
		return nil, 0, fmt.Errorf("%w: %w", ErrUnreachable, redact.Error(err, append([]string{u}, *locations...)...))
	}
	if resp.StatusCode == http.StatusOK && resp.ContentLength <= limit {
		return resp, resp.StatusCode, nil
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return nil, resp.StatusCode, nil
	case resp.StatusCode != http.StatusOK:
		return nil, resp.StatusCode, statusError(resp.StatusCode)
	}
	return nil, resp.StatusCode, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, resp.ContentLength, limit)
}

// recordLocations returns a copy of c (sharing its transport, so its
// connections) that records the Location header of every response it
// receives, and where they are recorded.
func recordLocations(c *http.Client) (*http.Client, *[]string) {
	seen := new([]string)
	rt := c.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	cc := *c
	cc.Transport = locationRecorder{rt: rt, seen: seen}
	return &cc, seen
}

// locationRecorder is an http.RoundTripper that records the Location
// headers of the responses of rt. A client follows redirects one at a time,
// so it needs no lock.
type locationRecorder struct {
	rt   http.RoundTripper
	seen *[]string
}

func (l locationRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if resp != nil {
		if loc := resp.Header.Get("Location"); loc != "" {
			*l.seen = append(*l.seen, loc)
		}
	}
	return resp, err
}
