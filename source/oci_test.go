package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"helm.sh/helm/v3/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/helmfleet/helmfleet/internal/ocitest"
)

// newTestRegistry starts a real distribution registry in-process with
// in-memory storage, behind htpasswd auth when user is set, and returns
// its host:port.
func newTestRegistry(t *testing.T, user, password string) string {
	t.Helper()
	srv := httptest.NewServer(registryApp(t, user, password))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// registryApp is a distribution registry with in-memory storage, behind
// htpasswd auth when user is set.
func registryApp(t *testing.T, user, password string) http.Handler {
	t.Helper()
	return ocitest.App(t, user, password)
}

// registryOptions are the registry client options of the tests: plain
// HTTP, and a credentials file of the test's own, then opts.
func registryOptions(t *testing.T, opts ...registry.ClientOption) []registry.ClientOption {
	t.Helper()
	return append([]registry.ClientOption{
		registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")),
	}, opts...)
}

func newRegistryClient(t *testing.T, opts ...registry.ClientOption) *registry.Client {
	t.Helper()
	c, err := registry.NewClient(registryOptions(t, opts...)...)
	require.NoError(t, err)
	return c
}

// newOCIResolver returns a resolver with the tests' registry options.
func newOCIResolver(t *testing.T, opts ...registry.ClientOption) *OCIResolver {
	t.Helper()
	return NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t, opts...)})
}

func push(t *testing.T, c *registry.Client, host, name, version string, files map[string]string) string {
	t.Helper()
	res, err := c.Push(packageChart(t, name, version, files), fmt.Sprintf("%s/charts/%s:%s", host, name, version))
	require.NoError(t, err)
	return res.Manifest.Digest
}

func TestOCIResolver(t *testing.T) {
	host := newTestRegistry(t, "", "")
	client := newRegistryClient(t)
	d100 := push(t, client, host, "app", "1.0.0", nil)
	push(t, client, host, "app", "1.1.0", map[string]string{"values-prod.yaml": "prod: true\n"})
	push(t, client, host, "app", "1.2.0-rc.1", nil)
	push(t, client, host, "app", "0.9.0+build.7", nil)
	r := newOCIResolver(t)
	ctx := context.Background()
	ociRepo := func(ref *OCIRepositoryRef) *OCIRepository {
		return &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app", Reference: ref}}
	}
	tests := []struct {
		name        string
		ref         Ref
		wantVersion string
		wantDigest  string
		wantErr     error
	}{
		{name: "tag", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{Tag: "1.0.0"})}, wantVersion: "1.0.0", wantDigest: d100},
		{name: "semver range lists tags", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "1.x"})}, wantVersion: "1.1.0"},
		{name: "semver with pre-releases", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: ">=1.0.0-0"})}, wantVersion: "1.2.0-rc.1"},
		{name: "semverFilter keeps only matching tags", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: ">=1.0.0-0", SemverFilter: "^1\\.[01]\\."})}, wantVersion: "1.1.0"},
		{name: "semverFilter for pre-releases only", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: ">=0.0.0-0", SemverFilter: "-rc"})}, wantVersion: "1.2.0-rc.1"},
		{name: "semverFilter applies to a concrete version too", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "1.0.0", SemverFilter: "^0\\."})}, wantErr: ErrNoMatchingVersion},
		{name: "semverFilter matches the tag as written", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "*", SemverFilter: "_build"})}, wantVersion: "0.9.0+build.7"},
		{name: "underscore tag is build metadata", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "<1.0.0"})}, wantVersion: "0.9.0+build.7"},
		{name: "semver concrete version matches build metadata", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "0.9.0"})}, wantVersion: "0.9.0+build.7"},
		{name: "semver concrete version prefers the exact tag", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "1.0.0"})}, wantVersion: "1.0.0", wantDigest: d100},
		{name: "helm repository concrete version is the tag only", ref: Ref{Chart: "app", Version: "0.9.0",
			HelmRepository: &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts"}}}, wantErr: ErrNotFound},
		{name: "digest wins over semver", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{Digest: d100, SemVer: "1.x"})}, wantVersion: "1.0.0", wantDigest: d100},
		{name: "helm repository with constraint", ref: Ref{Chart: "app", Version: "~1.1",
			HelmRepository: &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: RepositoryTypeOCI}},
			ValuesFiles:    []string{"values-prod.yaml"}}, wantVersion: "1.1.0"},
		{name: "helm repository exact version is the tag", ref: Ref{Chart: "app", Version: "1.0.0",
			HelmRepository: &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts"}}}, wantVersion: "1.0.0", wantDigest: d100},
		{name: "no matching tag", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{SemVer: "5.x"})}, wantErr: ErrNoMatchingVersion},
		{name: "missing tag", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{Tag: "9.9.9"})}, wantErr: ErrNotFound},
		{name: "missing repository", ref: Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/nope", Reference: &OCIRepositoryRef{SemVer: "*"}}}}, wantErr: ErrNotFound},
		{name: "unknown digest", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{Digest: "sha256:" + strings.Repeat("0", 64)})}, wantErr: ErrNotFound},
		{name: "missing values file", ref: Ref{OCIRepository: ociRepo(&OCIRepositoryRef{Tag: "1.0.0"}), ValuesFiles: []string{"values-prod.yaml"}}, wantErr: ErrValuesFileMissing},
		{name: "unreachable", ref: Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://127.0.0.1:1/charts/app", Reference: &OCIRepositoryRef{Tag: "1.0.0"}}}}, wantErr: ErrUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Composite{OCI: r}.Resolve(ctx, tt.ref)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				var se *Error
				require.ErrorAs(t, err, &se)
				assert.Contains(t, se.Source, "oci://")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantVersion, got.Version)
			assert.Equal(t, tt.wantVersion, got.Chart.Metadata.Version)
			assert.True(t, strings.HasPrefix(got.Digest, "sha256:"))
			if tt.wantDigest != "" {
				assert.Equal(t, tt.wantDigest, got.Digest)
			}
			assert.Len(t, got.ValuesFiles, len(tt.ref.ValuesFiles))
		})
	}

	t.Run("a re-pushed tag is a new digest", func(t *testing.T) {
		ref := Ref{OCIRepository: ociRepo(&OCIRepositoryRef{Tag: "1.0.0"})}
		before, err := r.Resolve(ctx, ref)
		require.NoError(t, err)
		push(t, client, host, "app", "1.0.0", map[string]string{"NOTES.txt": "changed"})
		after, err := r.Resolve(ctx, ref)
		require.NoError(t, err)
		assert.NotEqual(t, before.Digest, after.Digest)
	})
}

