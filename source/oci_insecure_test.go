package source

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// spec.insecure is per source, as in Flux: in one resolver, a source that
// sets it reaches its plain-HTTP registry, one that does not is refused
// with an error naming it and the field, and a TLS registry is reached
// over HTTPS.
func TestOCIInsecurePerSource(t *testing.T) {
	plainA := newTestRegistry(t, "", "")
	plainB := newTestRegistry(t, "", "")
	tlsSrv := httptest.NewTLSServer(registryApp(t, "", ""))
	t.Cleanup(tlsSrv.Close)
	tlsHost := strings.TrimPrefix(tlsSrv.URL, "https://")

	client := newRegistryClient(t)
	push(t, client, plainA, "app", "1.0.0", nil)
	push(t, client, plainB, "app", "1.0.0", nil)
	tlsClient, err := registry.NewClient(registry.ClientOptHTTPClient(tlsSrv.Client()),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
	require.NoError(t, err)
	push(t, tlsClient, tlsHost, "app", "1.0.0", nil)

	// No registry.ClientOptPlainHTTP: HTTPS unless a source says otherwise.
	r := NewOCIResolver(OCIOptions{HTTPClient: tlsSrv.Client(),
		ClientOptions: []registry.ClientOption{registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json"))}})
	ociRepo := func(name, host string, insecure bool) Ref {
		return Ref{OCIRepository: &OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
			Spec: OCIRepositorySpec{URL: "oci://" + host + "/charts/app", Insecure: insecure, Reference: &OCIRepositoryRef{Tag: "1.0.0"}}}}
	}
	ctx := context.Background()

	got, err := r.Resolve(ctx, ociRepo("plain", plainA, true))
	require.NoError(t, err)
	assert.Equal(t, "1.0.0", got.Version)

	helmRepo := Ref{Chart: "app", Version: "1.x", HelmRepository: &HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "charts"},
		Spec: HelmRepositorySpec{URL: "oci://" + plainB + "/charts", Type: RepositoryTypeOCI, Insecure: true}}}
	got, err = r.Resolve(ctx, helmRepo)
	require.NoError(t, err, "an OCI HelmRepository's spec.insecure")
	assert.Equal(t, "1.0.0", got.Version)

	got, err = r.Resolve(ctx, ociRepo("tls", tlsHost, false))
	require.NoError(t, err, "a TLS registry stays HTTPS")
	assert.Equal(t, "oci://"+tlsHost+"/charts/app:1.0.0", got.URL)

	// The same registry, from a source that did not set spec.insecure,
	// after another source reached it in plain HTTP.
	_, err = r.Resolve(ctx, ociRepo("secure", plainA, false))
	require.ErrorIs(t, err, ErrPlainHTTP)
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), "OCIRepository flux-system/secure: spec.insecure is not set, so "+plainA+" is reached over HTTPS, and it answered in plain HTTP")

	helmRepo.HelmRepository.Spec.Insecure = false
	_, err = r.Resolve(ctx, helmRepo)
	require.ErrorIs(t, err, ErrPlainHTTP)
	assert.Contains(t, err.Error(), "HelmRepository flux-system/charts: spec.insecure is not set")
}
