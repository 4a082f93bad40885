package source

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// packageChart builds a real chart archive with Helm's chartutil.Save.
func packageChart(t testing.TB, name, version string, files map[string]string) []byte {
	t.Helper()
	c := &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: name, Version: version},
		Templates: []*chart.File{{Name: "templates/configmap.yaml",
			Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  color: {{ .Values.color | quote }}\n")}},
		Raw: []*chart.File{{Name: "values.yaml", Data: []byte("color: red\n")}},
	}
	for n, d := range files {
		c.Files = append(c.Files, &chart.File{Name: n, Data: []byte(d)})
	}
	dir := t.TempDir()
	p, err := chartutil.Save(c, dir)
	require.NoError(t, err)
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	return data
}

func hexDigest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// testRepo is a real Helm HTTP repository served by httptest.
type testRepo struct {
	t        testing.TB
	srv      *httptest.Server
	mu       sync.Mutex
	index    []byte
	files    map[string][]byte
	status   int // if set, every request gets it
	user     string
	password string
	requests map[string]int
	notMod   int
	// lastModified, when set, replaces ETag validation.
	lastModified string
}

func newTestRepo(t testing.TB) *testRepo {
	r := &testRepo{t: t, files: map[string][]byte{}, requests: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *testRepo) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests[req.URL.Path]++
	if r.user != "" {
		u, p, ok := req.BasicAuth()
		if !ok || u != r.user || p != r.password {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
	}
	if r.status != 0 {
		w.WriteHeader(r.status)
		return
	}
	if req.URL.Path == "/index.yaml" {
		if r.lastModified != "" {
			if req.Header.Get("If-Modified-Since") == r.lastModified {
				r.notMod++
				w.WriteHeader(http.StatusNotModified)
				return
			}
			w.Header().Set("Last-Modified", r.lastModified)
			_, _ = w.Write(r.index)
			return
		}
		etag := `"` + hexDigest(r.index) + `"`
		if req.Header.Get("If-None-Match") == etag {
			r.notMod++
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		_, _ = w.Write(r.index)
		return
	}
	data, ok := r.files[req.URL.Path]
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	_, _ = w.Write(data)
}

// add packages a chart, serves it and lists it in the index; digest
// overrides the index digest when not empty.
func (r *testRepo) add(name, version string, data []byte, digest string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := fmt.Sprintf("/charts/%s-%s.tgz", name, version)
	r.files[p] = data
	f := &repo.IndexFile{APIVersion: "v1", Entries: map[string]repo.ChartVersions{}}
	if len(r.index) > 0 {
		require.NoError(r.t, yaml.Unmarshal(r.index, f))
	}
	if digest == "" {
		digest = hexDigest(data)
	}
	f.Entries[name] = append(f.Entries[name], &repo.ChartVersion{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: name, Version: version},
		URLs:     []string{strings.TrimPrefix(p, "/")},
		Digest:   digest,
		Created:  time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
	})
	b, err := yaml.Marshal(f)
	require.NoError(r.t, err)
	r.index = b
}

func (r *testRepo) setIndex(b []byte) {
	r.mu.Lock()
	r.index = b
	r.mu.Unlock()
}

func (r *testRepo) count(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests[path]
}

func helmRepo(url string) *HelmRepository {
	return &HelmRepository{Spec: HelmRepositorySpec{URL: url}}
}

func TestHTTPResolver(t *testing.T) {
	tr := newTestRepo(t)
	tr.add("podinfo", "6.5.0", packageChart(t, "podinfo", "6.5.0", nil), "")
	tr.add("podinfo", "6.5.4", packageChart(t, "podinfo", "6.5.4", map[string]string{
		"values-prod.yaml": "color: blue\n", "ci/values-a.yaml": "a: 1\n"}), "")
	tr.add("podinfo", "6.6.0-rc.1", packageChart(t, "podinfo", "6.6.0-rc.1", nil), "")
	r := NewHTTPResolver(tr.srv.Client(), HTTPOptions{})
	ctx := context.Background()

	got, err := r.Resolve(ctx, Ref{Chart: "podinfo", Version: "6.5.*", HelmRepository: helmRepo(tr.srv.URL),
		ValuesFiles: []string{"values-prod.yaml", "./values.yaml", "ci/values-a.yaml"}})
	require.NoError(t, err)
	assert.Equal(t, "6.5.4", got.Version)
	assert.Equal(t, "6.5.4", got.Chart.Metadata.Version)
	assert.Equal(t, "sha256:"+hexDigest(tr.files["/charts/podinfo-6.5.4.tgz"]), got.Digest)
	assert.Equal(t, KindHelmRepository, got.SourceKind)
	assert.Equal(t, tr.srv.URL, got.Source)
	assert.Equal(t, tr.srv.URL+"/charts/podinfo-6.5.4.tgz", got.URL)
	require.Len(t, got.ValuesFiles, 3)
	assert.Equal(t, ValuesFile{Name: "values-prod.yaml", Data: []byte("color: blue\n")}, got.ValuesFiles[0])
	assert.Equal(t, ValuesFile{Name: "./values.yaml", Data: []byte("color: red\n")}, got.ValuesFiles[1])
	assert.Equal(t, "ci/values-a.yaml", got.ValuesFiles[2].Name)

	t.Run("conditional request reuses the index", func(t *testing.T) {
		got, err := r.Resolve(ctx, Ref{Chart: "podinfo", Version: ">=6.0.0-0", HelmRepository: helmRepo(tr.srv.URL)})
		require.NoError(t, err)
		assert.Equal(t, "6.6.0-rc.1", got.Version)
		assert.Equal(t, 1, tr.notMod)
		assert.Equal(t, 2, tr.count("/index.yaml"))
	})
	t.Run("a changed index is fetched again", func(t *testing.T) {
		tr.add("podinfo", "6.5.9", packageChart(t, "podinfo", "6.5.9", nil), "")
		got, err := r.Resolve(ctx, Ref{Chart: "podinfo", Version: "6.5.x", HelmRepository: helmRepo(tr.srv.URL)})
		require.NoError(t, err)
		assert.Equal(t, "6.5.9", got.Version)
		assert.Equal(t, 1, tr.notMod)
	})
	t.Run("last-modified revalidation", func(t *testing.T) {
		lm := newTestRepo(t)
		lm.lastModified = "Mon, 01 Jan 2024 00:00:00 GMT"
		lm.add("app", "1.0.0", packageChart(t, "app", "1.0.0", nil), "")
		r := NewHTTPResolver(lm.srv.Client(), HTTPOptions{})
		for i := 0; i < 2; i++ {
			got, err := r.Resolve(ctx, Ref{Chart: "app", HelmRepository: helmRepo(lm.srv.URL)})
			require.NoError(t, err)
			assert.Equal(t, "1.0.0", got.Version)
		}
		assert.Equal(t, 1, lm.notMod)
	})
	t.Run("missing values file", func(t *testing.T) {
		ref := Ref{Chart: "podinfo", Version: "6.5.0", HelmRepository: helmRepo(tr.srv.URL), ValuesFiles: []string{"values.yaml", "nope.yaml"}}
		_, err := r.Resolve(ctx, ref)
		require.ErrorIs(t, err, ErrValuesFileMissing)
		assert.Contains(t, err.Error(), `valuesFiles[1]: "nope.yaml"`)
		ref.IgnoreMissingValuesFiles = true
		got, err := r.Resolve(ctx, ref)
		require.NoError(t, err)
		require.Len(t, got.ValuesFiles, 1)
		assert.Equal(t, "values.yaml", got.ValuesFiles[0].Name)
	})
	t.Run("HelmChart supplies chart, version and values files", func(t *testing.T) {
		hc := &HelmChart{Spec: HelmChartSpec{Chart: "podinfo", Version: "6.5.0", ValuesFiles: []string{"values.yaml"}}}
		got, err := Composite{HTTP: r}.Resolve(ctx, Ref{HelmChart: hc, HelmRepository: helmRepo(tr.srv.URL)})
		require.NoError(t, err)
		assert.Equal(t, "6.5.0", got.Version)
		assert.Len(t, got.ValuesFiles, 1)
	})
}

// tarball builds a gzipped tar from name/content pairs.
func tarball(t testing.TB, files ...string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i := 0; i < len(files); i += 2 {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: files[i], Mode: 0o644, Size: int64(len(files[i+1])), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(files[i+1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestHTTPResolverErrors(t *testing.T) {
	good := packageChart(t, "app", "1.0.0", nil)
	ctx := context.Background()
	tests := []struct {
		name       string
		setup      func(*testRepo)
		chart      string
		constraint string
		opts       HTTPOptions
		creds      string // user:password put in the URL
		wantErr    error
		wantStatus int
	}{
		{name: "missing chart", chart: "nope", constraint: "*", wantErr: ErrChartNotFound},
		{name: "no matching version", chart: "app", constraint: "2.x", wantErr: ErrNoMatchingVersion},
		{name: "invalid constraint", chart: "app", constraint: "!!", wantErr: ErrInvalidConstraint},
		{name: "malformed index", chart: "app", constraint: "*", setup: func(r *testRepo) { r.setIndex([]byte("apiVersion: v1\nentries: [\n")) }, wantErr: ErrInvalidIndex},
		{name: "index over the cap", chart: "app", constraint: "*", opts: HTTPOptions{MaxIndexSize: 64}, wantErr: ErrTooLarge, wantStatus: 200},
		{name: "digest mismatch", chart: "app", constraint: "*", setup: func(r *testRepo) {
			r.files["/charts/app-1.0.0.tgz"] = packageChart(t, "app", "1.0.0", map[string]string{"extra": "x"})
		}, wantErr: ErrDigestMismatch},
		{name: "oversized archive", chart: "app", constraint: "*", opts: HTTPOptions{MaxChartSize: 100}, wantErr: ErrTooLarge, wantStatus: 200},
		{name: "path traversal", chart: "evil", constraint: "*", setup: func(r *testRepo) {
			r.add("evil", "1.0.0", tarball(t, "evil/Chart.yaml", "apiVersion: v2\nname: evil\nversion: 1.0.0\n", "evil/../../escape.txt", "x"), "")
		}, wantErr: ErrInvalidArchive},
		{name: "not a chart", chart: "junk", constraint: "*", setup: func(r *testRepo) {
			r.add("junk", "1.0.0", []byte("not gzip"), "")
		}, wantErr: ErrInvalidArchive},
		{name: "archive missing", chart: "app", constraint: "*", setup: func(r *testRepo) { delete(r.files, "/charts/app-1.0.0.tgz") }, wantErr: ErrNotFound, wantStatus: 404},
		{name: "401", chart: "app", constraint: "*", setup: func(r *testRepo) { r.user, r.password = "u", "right" }, creds: "u:s3cret", wantErr: ErrUnauthorized, wantStatus: 401},
		{name: "403", chart: "app", constraint: "*", setup: func(r *testRepo) { r.status = 403 }, wantErr: ErrForbidden, wantStatus: 403},
		{name: "404", chart: "app", constraint: "*", setup: func(r *testRepo) { r.status = 404 }, wantErr: ErrNotFound, wantStatus: 404},
		{name: "503", chart: "app", constraint: "*", setup: func(r *testRepo) { r.status = 503 }, wantErr: ErrServer, wantStatus: 503},
		{name: "unreachable", chart: "app", constraint: "*", setup: func(r *testRepo) { r.srv.Close() }, creds: "u:s3cret", wantErr: ErrUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTestRepo(t)
			tr.add("app", "1.0.0", good, "")
			if tt.setup != nil {
				tt.setup(tr)
			}
			url := tr.srv.URL
			if tt.creds != "" {
				url = strings.Replace(url, "http://", "http://"+tt.creds+"@", 1)
			}
			r := NewHTTPResolver(tr.srv.Client(), tt.opts)
			_, err := r.Resolve(ctx, Ref{Chart: tt.chart, Version: tt.constraint, HelmRepository: helmRepo(url + "/")})
			require.ErrorIs(t, err, tt.wantErr)
			var se *Error
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tr.srv.URL+"/", se.Source)
			assert.Equal(t, tt.chart, se.Chart)
			assert.Equal(t, tt.constraint, se.Constraint)
			assert.Equal(t, tt.wantStatus, se.StatusCode)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.Contains(t, err.Error(), tr.srv.URL)
			assert.Contains(t, err.Error(), fmt.Sprintf("chart %q", tt.chart))
		})
	}
}

// TestHTTPResolverCachesNothingUnverified serves a tampered archive, then the
// right one: the second resolution must download and verify again, and a
// malformed index must not replace the last good one.
func TestHTTPResolverCachesNothingUnverified(t *testing.T) {
	tr := newTestRepo(t)
	good := packageChart(t, "app", "1.0.0", nil)
	tr.add("app", "1.0.0", good, "")
	tr.files["/charts/app-1.0.0.tgz"] = packageChart(t, "app", "1.0.0", map[string]string{"tampered": "yes"})
	r := NewHTTPResolver(tr.srv.Client(), HTTPOptions{})
	ctx := context.Background()
	ref := Ref{Chart: "app", HelmRepository: helmRepo(tr.srv.URL)}
	_, err := r.Resolve(ctx, ref)
	require.ErrorIs(t, err, ErrDigestMismatch)

	tr.files["/charts/app-1.0.0.tgz"] = good
	got, err := r.Resolve(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)
	assert.Equal(t, 2, tr.count("/charts/app-1.0.0.tgz"))

	digest, err := r.IndexDigest(ctx, tr.srv.URL)
	require.NoError(t, err)
	tr.setIndex([]byte("apiVersion: v1\nentries: {app: [\n"))
	_, err = r.Resolve(ctx, ref)
	require.ErrorIs(t, err, ErrInvalidIndex)
	tr.setIndex(nil)
	tr.add("app", "1.0.0", good, "")
	again, err := r.IndexDigest(ctx, tr.srv.URL)
	require.NoError(t, err)
	assert.Equal(t, digest, again, "the good index came back unchanged")
}

func TestLocalResolver(t *testing.T) {
	dir := t.TempDir()
	archive := packageChart(t, "local", "0.3.0", map[string]string{"values-dev.yaml": "dev: true\n"})
	tgz := filepath.Join(dir, "local-0.3.0.tgz")
	require.NoError(t, os.WriteFile(tgz, archive, 0o600))
	chartDir := filepath.Join(dir, "src")
	require.NoError(t, os.MkdirAll(filepath.Join(chartDir, "templates"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(chartDir, "Chart.yaml"), []byte("apiVersion: v2\nname: local\nversion: 0.4.0-dev\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(chartDir, "values.yaml"), []byte("a: 1\n"), 0o600))
	evil := filepath.Join(dir, "evil.tgz")
	require.NoError(t, os.WriteFile(evil, tarball(t, "/etc/passwd", "x"), 0o600))

	r := NewLocalResolver(0)
	ctx := context.Background()
	tests := []struct {
		name        string
		ref         Ref
		wantVersion string
		wantDigest  string
		wantErr     error
	}{
		{name: "archive", ref: Ref{Path: tgz, ValuesFiles: []string{"values-dev.yaml"}}, wantVersion: "0.3.0", wantDigest: "sha256:" + hexDigest(archive)},
		{name: "directory", ref: Ref{Path: chartDir}, wantVersion: "0.4.0-dev"},
		{name: "version satisfied", ref: Ref{Path: tgz, Version: "0.x"}, wantVersion: "0.3.0", wantDigest: "sha256:" + hexDigest(archive)},
		{name: "version not satisfied", ref: Ref{Path: tgz, Version: ">=1"}, wantErr: ErrNoMatchingVersion},
		{name: "wrong chart name", ref: Ref{Path: tgz, Chart: "other"}, wantErr: ErrChartNotFound},
		{name: "missing path", ref: Ref{Path: filepath.Join(dir, "nope.tgz")}, wantErr: ErrChartNotFound},
		{name: "absolute entry", ref: Ref{Path: evil}, wantErr: ErrInvalidArchive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Composite{Local: r}.Resolve(ctx, tt.ref)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				var se *Error
				require.ErrorAs(t, err, &se)
				assert.Equal(t, tt.ref.Path, se.Source)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantVersion, got.Version)
			assert.Equal(t, tt.wantDigest, got.Digest)
			assert.Equal(t, KindLocal, got.SourceKind)
			assert.Len(t, got.ValuesFiles, len(tt.ref.ValuesFiles))
		})
	}
}

func TestCompositeDispatch(t *testing.T) {
	seen := ""
	rec := func(kind string) Resolver {
		return ResolverFunc(func(_ context.Context, ref Ref) (*Chart, error) {
			seen = kind
			return &Chart{SourceKind: kind}, nil
		})
	}
	c := Composite{HTTP: rec("http"), OCI: rec("oci"), Local: rec("local")}
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		ref  Ref
		want string
	}{
		{"http repository", Ref{HelmRepository: helmRepo("https://charts.example.com")}, "http"},
		{"oci url", Ref{HelmRepository: helmRepo("oci://ghcr.io/org/charts")}, "oci"},
		{"oci type", Ref{HelmRepository: &HelmRepository{Spec: HelmRepositorySpec{URL: "ghcr.io/x", Type: RepositoryTypeOCI}}}, "oci"},
		{"oci repository", Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://ghcr.io/org/app"}}}, "oci"},
		{"path", Ref{Path: "./chart"}, "local"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Resolve(ctx, tt.ref)
			require.NoError(t, err)
			assert.Equal(t, tt.want, seen)
		})
	}
	_, err := c.Resolve(ctx, Ref{Path: "x", HelmRepository: helmRepo("https://a")})
	require.ErrorIs(t, err, ErrUnsupportedSource)
	_, err = Composite{}.Resolve(ctx, Ref{HelmRepository: helmRepo("https://u:pw@a/")})
	require.ErrorIs(t, err, ErrUnsupportedSource)
	assert.NotContains(t, err.Error(), "pw")
}

// TestHTTPResolverMissingDigest: an index entry without a digest (a
// hand-written or proxied index) is refused as ErrDigestMissing before its
// archive is downloaded, unless its HelmRepository allows it with
// AnnotationAllowMissingDigest: then the archive is taken unverified and
// the Chart carries the warning for the status. A digest that is there is
// verified either way.
func TestHTTPResolverMissingDigest(t *testing.T) {
	good := packageChart(t, "app", "1.0.0", nil)
	tr := newTestRepo(t)
	tr.add("app", "1.0.0", good, "")
	f := &repo.IndexFile{}
	require.NoError(t, yaml.Unmarshal(tr.index, f))
	f.Entries["app"][0].Digest = ""
	b, err := yaml.Marshal(f)
	require.NoError(t, err)
	tr.setIndex(b)
	ctx := context.Background()
	repository := func(allow string) *HelmRepository {
		r := helmRepo(tr.srv.URL)
		r.Namespace, r.Name = "flux-system", "charts"
		if allow != "" {
			r.Annotations = map[string]string{AnnotationAllowMissingDigest: allow}
		}
		return r
	}

	for _, allow := range []string{"", "false", "yes"} {
		_, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", HelmRepository: repository(allow)})
		require.ErrorIs(t, err, ErrDigestMissing, "annotation %q", allow)
		assert.NotErrorIs(t, err, ErrDigestMismatch)
		assert.Contains(t, err.Error(), "digest missing: the index entry of chart app version 1.0.0 ("+tr.srv.URL+"/charts/app-1.0.0.tgz) has no digest to verify its archive against "+
			`(HelmRepository flux-system/charts: metadata.annotations[source.helmfleet.io/allow-missing-digest]: "true" accepts it unverified)`)
	}
	assert.Zero(t, tr.count("/charts/app-1.0.0.tgz"), "refused before the download")

	got, err := NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", HelmRepository: repository("true")})
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)
	assert.Equal(t, []string{"chart app version 1.0.0 from repository flux-system/charts has no digest in its index entry: accepted unverified (allow-missing-digest)"}, got.Warnings)

	// The opt-in accepts a missing digest, never a wrong one.
	tr.add("app", "1.1.0", good, "")
	tr.files["/charts/app-1.1.0.tgz"] = packageChart(t, "app", "1.1.0", nil)
	_, err = NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", Version: "1.1.0", HelmRepository: repository("true")})
	require.ErrorIs(t, err, ErrDigestMismatch)

	// A verified chart carries no warning.
	tr.add("app", "1.2.0", packageChart(t, "app", "1.2.0", nil), "")
	got, err = NewHTTPResolver(tr.srv.Client(), HTTPOptions{}).Resolve(ctx, Ref{Chart: "app", Version: "1.2.0", HelmRepository: repository("true")})
	require.NoError(t, err)
	assert.Nil(t, got.Warnings)
}
