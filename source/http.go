package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/repo"
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
// are the caller's business), revalidates it with ETag / Last-Modified,
// resolves the chart from it without decoding the rest of the index
// (FindChartVersion), downloads the archive, verifies its digest against the
// index entry and loads it with Helm's loader. Only verified bytes are kept.
// HelmRepository.Spec.Timeout, when set, bounds the index download. The
// last good index of every repository is kept in memory, so that a 304
// answer can serve charts not resolved before. It is safe for concurrent
// use.
type HTTPResolver struct {
	client   *http.Client
	maxIndex int64
	maxChart int64
	cache    *IndexCache

	mu      sync.Mutex
	indexes map[string]*indexState // by index URL
}

// indexState is the last good copy of one repository's index.
type indexState struct {
	etag, lastModified string
	digest             string
	raw                []byte
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
		client:   client,
		maxIndex: opts.MaxIndexSize,
		maxChart: opts.MaxChartSize,
		cache:    opts.Cache,
		indexes:  map[string]*indexState{},
	}
}

// Resolve implements Resolver for a Ref with an HTTP(S) HelmRepository.
func (r *HTTPResolver) Resolve(ctx context.Context, ref Ref) (*Chart, error) {
	ref = ref.normalize()
	if ref.HelmRepository == nil || isOCIRepository(ref.HelmRepository) {
		return nil, &Error{Op: "resolve", Chart: ref.Chart, Constraint: ref.Version,
			Err: fmt.Errorf("%w: HTTPResolver needs an HTTP(S) HelmRepository", ErrUnsupportedSource)}
	}
	repoURL := ref.HelmRepository.Spec.URL
	fail := func(op string, status int, err error) error {
		return &Error{Op: op, Source: Redact(repoURL), Chart: ref.Chart, Constraint: ref.Version, StatusCode: status, Err: err}
	}
	if ref.Chart == "" {
		return nil, fail("resolve", 0, fmt.Errorf("%w: chart name is empty", ErrChartNotFound))
	}
	fetchCtx := ctx
	if t := ref.HelmRepository.Spec.Timeout; t != nil && t.Duration > 0 {
		var cancel context.CancelFunc
		fetchCtx, cancel = context.WithTimeout(ctx, t.Duration)
		defer cancel()
	}
	st, status, err := r.fetchIndex(fetchCtx, repoURL)
	if err != nil {
		return nil, fail("fetch index", status, err)
	}
	cv, err := r.cache.Find(st.digest, st.raw, ref.Chart, ref.Version)
	if err != nil {
		return nil, fail("select version", 0, err)
	}
	r.keep(indexURL(repoURL), st)
	if len(cv.URLs) == 0 {
		return nil, fail("download chart", 0, fmt.Errorf("%w: version %s lists no URL", ErrInvalidIndex, cv.Version))
	}
	archiveURL, err := repo.ResolveReferenceURL(repoURL, cv.URLs[0])
	if err != nil {
		return nil, fail("download chart", 0, fmt.Errorf("%w: %v", ErrInvalidIndex, err))
	}
	data, status, err := r.get(ctx, archiveURL, nil, r.maxChart)
	if err != nil {
		return nil, fail("download chart", status, err)
	}
	if err := verifyDigest(data, cv.Digest); err != nil {
		return nil, fail("download chart", 0, err)
	}
	la, err := loadArchive(data, r.maxChart)
	if err != nil {
		return nil, fail("load chart", 0, err)
	}
	return finish(&Chart{
		Chart:      la.chart,
		Version:    cv.Version,
		Digest:     la.digest,
		Source:     Redact(repoURL),
		SourceKind: KindHelmRepository,
		URL:        Redact(archiveURL),
	}, ref, func(err error) error { return fail("read values files", 0, err) })
}

// IndexDigest fetches (or revalidates) a repository's index and returns the
// digest of its bytes, Flux's revision of a HelmRepository.
func (r *HTTPResolver) IndexDigest(ctx context.Context, repoURL string) (string, error) {
	st, status, err := r.fetchIndex(ctx, repoURL)
	if err != nil {
		return "", &Error{Op: "fetch index", Source: Redact(repoURL), StatusCode: status, Err: err}
	}
	return st.digest, nil
}

func indexURL(repoURL string) string { return strings.TrimSuffix(repoURL, "/") + "/index.yaml" }

// fetchIndex returns the current index, revalidating a kept copy with a
// conditional request. A fresh copy is kept only once it proved usable
// (see keep), so a failed or malformed download never replaces a good one.
func (r *HTTPResolver) fetchIndex(ctx context.Context, repoURL string) (*indexState, int, error) {
	u := indexURL(repoURL)
	r.mu.Lock()
	old := r.indexes[u]
	r.mu.Unlock()
	var hdr http.Header
	if old != nil {
		hdr = http.Header{}
		if old.etag != "" {
			hdr.Set("If-None-Match", old.etag)
		}
		if old.lastModified != "" {
			hdr.Set("If-Modified-Since", old.lastModified)
		}
	}
	var st *indexState
	data, status, err := r.getWith(ctx, u, hdr, r.maxIndex, func(resp *http.Response) {
		st = &indexState{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified")}
	})
	if status == http.StatusNotModified && old != nil {
		return old, status, nil
	}
	if err != nil {
		return nil, status, err
	}
	if st == nil {
		return nil, status, fmt.Errorf("%w: HTTP %d to an unconditional request", ErrServer, status)
	}
	st.raw = data
	st.digest = sha256Digest(data)
	return st, status, nil
}

// keep remembers st as the last good index of u.
func (r *HTTPResolver) keep(u string, st *indexState) {
	r.mu.Lock()
	r.indexes[u] = st
	r.mu.Unlock()
}

func (r *HTTPResolver) get(ctx context.Context, u string, hdr http.Header, limit int64) ([]byte, int, error) {
	return r.getWith(ctx, u, hdr, limit, nil)
}

// getWith does a GET and reads a 200 body up to limit bytes; onOK sees the
// response headers first.
func (r *HTTPResolver) getWith(ctx context.Context, u string, hdr http.Header, limit int64, onOK func(*http.Response)) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrUnreachable, redactErr(err, u))
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, 0, ctxErr
		}
		return nil, 0, fmt.Errorf("%w: %v", ErrUnreachable, redactErr(err, u))
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified {
		return nil, resp.StatusCode, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, statusError(resp.StatusCode)
	}
	if resp.ContentLength > limit {
		return nil, resp.StatusCode, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, resp.ContentLength, limit)
	}
	if onOK != nil {
		onOK(resp)
	}
	data, err := readCapped(resp.Body, limit)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, resp.StatusCode, err
		}
		return nil, resp.StatusCode, fmt.Errorf("%w: %v", ErrUnreachable, redactErr(err, u))
	}
	return data, resp.StatusCode, nil
}

// redactErr removes credentials that net/http may quote from the URL.
func redactErr(err error, u string) string {
	msg := err.Error()
	if red := Redact(u); red != u {
		msg = strings.ReplaceAll(msg, u, red)
	}
	return msg
}
