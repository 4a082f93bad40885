package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The secrets the credential tests put in URLs; none may be printed.
var secrets = []string{"fleetuser", "s3cret", "SECRET1", "SECRET2", "SECRET3"}

// assertNoSecrets checks every printed form of err, and the URL of any
// *url.Error errors.As finds in it.
func assertNoSecrets(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	forms := []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%s", err), fmt.Sprintf("%q", err)}
	var ue *url.Error
	if errors.As(err, &ue) {
		forms = append(forms, ue.URL, ue.Error())
	}
	for _, f := range forms {
		for _, s := range secrets {
			assert.NotContains(t, f, s, "printed error leaks a secret")
		}
	}
}

// setEntryURL makes the index list url as the archive of name's versions.
func setEntryURL(t testing.TB, tr *testRepo, name, u string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	f := &repo.IndexFile{}
	require.NoError(t, yaml.Unmarshal(tr.index, f))
	for _, cv := range f.Entries[name] {
		cv.URLs = []string{u}
	}
	b, err := yaml.Marshal(f)
	require.NoError(t, err)
	tr.index = b
}

// withCreds puts fleetuser:s3cret and a signed query in a server URL.
func withCreds(srvURL string) string {
	return strings.Replace(srvURL, "http://", "http://fleetuser:s3cret@", 1) + "/?token=SECRET1&sig=SECRET2"
}

