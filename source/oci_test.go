package source

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/distribution/v3/configuration"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	"github.com/distribution/distribution/v3/registry/handlers"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
	"helm.sh/helm/v3/pkg/registry"
)

// newTestRegistry starts a real distribution registry in-process with
// in-memory storage, behind htpasswd auth when user is set, and returns
// its host:port.
func newTestRegistry(t *testing.T, user, password string) string {
	t.Helper()
	config := &configuration.Configuration{}
	config.Storage = configuration.Storage{"inmemory": configuration.Parameters{}}
	config.Log.Level = "error"
	config.Log.AccessLog.Disabled = true
	if user != "" {
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "htpasswd")
		require.NoError(t, os.WriteFile(p, []byte(user+":"+string(hash)+"\n"), 0o600))
		config.Auth = configuration.Auth{"htpasswd": configuration.Parameters{"realm": "test", "path": p}}
	}
	app := handlers.NewApp(context.Background(), config)
	srv := httptest.NewServer(app)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func newRegistryClient(t *testing.T, opts ...registry.ClientOption) *registry.Client {
	t.Helper()
	opts = append([]registry.ClientOption{
		registry.ClientOptPlainHTTP(),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")),
	}, opts...)
	c, err := registry.NewClient(opts...)
	require.NoError(t, err)
	return c
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
	r := NewOCIResolver(client, 0)
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

func TestOCIResolverCredentials(t *testing.T) {
	host := newTestRegistry(t, "fleet", "s3cret")
	authed := newRegistryClient(t, registry.ClientOptBasicAuth("fleet", "s3cret"))
	push(t, authed, host, "private", "2.0.0", nil)
	ref := Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/private", Reference: &OCIRepositoryRef{SemVer: "2.x"}}}}
	ctx := context.Background()

	got, err := NewOCIResolver(authed, 0).Resolve(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, "2.0.0", got.Version)

	_, err = NewOCIResolver(newRegistryClient(t, registry.ClientOptBasicAuth("fleet", "wrong")), 0).Resolve(ctx, ref)
	require.ErrorIs(t, err, ErrUnauthorized)
	assert.NotContains(t, err.Error(), "wrong")
}
