package source

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go"
	v1 "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
)

// testSigner signs artifacts the way cosign does with a key pair: a
// simple-signing payload naming the manifest digest, its ECDSA P-256
// signature in the layer's annotation, under tag sha256-<hex>.sig.
type testSigner struct {
	key *ecdsa.PrivateKey
	pem []byte
}

func newTestSigner(t *testing.T) testSigner {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pem, err := cryptoutils.MarshalPublicKeyToPEM(key.Public())
	require.NoError(t, err)
	return testSigner{key: key, pem: pem}
}

// simpleSigning is cosign's payload for an artifact digest.
func simpleSigning(ref, dgst string) []byte {
	return []byte(`{"critical":{"identity":{"docker-reference":"` + ref + `"},"image":{"docker-manifest-digest":"` + dgst +
		`"},"type":"cosign container image signature"},"optional":null}`)
}

// sign pushes to repository host/repo a signature of payload (tampered
// after signing by tamper, when set) under the tag of digest dgst.
func (s testSigner) sign(t *testing.T, client remote.Client, host, repo, dgst string, payload []byte, tamper func([]byte) []byte) {
	t.Helper()
	h := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, s.key, h[:])
	require.NoError(t, err)
	if tamper != nil {
		payload = tamper(payload)
	}
	r, err := remote.NewRepository(host + "/" + repo)
	require.NoError(t, err)
	r.PlainHTTP = true
	if client != nil {
		r.Client = client
	}
	ctx := context.Background()
	pushBlob := func(mediaType string, data []byte, annotations map[string]string) v1.Descriptor {
		d := content.NewDescriptorFromBytes(mediaType, data)
		require.NoError(t, r.Push(ctx, d, bytes.NewReader(data)))
		d.Annotations = annotations
		return d
	}
	m := v1.Manifest{
		Versioned: ocispec.Versioned{SchemaVersion: 2},
		MediaType: v1.MediaTypeImageManifest,
		Config:    pushBlob(v1.MediaTypeImageConfig, []byte("{}"), nil),
		Layers: []v1.Descriptor{pushBlob(cosignPayloadMediaType, payload,
			map[string]string{cosignSignatureAnnotation: base64.StdEncoding.EncodeToString(sig)})},
	}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	md := content.NewDescriptorFromBytes(v1.MediaTypeImageManifest, raw)
	require.NoError(t, r.Manifests().PushReference(ctx, md, bytes.NewReader(raw), cosignSignatureTag(dgst)))
}

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

// TestVerifyCosign signs charts in the test and pushes them, with their
// signatures, to an in-process registry: a chart signed by a trusted key
// resolves with its signer reported; unsigned, wrongly signed or tampered
// charts are refused, naming the object, the digest and the reason.
func TestVerifyCosign(t *testing.T) {
	var sigRequests atomic.Int64
	app := registryApp(t, "", "")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".sig") {
			sigRequests.Add(1)
		}
		app.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	client := newRegistryClient(t)
	trusted, other, second := newTestSigner(t), newTestSigner(t), newTestSigner(t)

	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0"} {
		digests[v] = push(t, client, host, "app", v, map[string]string{"NOTES.txt": v})
	}
	ref := host + "/charts/app"
	trusted.sign(t, nil, host, "charts/app", digests["1.0.0"], simpleSigning(ref, digests["1.0.0"]), nil)
	// 1.1.0 is not signed.
	other.sign(t, nil, host, "charts/app", digests["1.2.0"], simpleSigning(ref, digests["1.2.0"]), nil)
	// A valid signature of a payload naming another artifact, copied
	// under 1.3.0's tag.
	trusted.sign(t, nil, host, "charts/app", digests["1.3.0"], simpleSigning(ref, digests["1.0.0"]), nil)
	// The payload changed after it was signed.
	trusted.sign(t, nil, host, "charts/app", digests["1.4.0"], simpleSigning(ref, digests["1.4.0"]), func(p []byte) []byte {
		return bytes.Replace(p, []byte(`"optional":null`), []byte(`"optional":{"x":"y"}`), 1)
	})
	second.sign(t, nil, host, "charts/app", digests["1.5.0"], simpleSigning(ref, digests["1.5.0"]), nil)
	trusted.sign(t, nil, host, "charts/app", digests["1.6.0"], bytes.Replace(simpleSigning(ref, digests["1.6.0"]),
		[]byte("cosign container image signature"), []byte("something else"), 1), nil)

	keys := map[string]map[string][]byte{
		"flux/cosign-keys": {"cosign.pub": trusted.pem, "README": []byte("not a key")},
		"flux/two-keys":    {"a.pub": trusted.pem, "b.pub": second.pem},
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
			dgst := digests[tt.version]
			if tt.reason == "" {
				require.NoError(t, err)
				require.NotNil(t, got.Verified)
				assert.Equal(t, Verified{Provider: "cosign", Digest: dgst, Signer: tt.signer}, *got.Verified)
				assert.Equal(t, dgst, got.Digest)
				return
			}
			require.ErrorIs(t, err, ErrUnverified)
			assert.Nil(t, got)
			var se *Error
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "verify", se.Op)
			assert.Equal(t, "oci://"+ref, se.Source)
			var ve *VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, "OCIRepository flux/app", ve.Object)
			assert.Equal(t, tt.field, ve.Field)
			assert.Equal(t, dgst, ve.Digest)
			assert.Contains(t, err.Error(), tt.reason)
			assert.Contains(t, err.Error(), dgst)
			assert.NotContains(t, err.Error(), "private")
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

	t.Run("modes not supported yet are refused", func(t *testing.T) {
		for _, tc := range []struct {
			verify OCIRepositoryVerification
			field  string
			reason string
		}{
			{OCIRepositoryVerification{Provider: "notation", SecretRef: &LocalObjectReference{Name: "cosign-keys"}}, "spec.verify.provider",
				"notation is not supported yet: charts cannot be verified, refusing rather than installing unverified"},
			{OCIRepositoryVerification{Provider: "cosign"}, "spec.verify.secretRef", "keyless cosign verification (no secretRef) is not supported yet"},
			{OCIRepositoryVerification{Provider: "cosign", SecretRef: &LocalObjectReference{Name: "cosign-keys"},
				MatchOIDCIdentity: []OIDCIdentityMatch{{Issuer: ".*", Subject: ".*"}}}, "spec.verify.matchOIDCIdentity", "applies to keyless verification only"},
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
	s := newTestSigner(t)
	s.sign(t, &auth.Client{Credential: auth.StaticCredential(host, auth.Credential{Username: "fleet", Password: "s3cret"})},
		host, "charts/private", dgst, simpleSigning(host+"/charts/private", dgst), nil)
	ref := Ref{OCIRepository: &OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "private"}, Spec: OCIRepositorySpec{
		URL: "oci://" + host + "/charts/private", Reference: &OCIRepositoryRef{Tag: "2.0.0"},
		Verify: &OCIRepositoryVerification{Provider: "cosign", SecretRef: &LocalObjectReference{Name: "keys"}}}}}
	r := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t, registry.ClientOptBasicAuth("fleet", "s3cret")),
		Secrets: secretData(map[string]map[string][]byte{"flux/keys": {"cosign.pub": s.pem}})})
	got, err := r.Resolve(context.Background(), ref)
	require.NoError(t, err)
	assert.Equal(t, "flux/keys:cosign.pub", got.Verified.Signer)
}