// TestHTTPResolverErrorsRedactCredentials walks every error path of the
// HTTP resolver with a repository URL that carries a user, a password and
// a signed query, and chart URLs with signature tokens: no printed form
// of the error may hold any of them.
func TestHTTPResolverErrorsRedactCredentials(t *testing.T) {
	good := packageChart(t, "app", "1.0.0", nil)
	ctx := context.Background()
	block := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}
	tests := []struct {
		name    string
		setup   func(tr *testRepo, srvURL string)
		handler func(tr *testRepo, srvURL string) http.HandlerFunc // replaces the repository's
		repoURL func(srvURL string) string
		timeout time.Duration // spec.timeout
		client  *http.Client
		opts    HTTPOptions
		chart   string
		wantErr error
	}{
		{name: "index 401", setup: func(tr *testRepo, _ string) { tr.password = "other" }, wantErr: ErrUnauthorized},
		{name: "index 503", setup: func(tr *testRepo, _ string) { tr.status = 503 }, wantErr: ErrServer},
		{name: "connection refused", repoURL: func(string) string {
			return "http://fleetuser:s3cret@127.0.0.1:1/charts?token=SECRET1&sig=SECRET2"
		}, wantErr: ErrUnreachable},
		{name: "bad index", setup: func(tr *testRepo, _ string) { tr.setIndex([]byte("apiVersion: v1\nentries: [\n")) }, wantErr: ErrInvalidIndex},
		{name: "chart not in index", chart: "nope", wantErr: ErrChartNotFound},
		{name: "index over the cap", opts: HTTPOptions{MaxIndexSize: 64}, wantErr: ErrTooLarge},
		{name: "index timeout", timeout: 200 * time.Millisecond, handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "index.yaml") {
					block(w, r)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: context.DeadlineExceeded},
		{name: "client timeout", client: &http.Client{Timeout: 200 * time.Millisecond}, handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { block(w, r) }
		}, wantErr: ErrUnreachable},
		{name: "archive 404", setup: func(tr *testRepo, _ string) { delete(tr.files, "/charts/app-1.0.0.tgz") }, wantErr: ErrNotFound},
		{name: "signed archive URL 403", setup: func(tr *testRepo, srvURL string) {
			setEntryURL(t, tr, "app", srvURL+"/charts/app-1.0.0.tgz?sig=SECRET3")
			tr.status = 0
		}, handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ".tgz") {
					w.WriteHeader(http.StatusForbidden)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: ErrForbidden},
		{name: "signed archive URL with credentials refused", setup: func(tr *testRepo, _ string) {
			setEntryURL(t, tr, "app", "http://fleetuser:s3cret@127.0.0.1:1/app-1.0.0.tgz?sig=SECRET3")
		}, wantErr: ErrUnreachable},
		{name: "unparsable archive URL", setup: func(tr *testRepo, _ string) {
			setEntryURL(t, tr, "app", "http://fleetuser:s3cret@127.0.0.1:1/%zz?sig=SECRET3")
		}, wantErr: ErrInvalidIndex},
		{name: "unparsable repository URL", repoURL: func(srvURL string) string {
			return strings.Replace(srvURL, "http://", "http://fleetuser:s3cret@", 1) + "/%zz?token=SECRET1"
		}, wantErr: ErrUnsupportedSource},
		{name: "redirect to a refused host", handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ".tgz") {
					http.Redirect(w, r, "http://fleetuser:s3cret@127.0.0.1:1/app.tgz?X-Amz-Signature=SECRET3", http.StatusFound)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: ErrUnreachable},
		{name: "redirect loop", handler: func(tr *testRepo, srvURL string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ".tgz") {
					http.Redirect(w, r, srvURL+"/loop.tgz?sig=SECRET3", http.StatusFound)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: ErrUnreachable},
		{name: "relative redirect loop", handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ".tgz") {
					w.Header().Set("Location", "/loop.tgz?sig=SECRET3")
					w.WriteHeader(http.StatusFound)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: ErrUnreachable},
		{name: "unparsable relative redirect", handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ".tgz") {
					w.Header().Set("Location", "/%zz.tgz?sig=SECRET3")
					w.WriteHeader(http.StatusFound)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: ErrUnreachable},
		{name: "archive timeout", timeout: 300 * time.Millisecond, handler: func(tr *testRepo, _ string) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, ".tgz") {
					block(w, r)
					return
				}
				tr.serve(w, r)
			}
		}, wantErr: context.DeadlineExceeded},
		{name: "digest mismatch", setup: func(tr *testRepo, _ string) {
			tr.files["/charts/app-1.0.0.tgz"] = packageChart(t, "app", "1.0.0", map[string]string{"extra": "x"})
		}, wantErr: ErrDigestMismatch},
		{name: "archive over the cap", opts: HTTPOptions{MaxChartSize: 100}, wantErr: ErrTooLarge},
		{name: "not a chart", setup: func(tr *testRepo, _ string) { tr.add("app", "2.0.0", []byte("not gzip"), "") }, wantErr: ErrInvalidArchive},
		{name: "archive of another chart", setup: func(tr *testRepo, _ string) {
			tr.add("app", "2.0.0", packageChart(t, "other", "2.0.0", nil), "")
		}, wantErr: ErrInvalidArchive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRepo(t)
			tr.user, tr.password = "fleetuser", "s3cret"
			tr.add("app", "1.0.0", good, "")
			srv := tr.srv
			if tt.handler != nil {
				var h http.HandlerFunc
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(w, r) }))
				t.Cleanup(srv.Close)
				h = tt.handler(tr, srv.URL)
			}
			if tt.setup != nil {
				tt.setup(tr, srv.URL)
			}
			u := withCreds(srv.URL)
			if tt.repoURL != nil {
				u = tt.repoURL(srv.URL)
			}
			hr := helmRepo(u)
			if tt.timeout > 0 {
				hr.Spec.Timeout = &metav1.Duration{Duration: tt.timeout}
			}
			client := srv.Client()
			if tt.client != nil {
				client = tt.client
			}
			chartName := "app"
			if tt.chart != "" {
				chartName = tt.chart
			}
			start := time.Now()
			_, err := NewHTTPResolver(client, tt.opts).Resolve(ctx, Ref{Chart: chartName, HelmRepository: hr})
			t.Log(err)
			require.ErrorIs(t, err, tt.wantErr)
			assertNoSecrets(t, err)
			var se *Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, chartName, se.Chart)
			assert.Less(t, time.Since(start), 2*time.Second, "took too long")
			if tt.repoURL == nil {
				assert.Contains(t, err.Error(), srv.URL, "names the repository")
			}
		})
	}

	t.Run("IndexDigest", func(t *testing.T) {
		tr := newTestRepo(t)
		tr.user, tr.password = "fleetuser", "other"
		_, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).IndexDigest(ctx, withCreds(tr.srv.URL))
		require.ErrorIs(t, err, ErrUnauthorized)
		assertNoSecrets(t, err)
		_, err = NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).IndexDigest(ctx, "http://fleetuser:s3cret@127.0.0.1:1/?token=SECRET1")
		require.ErrorIs(t, err, ErrUnreachable)
		assertNoSecrets(t, err)
	})
}

