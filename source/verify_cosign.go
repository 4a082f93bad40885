package source

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// SecretReader reads the Secrets that spec.verify.secretRef names, which
// hold the trusted public keys. A controller reads them from the cluster;
// a caller without one leaves OCIOptions.Secrets nil, and every chart that
// asks for verification is refused.
type SecretReader interface {
	// SecretData returns the data of the Secret namespace/name. Its error
	// must not quote the data.
	SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// SecretReaderFunc adapts a function to SecretReader.
type SecretReaderFunc func(ctx context.Context, namespace, name string) (map[string][]byte, error)

// SecretData calls f.
func (f SecretReaderFunc) SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	return f(ctx, namespace, name)
}

// Cosign's conventions for signatures stored beside the artifact.
const (
	// cosignSignatureAnnotation holds a layer's base64 signature.
	cosignSignatureAnnotation = "dev.cosignproject.cosign/signature"
	// cosignPayloadMediaType is the media type of a simple-signing layer.
	cosignPayloadMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// maxSignatureLayers caps the signatures read from one signature
	// manifest, and maxPayloadSize one payload: a simple-signing payload
	// is a few hundred bytes.
	maxSignatureLayers = 64
	maxPayloadSize     = 64 << 10
	// maxVerifiedEntries caps the cache of verified digests; when full it
	// starts over.
	maxVerifiedEntries = 4096
)

const refusing = "charts cannot be verified, refusing rather than installing unverified"

// trustedKey is one public key of a verification Secret.
type trustedKey struct {
	name     string // "namespace/secret:key.pub"
	verifier signature.Verifier
}

// verifiedCache remembers the digests verified with a key set, so that a
// chart is verified once however often it is resolved. Only successes are
// kept: a chart refused is checked again on the next resolution.
type verifiedCache struct {
	mu      sync.Mutex
	entries map[string]Verified
}

func (c *verifiedCache) get(key string) (Verified, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	return v, ok
}

func (c *verifiedCache) put(key string, v Verified) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxVerifiedEntries {
		c.entries = map[string]Verified{}
	}
	c.entries[key] = v
}

// verifySignature checks the signature of the artifact with manifest
// digest dgst, pulled from base in session sess, when the source asks for
// it, and returns who signed it; nil when the source does not ask.
func (r *OCIResolver) verifySignature(ctx context.Context, sess *session, base string, ref Ref, dgst string) (*Verified, error) {
	v := ref.verification()
	if v == nil {
		return nil, nil
	}
	fail := func(field, reason string, err error) error {
		return &VerifyError{Object: v.Object, Field: v.Field + field, Digest: dgst, Reason: reason, Err: err}
	}
	switch {
	case v.provider() != "cosign":
		return nil, fail(".provider", fmt.Sprintf("%s is not supported yet: %s", v.Provider, refusing), nil)
	case v.SecretRef == nil || v.SecretRef.Name == "":
		return r.verifyKeyless(ctx, sess, base, v, dgst, fail)
	case len(v.MatchOIDCIdentity) > 0:
		return nil, fail(".matchOIDCIdentity", "applies to keyless verification only (no secretRef); with secretRef it would be ignored: "+refusing, nil)
	case v.TrustedRootSecretRef != nil:
		return nil, fail(".trustedRootSecretRef", "applies to keyless verification only (no secretRef); with secretRef it would be ignored: "+refusing, nil)
	case r.secrets == nil:
		return nil, fail(".secretRef", "the resolver has no SecretReader (OCIOptions.Secrets) to read the trusted keys: "+refusing, nil)
	}
	secret := v.Namespace + "/" + v.SecretRef.Name
	data, err := r.secrets.SecretData(ctx, v.Namespace, v.SecretRef.Name)
	if err != nil {
		return nil, fail(".secretRef", "read Secret "+secret, err)
	}
	keys, fingerprint, err := trustedKeys(secret, data)
	if err != nil {
		return nil, fail(".secretRef", err.Error(), nil)
	}
	got, reasons, err := r.firstVerified(ctx, sess, base, dgst, dgst+"\x00"+fingerprint, fail, func(s cosignSignature) (string, string) {
		return s.check(keys, dgst)
	})
	if got != nil || err != nil {
		return got, err
	}
	return nil, fail("", fmt.Sprintf("no signature verifies with the %d trusted key(s) of Secret %s: %s",
		len(keys), secret, strings.Join(reasons, "; ")), nil)
}