// An OCIRepository's tags are read as the registry spells them, as Flux
// reads them: "v1.5.0" is a version, "1.6" is none; an OCI HelmRepository
// sees Helm's list (strict semver without "v"), as Flux's does.
func TestOCIResolverReadsTagsAsListed(t *testing.T) {
	host := newTestRegistry(t, "", "")
	client := newRegistryClient(t)
	for _, v := range []string{"1.0.0", "v1.5.0", "1.6"} {
		push(t, client, host, "app", v, nil)
	}
	r := newOCIResolver(t)
	ctx := context.Background()
	ociRepo := func(ref *OCIRepositoryRef) Ref {
		return Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app", Reference: ref}}}
	}
	tests := []struct {
		name string
		ref  Ref
		want string
	}{
		{name: "v prefix is a version", ref: ociRepo(&OCIRepositoryRef{SemVer: ">=1.0.0"}), want: "v1.5.0"},
		{name: "filter over the tag as listed", ref: ociRepo(&OCIRepositoryRef{SemVer: "*", SemverFilter: "^v"}), want: "v1.5.0"},
		{name: "partial tag is no version", ref: ociRepo(&OCIRepositoryRef{SemVer: "*", SemverFilter: "^1"}), want: "1.0.0"},
		{name: "helm repository lists through Helm", ref: Ref{Chart: "app", Version: ">=1.0.0",
			HelmRepository: &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: RepositoryTypeOCI}}}, want: "1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Composite{OCI: r}.Resolve(ctx, tt.ref)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Version)
			assert.Equal(t, tt.want, got.Chart.Metadata.Version)
			assert.True(t, strings.HasSuffix(got.URL, "/charts/app:"+tt.want), got.URL)
		})
	}
}

func TestOCIResolverCredentials(t *testing.T) {
	host := newTestRegistry(t, "fleet", "s3cret")
	authed := newRegistryClient(t, registry.ClientOptBasicAuth("fleet", "s3cret"))
	push(t, authed, host, "private", "2.0.0", nil)
	ref := Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/private", Reference: &OCIRepositoryRef{SemVer: "2.x"}}}}
	ctx := context.Background()

	got, err := newOCIResolver(t, registry.ClientOptBasicAuth("fleet", "s3cret")).Resolve(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, "2.0.0", got.Version)

	_, err = newOCIResolver(t, registry.ClientOptBasicAuth("fleet", "wrong")).Resolve(ctx, ref)
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.NotContains(t, err.Error(), "wrong")
}