// TestHTTPResolverKeepsTheRepositoryQuery: a repository URL with a signed
// query (an object store's SAS token) gets index.yaml in its path and
// keeps its query, as Helm builds the index URL.
func TestHTTPResolverKeepsTheRepositoryQuery(t *testing.T) {
	tr := newTestRepo(t)
	tr.add("app", "1.0.0", packageChart(t, "app", "1.0.0", nil), "")
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		seen = append(seen, r.URL.RequestURI())
		tr.mu.Unlock()
		tr.serve(w, r)
	}))
	t.Cleanup(srv.Close)
	got, err := NewHTTPResolver(srv.Client(), HTTPOptions{}).Resolve(context.Background(),
		Ref{Chart: "app", HelmRepository: helmRepo(srv.URL + "/?sv=1&sig=SECRET2")})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)
	assert.Equal(t, []string{"/index.yaml?sv=1&sig=SECRET2", "/charts/app-1.0.0.tgz?sv=1&sig=SECRET2"}, seen)
	assert.NotContains(t, got.URL+got.Source, "SECRET2")
}

// TestHTTPResolverChecksChartMetadata: an archive whose Chart.yaml names
// another chart or another version than the index entry it was resolved
// from is refused, naming both.
func TestHTTPResolverChecksChartMetadata(t *testing.T) {
	tests := []struct {
		name         string
		archiveName  string
		archiveVer   string
		want1, want2 string
	}{
		{"another chart", "other", "1.0.0", `"other"`, `"app"`},
		{"another version", "app", "9.9.9", "9.9.9", "1.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRepo(t)
			tr.add("app", "1.0.0", packageChart(t, tt.archiveName, tt.archiveVer, nil), "")
			_, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(context.Background(), Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)})
			require.ErrorIs(t, err, ErrInvalidArchive)
			assert.Contains(t, err.Error(), tt.want1)
			assert.Contains(t, err.Error(), tt.want2)
		})
	}
}

// manyEntries builds a chart archive with a Chart.yaml and n empty files.
func manyEntries(t testing.TB, n int) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	write := func(name, body string) {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	write("app/Chart.yaml", "apiVersion: v2\nname: app\nversion: 1.0.0\n")
	for i := range n {
		write(fmt.Sprintf("app/files/f%d", i), "")
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

// TestArchiveCaps: the number of entries and the size of the uncompressed
// stream (headers included, so empty files count) are capped.
func TestArchiveCaps(t *testing.T) {
	ctx := context.Background()
	t.Run("entries", func(t *testing.T) {
		tr := newTestRepo(t)
		tr.add("app", "1.0.0", manyEntries(t, 10_001), "")
		_, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)})
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Contains(t, err.Error(), "10000 entries")
		assert.Contains(t, err.Error(), `chart "app"`)
		var le *LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, LimitError{Chart: "app", What: LimitEntries, Limit: MaxChartEntries}, *le)
	})
	t.Run("uncompressed size counts headers", func(t *testing.T) {
		tr := newTestRepo(t)
		data := manyEntries(t, 500) // 250 KiB of headers, no content
		tr.add("app", "1.0.0", data, "")
		_, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{MaxChartSize: 64 << 10}).Resolve(ctx, Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)})
		require.ErrorIs(t, err, ErrTooLarge)
		assert.Contains(t, err.Error(), "65536 bytes")
		var le *LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, LimitError{Chart: "app", What: LimitSize, Limit: 64 << 10}, *le)
	})
	t.Run("under the caps", func(t *testing.T) {
		tr := newTestRepo(t)
		tr.add("app", "1.0.0", manyEntries(t, 100), "")
		got, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)})
		require.NoError(t, err)
		assert.Len(t, got.Chart.Files, 100)
	})
}

