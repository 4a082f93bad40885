package source

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/helmfleet/helmfleet/internal/ocitest"
)

// secrets serves Secret data from a map keyed "namespace/name".
func secretData(data map[string]map[string][]byte) SecretReader {
	return SecretReaderFunc(func(_ context.Context, namespace, name string) (map[string][]byte, error) {
		d, ok := data[namespace+"/"+name]
		if !ok {
			return nil, errors.New("secrets \"" + name + "\" not found")
		}
		return d, nil
	})
}

// requireResolved checks a resolution of the chart with digest dgst: when
// reason is "", that it resolved verified by signer; else that it was
// refused for its spec.verify: no chart, an *Error of op verify from
// source around a *VerifyError naming object, field and dgst, with reason
// in the message.
func requireResolved(t *testing.T, got *Chart, err error, dgst, signer, source, object, field, reason string) {
	t.Helper()
	if reason == "" {
		require.NoError(t, err)
		require.NotNil(t, got.Verified)
		assert.Equal(t, Verified{Provider: "cosign", Digest: dgst, Signer: signer}, *got.Verified)
		assert.Equal(t, dgst, got.Digest)
		return
	}
	require.ErrorIs(t, err, ErrUnverified)
	assert.Nil(t, got)
	var se *Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "verify", se.Op)
	assert.Equal(t, source, se.Source)
	var ve *VerifyError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, object, ve.Object)
	assert.Equal(t, field, ve.Field)
	assert.Equal(t, dgst, ve.Digest)
	assert.Contains(t, err.Error(), reason)
	assert.Contains(t, err.Error(), dgst)
}

// countingRegistry is an in-process registry on 127.0.0.1 that counts the
// requests for cosign signature tags (<digest>.sig).
func countingRegistry(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var sigRequests atomic.Int64
	app := registryApp(t, "", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".sig") {
			sigRequests.Add(1)
		}
		app.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &sigRequests
}