// stallingRegistry serves a real registry, except that the requests stall
// matches stall after handle has begun an answer (nil: none). It returns the
// registry's host:port and a switch that turns stalling on.
func stallingRegistry(t *testing.T, stall func(*http.Request) bool, handle stallHandler) (string, *atomic.Bool) {
	t.Helper()
	app := registryApp(t, "", "")
	on := &atomic.Bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !on.Load() || !stall(r) {
			app.ServeHTTP(w, r)
			return
		}
		if handle != nil {
			handle(app, w, r)
		}
		// Stalled: until the client hangs up, or long past any timeout
		// here, so that a pull nothing bounds shows.
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), on
}

// stallHandler begins the answer to a request that then stalls; app is
// the registry.
type stallHandler func(app http.Handler, w http.ResponseWriter, r *http.Request)

// trickle sends the headers of the registry's answer and half its body.
func trickle(app http.Handler, w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(body[:len(body)/2])
	w.(http.Flusher).Flush()
}

// TestOCIResolverTimeout: a registry that stalls while the resolver lists
// tags, fetches the manifest or reads the chart blob fails the resolution
// within the source's spec.timeout (or the caller's deadline), with an
// error naming the repository and the timeout, and leaves nothing running.
// Before the registry client's requests were bound to a context, each of
// these waited for the registry.
func TestOCIResolverTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	path := func(part string) func(*http.Request) bool {
		return func(r *http.Request) bool { return strings.Contains(r.URL.Path, part) }
	}
	tests := []struct {
		name     string
		stall    func(*http.Request) bool
		handle   stallHandler
		ref      func(host string) *OCIRepositoryRef
		deadline bool // the caller's deadline instead of spec.timeout
		wantOp   string
	}{
		{name: "tag list", stall: path("/tags/list"), ref: func(string) *OCIRepositoryRef { return &OCIRepositoryRef{SemVer: "1.x"} }, wantOp: "list tags"},
		{name: "manifest", stall: path("/manifests/"), ref: func(string) *OCIRepositoryRef { return &OCIRepositoryRef{Tag: "1.0.0"} }, wantOp: "pull chart"},
		{name: "chart blob", stall: path("/blobs/"), ref: func(string) *OCIRepositoryRef { return &OCIRepositoryRef{SemVer: "1.x"} }, wantOp: "pull chart"},
		{name: "chart blob trickles", stall: path("/blobs/"), handle: trickle, ref: func(string) *OCIRepositoryRef { return &OCIRepositoryRef{Tag: "1.0.0"} }, wantOp: "pull chart"},
		{name: "manifest trickles", stall: path("/manifests/"), handle: trickle, ref: func(string) *OCIRepositoryRef { return &OCIRepositoryRef{Tag: "1.0.0"} }, wantOp: "pull chart"},
		{name: "caller's deadline", stall: path("/manifests/"), deadline: true, ref: func(string) *OCIRepositoryRef { return &OCIRepositoryRef{Tag: "1.0.0"} }, wantOp: "pull chart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, stalling := stallingRegistry(t, tt.stall, tt.handle)
			push(t, newRegistryClient(t), host, "app", "1.0.0", nil)
			stalling.Store(true)
			repo := &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app", Reference: tt.ref(host)}}
			if !tt.deadline {
				repo.Spec.Timeout = &metav1.Duration{Duration: timeout}
			}
			r := newOCIResolver(t)
			leaks := goleak.IgnoreCurrent()

			start := time.Now()
			ctx := context.Background()
			if tt.deadline {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			_, err := r.Resolve(ctx, Ref{OCIRepository: repo})
			elapsed := time.Since(start)
			t.Log(err)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			var se *Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.wantOp, se.Op)
			assert.Equal(t, "oci://"+host+"/charts/app", se.Source)
			assert.Contains(t, err.Error(), "from oci://"+host+"/charts/app")
			if tt.deadline {
				assert.NotContains(t, err.Error(), "spec.timeout")
			} else {
				assert.Contains(t, err.Error(), "spec.timeout 300ms exceeded")
			}
			assert.GreaterOrEqual(t, elapsed, timeout)
			assert.Less(t, elapsed, timeout+time.Second, "the stalled pull outlived the timeout")
			// The registry's side of the connection is not ours.
			goleak.VerifyNone(t, leaks, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
		})
	}

	t.Run("an OCI HelmRepository's timeout", func(t *testing.T) {
		host, stalling := stallingRegistry(t, path("/manifests/"), nil)
		push(t, newRegistryClient(t), host, "app", "1.0.0", nil)
		stalling.Store(true)
		repo := &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: RepositoryTypeOCI, Timeout: &metav1.Duration{Duration: timeout}}}
		start := time.Now()
		_, err := newOCIResolver(t).Resolve(context.Background(), Ref{Chart: "app", Version: "1.0.0", HelmRepository: repo})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), "spec.timeout 300ms exceeded")
		assert.Contains(t, err.Error(), "from oci://"+host+"/charts")
		assert.Less(t, time.Since(start), timeout+time.Second)
	})

	t.Run("within the timeout", func(t *testing.T) {
		host := newTestRegistry(t, "", "")
		push(t, newRegistryClient(t), host, "app", "1.0.0", nil)
		r := newOCIResolver(t)
		leaks := goleak.IgnoreCurrent()
		got, err := r.Resolve(context.Background(), Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{
			URL: "oci://" + host + "/charts/app", Reference: &OCIRepositoryRef{SemVer: "1.x"}, Timeout: &metav1.Duration{Duration: 10 * time.Second}}}})
		require.NoError(t, err)
		assert.Equal(t, "1.0.0", got.Version)
		// The resolution's own transport closed its connections.
		goleak.VerifyNone(t, leaks, goleak.IgnoreAnyFunction("net/http.(*conn).serve"))
	})
}