// TestLocalDirectoryLinks: a link that leaves the chart root is refused,
// naming the file; one inside the root is followed; special files are
// refused.
func TestLocalDirectoryLinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "hostname")
	require.NoError(t, os.WriteFile(outside, []byte("secret-host\n"), 0o600))
	mk := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "app")
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "values.yaml"), []byte("a: 1\n"), 0o600))
		return dir
	}
	ctx := context.Background()
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		wantErr string // "" = loads
		check   func(t *testing.T, c *Chart)
	}{
		{name: "link to a file outside", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "templates", "x.yaml")))
		}, wantErr: "templates/x.yaml"},
		{name: "relative link climbing out", setup: func(t *testing.T, dir string) {
			rel, err := filepath.Rel(filepath.Join(dir, "templates"), outside)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(rel, "../"))
			require.NoError(t, os.Symlink(rel, filepath.Join(dir, "templates", "x.yaml")))
		}, wantErr: "templates/x.yaml"},
		{name: "link to a directory outside", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink(filepath.Dir(outside), filepath.Join(dir, "files")))
		}, wantErr: "files"},
		{name: "link inside the root", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "shared.tpl"), []byte("{{/* shared */}}"), 0o600))
			require.NoError(t, os.Symlink("../shared.tpl", filepath.Join(dir, "templates", "_shared.tpl")))
		}, check: func(t *testing.T, c *Chart) {
			names := []string{}
			for _, f := range c.Chart.Templates {
				names = append(names, f.Name)
			}
			assert.Contains(t, names, "templates/_shared.tpl")
		}},
		{name: "link cycle", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("..", filepath.Join(dir, "templates", "loop")))
		}, wantErr: "templates/loop"},
		{name: "dangling link", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.Symlink("nowhere", filepath.Join(dir, "templates", "gone.yaml")))
		}, wantErr: "templates/gone.yaml"},
		{name: "fifo", setup: func(t *testing.T, dir string) {
			mkfifo(t, filepath.Join(dir, "templates", "pipe.yaml"))
		}, wantErr: "templates/pipe.yaml"},
		{name: "ignored link outside", setup: func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".helmignore"), []byte("ignored/\n"), 0o600))
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "ignored"), 0o755))
			require.NoError(t, os.Symlink(outside, filepath.Join(dir, "ignored", "x")))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := mk(t)
			tt.setup(t, dir)
			got, err := NewLocalResolver(0).Resolve(ctx, Ref{Path: dir})
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalidArchive)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			for _, f := range append(got.Chart.Templates, got.Chart.Files...) {
				assert.NotContains(t, string(f.Data), "secret-host")
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

// TestOCIResolverErrorsRedactCredentials walks the OCI resolver's error
// paths with repository URLs that carry credentials or a query.
func TestOCIResolverErrorsRedactCredentials(t *testing.T) {
	host := newTestRegistry(t, "", "")
	client := newRegistryClient(t)
	push(t, client, host, "app", "1.0.0", nil)
	authHost := newTestRegistry(t, "fleetuser", "s3cret")
	ctx := context.Background()
	oci := func(u string, ref *OCIRepositoryRef) Ref {
		return Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: u, Reference: ref}}}
	}
	tests := []struct {
		name    string
		ref     Ref
		opts    []registry.ClientOption
		max     int64
		wantErr error
	}{
		{name: "userinfo in the URL", wantErr: ErrUnsupportedSource, ref: oci("oci://fleetuser:s3cret@"+host+"/charts/app", &OCIRepositoryRef{Tag: "1.0.0"})},
		{name: "userinfo when listing tags", wantErr: ErrUnsupportedSource, ref: oci("oci://fleetuser:s3cret@"+host+"/charts/app", &OCIRepositoryRef{SemVer: "1.x"})},
		{name: "query in the URL", wantErr: ErrUnsupportedSource, ref: oci("oci://"+host+"/charts/app?token=SECRET1&sig=SECRET2", &OCIRepositoryRef{SemVer: "1.x"})},
		{name: "unreachable", wantErr: ErrUnsupportedSource, ref: oci("oci://fleetuser:s3cret@127.0.0.1:1/charts/app", &OCIRepositoryRef{Tag: "1.0.0"})},
		{name: "unreachable helm repository", wantErr: ErrUnsupportedSource, ref: Ref{Chart: "app", Version: "1.x",
			HelmRepository: &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://fleetuser:s3cret@127.0.0.1:1/charts?token=SECRET1"}}}},
		{name: "unknown digest", wantErr: ErrUnsupportedSource, ref: oci("oci://fleetuser:s3cret@"+host+"/charts/app", &OCIRepositoryRef{Digest: "sha256:" + strings.Repeat("0", 64)})},
		{name: "oversized", ref: oci("oci://"+host+"/charts/app", &OCIRepositoryRef{Tag: "1.0.0"}), max: 100, wantErr: ErrTooLarge},
		{name: "no matching tag", ref: oci("oci://"+host+"/charts/app", &OCIRepositoryRef{SemVer: "7.x"}), wantErr: ErrNoMatchingVersion},
		{name: "unauthorized", ref: oci("oci://"+authHost+"/charts/app", &OCIRepositoryRef{Tag: "1.0.0"}),
			opts: []registry.ClientOption{registry.ClientOptBasicAuth("fleetuser", "SECRET3")}, wantErr: ErrUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t, tt.opts...), MaxChartSize: tt.max}).Resolve(ctx, tt.ref)
			t.Log(err)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			}
			assertNoSecrets(t, err)
			var se *Error
			require.ErrorAs(t, err, &se)
		})
	}
}