// TestVerifyCosign signs charts in the test and pushes them, with their
// signatures, to an in-process registry: a chart signed by a trusted key
// resolves with its signer reported; unsigned, wrongly signed or tampered
// charts are refused, naming the object, the digest and the reason.
func TestVerifyCosign(t *testing.T) {
	host, sigRequests := countingRegistry(t)
	client := newRegistryClient(t)
	trusted, other, second := ocitest.NewKey(t), ocitest.NewKey(t), ocitest.NewKey(t)
	repo := ocitest.Repository(t, host, "charts/app", nil)

	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0"} {
		digests[v] = push(t, client, host, "app", v, map[string]string{"NOTES.txt": v})
	}
	ref := host + "/charts/app"
	trusted.Sign(t, repo, digests["1.0.0"], ocitest.SimpleSigning(ref, digests["1.0.0"]), nil)
	// 1.1.0 is not signed.
	other.Sign(t, repo, digests["1.2.0"], ocitest.SimpleSigning(ref, digests["1.2.0"]), nil)
	// A valid signature of a payload naming another artifact, copied
	// under 1.3.0's tag.
	trusted.Sign(t, repo, digests["1.3.0"], ocitest.SimpleSigning(ref, digests["1.0.0"]), nil)
	// The payload changed after it was signed.
	trusted.Sign(t, repo, digests["1.4.0"], ocitest.SimpleSigning(ref, digests["1.4.0"]), func(p []byte) []byte {
		return bytes.Replace(p, []byte(`"optional":null`), []byte(`"optional":{"x":"y"}`), 1)
	})
	second.Sign(t, repo, digests["1.5.0"], ocitest.SimpleSigning(ref, digests["1.5.0"]), nil)
	trusted.Sign(t, repo, digests["1.6.0"], bytes.Replace(ocitest.SimpleSigning(ref, digests["1.6.0"]),
		[]byte("cosign container image signature"), []byte("something else"), 1), nil)

	// 1.7.0 has only a sigstore bundle, stored as a referrer.
	ocitest.Refer(t, repo, digests["1.7.0"], "application/vnd.dev.sigstore.bundle.v0.3+json")

	keys := map[string]map[string][]byte{
		"flux/cosign-keys": {"cosign.pub": trusted.PublicPEM, "README": []byte("not a key")},
		"flux/two-keys":    {"a.pub": trusted.PublicPEM, "b.pub": second.PublicPEM},
		"flux/no-keys":     {"cosign.key": []byte("private")},
		"flux/bad-key":     {"cosign.pub": []byte("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n")},
	}
	r := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t), Secrets: secretData(keys)})
	ociRepo := func(tag, secret string) Ref {
		return Ref{OCIRepository: &OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "app"}, Spec: OCIRepositorySpec{
			URL: "oci://" + ref, Reference: &OCIRepositoryRef{Tag: tag},
			Verify: &OCIRepositoryVerification{Provider: "cosign", SecretRef: &LocalObjectReference{Name: secret}}}}}
	}
	helmRepo := &HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "charts"},
		Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: RepositoryTypeOCI}}
	tests := []struct {
		name    string
		ref     Ref
		version string
		signer  string
		reason  string
		field   string
	}{
		{name: "signed by the trusted key", ref: ociRepo("1.0.0", "cosign-keys"), version: "1.0.0", signer: "flux/cosign-keys:cosign.pub"},
		{name: "HelmChart from an OCI HelmRepository", version: "1.0.0", signer: "flux/cosign-keys:cosign.pub",
			ref: Ref{HelmRepository: helmRepo, HelmChart: &HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "app"},
				Spec: HelmChartSpec{Chart: "app", Version: "1.0.0", Verify: &OCIRepositoryVerification{SecretRef: &LocalObjectReference{Name: "cosign-keys"}}}}}},
		{name: "release chart.spec.verify", version: "1.0.0", signer: "flux/cosign-keys:cosign.pub",
			ref: Ref{Chart: "app", Version: "1.0.0", HelmRepository: helmRepo, Verify: &Verification{Provider: "cosign",
				SecretRef: &LocalObjectReference{Name: "cosign-keys"}, Namespace: "flux", Object: "HelmRelease apps/app", Field: "spec.chart.spec.verify"}}},
		{name: "signed by the second of two keys", ref: ociRepo("1.5.0", "two-keys"), version: "1.5.0", signer: "flux/two-keys:b.pub"},
		{name: "unsigned", ref: ociRepo("1.1.0", "cosign-keys"), version: "1.1.0", field: "spec.verify",
			reason: "no cosign signature: the registry has no signature at tag sha256-"},
		{name: "only a sigstore bundle", ref: ociRepo("1.7.0", "cosign-keys"), version: "1.7.0", field: "spec.verify",
			reason: "no cosign signature: the registry has no signature at tag sha256-" + strings.TrimPrefix(digests["1.7.0"], "sha256:") +
				".sig; the artifact has signatures stored as OCI referrers (artifactType application/vnd.dev.sigstore.bundle.v0.3+json), the newer format, which is not verified yet"},
		{name: "signed by another key", ref: ociRepo("1.2.0", "cosign-keys"), version: "1.2.0", field: "spec.verify",
			reason: "no signature verifies with the 1 trusted key(s) of Secret flux/cosign-keys: signature 0: no trusted key verifies it"},
		{name: "payload names another artifact", ref: ociRepo("1.3.0", "cosign-keys"), version: "1.3.0", field: "spec.verify",
			reason: "signed by flux/cosign-keys:cosign.pub, but it signs artifact \"" + digests["1.0.0"] + "\""},
		{name: "payload tampered after signing", ref: ociRepo("1.4.0", "cosign-keys"), version: "1.4.0", field: "spec.verify",
			reason: "signature 0: no trusted key verifies it"},
		{name: "payload of another type", ref: ociRepo("1.6.0", "cosign-keys"), version: "1.6.0", field: "spec.verify",
			reason: "critical.type is \"something else\""},
		{name: "the second key is not trusted alone", ref: ociRepo("1.5.0", "cosign-keys"), version: "1.5.0", field: "spec.verify",
			reason: "no trusted key verifies it"},
		{name: "Secret without public keys", ref: ociRepo("1.0.0", "no-keys"), version: "1.0.0", field: "spec.verify.secretRef",
			reason: "no public keys found in Secret flux/no-keys (keys ending in .pub)"},
		{name: "Secret with a bad key", ref: ociRepo("1.0.0", "bad-key"), version: "1.0.0", field: "spec.verify.secretRef",
			reason: "Secret flux/bad-key key cosign.pub is not a PEM public key"},
		{name: "Secret missing", ref: ociRepo("1.0.0", "absent"), version: "1.0.0", field: "spec.verify.secretRef",
			reason: "read Secret flux/absent: secrets \"absent\" not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tt.ref)
			requireResolved(t, got, err, digests[tt.version], tt.signer, "oci://"+ref, "OCIRepository flux/app", tt.field, tt.reason)
			if err != nil {
				assert.NotContains(t, err.Error(), "private")
			}
		})
	}

	t.Run("a digest is verified once per key set", func(t *testing.T) {
		before := sigRequests.Load()
		for range 3 {
			got, err := r.Resolve(context.Background(), ociRepo("1.0.0", "cosign-keys"))
			require.NoError(t, err)
			assert.Equal(t, "flux/cosign-keys:cosign.pub", got.Verified.Signer)
		}
		assert.Equal(t, before, sigRequests.Load(), "cached: no signature fetched again")
		_, err := r.Resolve(context.Background(), ociRepo("1.0.0", "two-keys"))
		require.NoError(t, err)
		assert.Equal(t, before+1, sigRequests.Load(), "another key set verifies again")
		// A refusal is not cached: the chart is checked again.
		_, err = r.Resolve(context.Background(), ociRepo("1.1.0", "cosign-keys"))
		require.ErrorIs(t, err, ErrUnverified)
		_, err = r.Resolve(context.Background(), ociRepo("1.1.0", "cosign-keys"))
		require.ErrorIs(t, err, ErrUnverified)
		assert.Equal(t, before+3, sigRequests.Load())
	})

	t.Run("without a SecretReader nothing is verified", func(t *testing.T) {
		got, err := newOCIResolver(t).Resolve(context.Background(), ociRepo("1.0.0", "cosign-keys"))
		require.ErrorIs(t, err, ErrUnverified)
		assert.Nil(t, got)
		assert.Contains(t, err.Error(), "OCIRepository flux/app spec.verify.secretRef (artifact "+digests["1.0.0"]+"): the resolver has no SecretReader")
	})

	t.Run("modes not supported are refused", func(t *testing.T) {
		for _, tc := range []struct {
			verify OCIRepositoryVerification
			field  string
			reason string
		}{
			{OCIRepositoryVerification{Provider: "notation", SecretRef: &LocalObjectReference{Name: "cosign-keys"}}, "spec.verify.provider",
				"notation is not supported yet: charts cannot be verified, refusing rather than installing unverified"},
			{OCIRepositoryVerification{Provider: "cosign"}, "spec.verify.trustedRootSecretRef",
				"keyless verification needs spec.verify.trustedRootSecretRef: Sigstore's public-good trusted root is fetched by TUF, which helmfleet cannot reach offline"},
			{OCIRepositoryVerification{Provider: "cosign", SecretRef: &LocalObjectReference{Name: "cosign-keys"},
				MatchOIDCIdentity: []OIDCIdentityMatch{{Issuer: ".*", Subject: ".*"}}}, "spec.verify.matchOIDCIdentity", "applies to keyless verification only"},
			{OCIRepositoryVerification{Provider: "cosign", SecretRef: &LocalObjectReference{Name: "cosign-keys"},
				TrustedRootSecretRef: &LocalObjectReference{Name: "root"}}, "spec.verify.trustedRootSecretRef", "applies to keyless verification only"},
		} {
			ref := ociRepo("1.0.0", "cosign-keys")
			ref.OCIRepository.Spec.Verify = &tc.verify
			got, err := r.Resolve(context.Background(), ref)
			require.ErrorIs(t, err, ErrUnverified)
			assert.Nil(t, got)
			var ve *VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tc.field, ve.Field)
			assert.Contains(t, err.Error(), tc.reason)
		}
	})

	t.Run("without verify the unsigned chart resolves", func(t *testing.T) {
		got, err := r.Resolve(context.Background(), Ref{OCIRepository: &OCIRepository{Spec: OCIRepositorySpec{URL: "oci://" + ref, Reference: &OCIRepositoryRef{Tag: "1.1.0"}}}})
		require.NoError(t, err)
		assert.Nil(t, got.Verified)
	})
}