// firstVerified returns the verification cached under cacheKey, else
// checks each cosign signature of digest dgst with check (which returns
// the signer, or why it fails) and caches and returns the first that
// passes; none passing, it returns why each failed.
func (r *OCIResolver) firstVerified(ctx context.Context, sess *session, base, dgst, cacheKey string, fail func(field, reason string, err error) error,
	check func(cosignSignature) (string, string)) (*Verified, []string, error) {
	if got, ok := r.verified.get(cacheKey); ok {
		return &got, nil, nil
	}
	sigs, err := signaturesOf(ctx, sess, base, dgst, fail)
	if err != nil {
		return nil, nil, err
	}
	var reasons []string
	for i, s := range sigs {
		signer, reason := check(s)
		if reason == "" {
			got := Verified{Provider: "cosign", Digest: dgst, Signer: signer}
			r.verified.put(cacheKey, got)
			return &got, nil, nil
		}
		reasons = append(reasons, fmt.Sprintf("signature %d: %s", i, reason))
	}
	return nil, reasons, nil
}

// signaturesOf reads the cosign signatures of digest dgst; none is an
// error made by fail, saying whether the artifact has signatures in the
// newer referrers format.
func signaturesOf(ctx context.Context, sess *session, base, dgst string, fail func(field, reason string, err error) error) ([]cosignSignature, error) {
	sigs, err := fetchCosignSignatures(ctx, sess, base, dgst)
	if err != nil {
		return nil, fail("", "read the cosign signatures", err)
	}
	if len(sigs) == 0 {
		reason := fmt.Sprintf("no cosign signature: the registry has no signature at tag %s", cosignSignatureTag(dgst))
		if types := sigstoreReferrers(ctx, sess, base, dgst); len(types) > 0 {
			reason += fmt.Sprintf("; the artifact has signatures stored as OCI referrers (artifactType %s), the newer format, which is not verified yet: %s",
				strings.Join(types, ", "), refusing)
		}
		return nil, fail("", reason, nil)
	}
	return sigs, nil
}

// trustedKeys loads the public keys of a verification Secret: every key
// ending in ".pub", as Flux reads them, in name order. The fingerprint
// identifies the key set, for the cache.
func trustedKeys(secret string, data map[string][]byte) ([]trustedKey, string, error) {
	names := make([]string, 0, len(data))
	for k := range data {
		if strings.HasSuffix(k, ".pub") {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return nil, "", fmt.Errorf("no public keys found in Secret %s (keys ending in .pub)", secret)
	}
	slices.Sort(names)
	h := sha256.New()
	keys := make([]trustedKey, 0, len(names))
	for _, k := range names {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(data[k])
		if err != nil {
			return nil, "", fmt.Errorf("Secret %s key %s is not a PEM public key", secret, k)
		}
		ver, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, "", fmt.Errorf("Secret %s key %s: %w", secret, k, err)
		}
		keys = append(keys, trustedKey{name: secret + ":" + k, verifier: ver})
		fmt.Fprintf(h, "%d:%s%d:", len(k), k, len(data[k]))
		h.Write(data[k])
	}
	return keys, hex.EncodeToString(h.Sum(nil)), nil
}

// cosignSignature is one signature of a signature manifest: the
// simple-signing payload and the signature over it.
type cosignSignature struct {
	payload   []byte
	signature []byte
	// certificate, chain and bundle are the keyless annotations of the
	// layer (PEM leaf certificate, PEM chain, Rekor bundle), "" when absent.
	certificate, chain, bundle string
}

// check verifies the signature with each key and then the payload's claim:
// it must sign this artifact's digest as a cosign container image
// signature. It returns the key that verified it, or why it fails.
func (s cosignSignature) check(keys []trustedKey, dgst string) (string, string) {
	signer := ""
	for _, k := range keys {
		if k.verifier.VerifySignature(bytes.NewReader(s.signature), bytes.NewReader(s.payload)) == nil {
			signer = k.name
			break
		}
	}
	if signer == "" {
		return "", "no trusted key verifies it"
	}
	if reason := s.claims(signer, dgst); reason != "" {
		return "", reason
	}
	return signer, ""
}

// claims checks the payload's claim: it must sign this artifact's digest
// as a cosign container image signature. It returns why not, naming
// signer, or "".
func (s cosignSignature) claims(signer, dgst string) string {
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(s.payload, &p); err != nil {
		return fmt.Sprintf("signed by %s, but its payload is not a simple-signing document", signer)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return fmt.Sprintf("signed by %s, but its payload's critical.type is %q, not %q", signer, p.Critical.Type, payload.CosignSignatureType)
	}
	if got := p.Critical.Image.DockerManifestDigest; got != dgst {
		return fmt.Sprintf("signed by %s, but it signs artifact %q (critical.image.docker-manifest-digest), not this one", signer, got)
	}
	return ""
}