// TestOCIResolverChecksChartMetadata: a chart pushed under another
// chart's name or another version's tag is refused, naming both.
func TestOCIResolverChecksChartMetadata(t *testing.T) {
	host := newTestRegistry(t, "", "")
	client := newRegistryClient(t)
	loose := func(name, version, ref string) {
		_, err := client.Push(packageChart(t, name, version, nil), host+ref, registry.PushOptStrictMode(false))
		require.NoError(t, err)
	}
	loose("app", "9.9.9", "/charts/app:1.0.0")
	loose("other", "1.0.0", "/charts/app:1.1.0")
	loose("app", "2.0.0", "/charts/app:stable")
	r := newOCIResolver(t)
	ctx := context.Background()
	helmRepoOCI := &HelmRepository{Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts"}}

	_, err := r.Resolve(ctx, Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app", Reference: &OCIRepositoryRef{Tag: "1.0.0"}}}})
	require.ErrorIs(t, err, ErrInvalidArchive)
	assert.Contains(t, err.Error(), `"9.9.9"`)
	assert.Contains(t, err.Error(), `"1.0.0"`)

	_, err = r.Resolve(ctx, Ref{Chart: "app", Version: "1.1.0", HelmRepository: helmRepoOCI})
	require.ErrorIs(t, err, ErrInvalidArchive)
	assert.Contains(t, err.Error(), `"other"`)
	assert.Contains(t, err.Error(), `"app"`)

	got, err := r.Resolve(ctx, Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app", Reference: &OCIRepositoryRef{Tag: "stable"}}}})
	require.NoError(t, err)
	assert.Equal(t, "2.0.0", got.Version, "a tag that is not a version reports the chart's")
}

// TestLocalDirectoryCaps: a chart directory is read within the same caps
// as an archive.
func TestLocalDirectoryCaps(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("x"), 4096), 0o600))
	_, err := NewLocalResolver(1024).Resolve(context.Background(), Ref{Path: dir})
	require.ErrorIs(t, err, ErrTooLarge)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, LimitError{Chart: "app", What: LimitSize, Limit: 1024}, *le)

	got, err := NewLocalResolver(0).Resolve(context.Background(), Ref{Path: dir})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)
}

// TestLocalDirectorySwappedFile: a file swapped for a link to outside the
// chart directory (or for a FIFO) after the walk checked it and before it
// is read is not followed: the read goes through the directory's root.
func TestLocalDirectorySwappedFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "hostname")
	require.NoError(t, os.WriteFile(outside, []byte("secret-host\n"), 0o600))
	tests := []struct {
		name string
		swap func(t *testing.T, p string)
		want string
	}{
		{name: "link to outside", swap: func(t *testing.T, p string) {
			require.NoError(t, os.Symlink(outside, p))
		}, want: "templates/x.yaml"},
		{name: "fifo", swap: func(t *testing.T, p string) { mkfifo(t, p) }, want: "templates/x.yaml changed while it was read"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "app")
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "templates"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("apiVersion: v2\nname: app\nversion: 1.0.0\n"), 0o600))
			target := filepath.Join(dir, "templates", "x.yaml")
			require.NoError(t, os.WriteFile(target, []byte("kind: ConfigMap\n"), 0o600))
			c, err := loadDirHooked(dir, DefaultMaxChartSize, func(rel string) {
				if rel == "templates/x.yaml" {
					require.NoError(t, os.Remove(target))
					tt.swap(t, target)
				}
			})
			if err == nil {
				for _, f := range c.Templates {
					assert.NotContains(t, string(f.Data), "secret-host", "read through the swapped link")
				}
			}
			require.ErrorIs(t, err, ErrInvalidArchive)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