// TestVerifyCosignCredentials: the signatures are read with the
// credentials the chart was pulled with, from a registry that needs them.
func TestVerifyCosignCredentials(t *testing.T) {
	host := newTestRegistry(t, "fleet", "s3cret")
	dgst := push(t, newRegistryClient(t, registry.ClientOptBasicAuth("fleet", "s3cret")), host, "private", "2.0.0", nil)
	s := ocitest.NewKey(t)
	s.Sign(t, ocitest.Repository(t, host, "charts/private", &auth.Client{Credential: auth.StaticCredential(host, auth.Credential{Username: "fleet", Password: "s3cret"})}),
		dgst, ocitest.SimpleSigning(host+"/charts/private", dgst), nil)
	ref := Ref{OCIRepository: &OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "private"}, Spec: OCIRepositorySpec{
		URL: "oci://" + host + "/charts/private", Reference: &OCIRepositoryRef{Tag: "2.0.0"},
		Verify: &OCIRepositoryVerification{Provider: "cosign", SecretRef: &LocalObjectReference{Name: "keys"}}}}}
	r := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t, registry.ClientOptBasicAuth("fleet", "s3cret")),
		Secrets: secretData(map[string]map[string][]byte{"flux/keys": {"cosign.pub": s.PublicPEM}})})
	got, err := r.Resolve(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, "flux/keys:cosign.pub", got.Verified.Signer)
}