// cosignSignatureTag is the tag cosign stores an artifact's signatures
// under: sha256:<hex> becomes sha256-<hex>.sig.
func cosignSignatureTag(dgst string) string {
	return strings.Replace(dgst, ":", "-", 1) + ".sig"
}

// fetchCosignSignatures reads the signatures cosign stored for digest dgst
// in repository base, through the session that pulled the chart (its
// transport, scheme and credentials). None when the tag does not exist.
func fetchCosignSignatures(ctx context.Context, sess *session, base, dgst string) ([]cosignSignature, error) {
	repo, err := signatureRepository(sess, base)
	if err != nil {
		return nil, err
	}
	desc, rc, err := repo.Manifests().FetchReference(ctx, cosignSignatureTag(dgst))
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, registryError(err)
	}
	raw, err := content.ReadAll(rc, desc)
	rc.Close()
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("the signature manifest %s is not an image manifest: %w", desc.Digest, err)
	}
	if len(m.Layers) > maxSignatureLayers {
		return nil, fmt.Errorf("%w: the signature manifest %s has %d layers, limit %d", ErrTooLarge, desc.Digest, len(m.Layers), maxSignatureLayers)
	}
	var out []cosignSignature
	for _, l := range m.Layers {
		b64, ok := l.Annotations[cosignSignatureAnnotation]
		if l.MediaType != cosignPayloadMediaType || !ok {
			continue
		}
		if l.Size > maxPayloadSize {
			return nil, fmt.Errorf("%w: signature payload %s is %d bytes, limit %d", ErrTooLarge, l.Digest, l.Size, maxPayloadSize)
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			return nil, fmt.Errorf("signature of payload %s is not base64", l.Digest)
		}
		p, err := content.FetchAll(ctx, repo, l)
		if err != nil {
			return nil, fmt.Errorf("signature payload %s: %w", l.Digest, registryError(err))
		}
		out = append(out, cosignSignature{payload: p, signature: sig, certificate: l.Annotations[cosignCertificateAnnotation],
			chain: l.Annotations[cosignChainAnnotation], bundle: l.Annotations[cosignBundleAnnotation]})
	}
	return out, nil
}

// signatureRepository is repository base, reached the way the session
// pulled the chart: its transport, scheme and credentials.
func signatureRepository(sess *session, base string) (*remote.Repository, error) {
	repo, err := remote.NewRepository(base)
	if err != nil {
		return nil, err
	}
	pulled := sess.transport.pulledWith()
	repo.PlainHTTP = pulled.scheme == "http"
	repo.Client = &http.Client{Transport: &authTransport{base: sess.transport, host: pulled.host, authorization: pulled.authorization}}
	return repo, nil
}

// sigstoreReferrers returns the artifact types of the sigstore and cosign
// signatures stored for digest dgst as OCI referrers (cosign's newer
// bundle format), sorted, so that a refusal can say they exist. A
// registry that cannot list referrers has none to report.
func sigstoreReferrers(ctx context.Context, sess *session, base, dgst string) []string {
	repo, err := signatureRepository(sess, base)
	if err != nil {
		return nil
	}
	var types []string
	_ = repo.Referrers(ctx, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.Digest(dgst)}, "", func(refs []ocispec.Descriptor) error {
		for _, r := range refs {
			if strings.HasPrefix(r.ArtifactType, "application/vnd.dev.sigstore.") || strings.HasPrefix(r.ArtifactType, "application/vnd.dev.cosign.") {
				types = append(types, r.ArtifactType)
			}
		}
		return nil
	})
	slices.Sort(types)
	return slices.Compact(types)
}

// authTransport sends the signature requests with the Authorization the
// registry accepted for the chart (the same repository), since Helm's
// registry client keeps its credentials to itself. Only requests to that
// host carry it: a blob redirected to storage elsewhere goes without.
type authTransport struct {
	base          http.RoundTripper
	host          string
	authorization string
}

// RoundTrip implements http.RoundTripper.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.authorization != "" && req.URL.Host == t.host && req.Header.Get("Authorization") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", t.authorization)
	}
	return t.base.RoundTrip(req)
}