// countingTransport counts the requests it carries.
type countingTransport struct {
	n atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

// TestOCIResolverHTTPClient: the caller's HTTP client carries the
// registry's requests, still bound by spec.timeout; an authorizer with an
// HTTP client of its own, which nothing could bound, is refused.
func TestOCIResolverHTTPClient(t *testing.T) {
	host, stalling := stallingRegistry(t, func(r *http.Request) bool { return strings.Contains(r.URL.Path, "/blobs/") }, nil)
	push(t, newRegistryClient(t), host, "app", "1.0.0", nil)
	ref := func(timeout time.Duration) Ref {
		return Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app",
			Reference: &OCIRepositoryRef{Tag: "1.0.0"}, Timeout: &metav1.Duration{Duration: timeout}}}}
	}
	ctx := context.Background()

	ct := &countingTransport{}
	r := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t), HTTPClient: &http.Client{Transport: ct}})
	got, err := r.Resolve(ctx, ref(10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)
	assert.Positive(t, ct.n.Load(), "the caller's transport carried the requests")

	stalling.Store(true)
	start := time.Now()
	_, err = r.Resolve(ctx, ref(300*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 1300*time.Millisecond)
	stalling.Store(false)

	own := auth.Client{Client: &http.Client{}}
	_, err = NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t, registry.ClientOptAuthorizer(own))}).Resolve(ctx, ref(10*time.Second))
	require.ErrorIs(t, err, ErrUnsupportedSource)
	assert.Contains(t, err.Error(), "ClientOptAuthorizer")
}

// TestOCIResolverNestedChartName: a chart in a nested registry path is
// named by the reference's last element, as Helm names it. The chart
// "grafana" at oci://host/my_repo/another/grafana, asked of the repository
// oci://host/my_repo as "another/grafana", is the one resolved; a chart
// named otherwise at that path is still refused.
func TestOCIResolverNestedChartName(t *testing.T) {
	host := newTestRegistry(t, "", "")
	client := newRegistryClient(t)
	_, err := client.Push(packageChart(t, "grafana", "6.17.4", nil), host+"/my_repo/another/grafana:6.17.4")
	require.NoError(t, err)
	_, err = client.Push(packageChart(t, "helmchart", "6.17.5", nil), host+"/my_repo/another/grafana:6.17.5", registry.PushOptStrictMode(false))
	require.NoError(t, err)
	repo := &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/my_repo", Type: RepositoryTypeOCI}}
	r := newOCIResolver(t)
	ctx := context.Background()

	got, err := r.Resolve(ctx, Ref{Chart: "another/grafana", Version: "6.17.4", HelmRepository: repo})
	require.NoError(t, err)
	assert.Equal(t, "grafana", got.Chart.Name())
	assert.Equal(t, "6.17.4", got.Version)

	_, err = r.Resolve(ctx, Ref{Chart: "another/grafana", Version: "6.17.5", HelmRepository: repo})
	require.ErrorIs(t, err, ErrChartMismatch)
	assert.Contains(t, err.Error(), `Chart.yaml names chart "helmchart", resolved as chart "grafana" (the last element of "another/grafana")`)
}
