package source

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/url"
	"strings"
	"testing"
	"time"

	commonv1 "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	trustrootv1 "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/helmfleet/helmfleet/internal/ocitest"
)

// fulcio is a Fulcio-like CA made in the test: a self-signed root that
// issues short-lived code-signing leaf certificates.
type fulcio struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
}

func newFulcio(t *testing.T, name string) *fulcio {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &fulcio{key: key, cert: cert}
}

// leaf issues a code-signing certificate for subject (an email or a URI)
// from OIDC issuer, with Fulcio's issuer extensions, and its key.
// Each edit changes the certificate template before it is issued.
func (f *fulcio) leaf(t *testing.T, subject, issuer string, edits ...func(*x509.Certificate)) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	v2, err := asn1.MarshalWithParams(issuer, "utf8")
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()),
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: oidFulcioIssuerV1, Value: []byte(issuer)}, {Id: oidFulcioIssuerV2, Value: v2}}}
	if u, err := url.Parse(subject); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		tmpl.EmailAddresses = []string{subject}
	}
	for _, edit := range edits {
		edit(tmpl)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.cert, key.Public(), f.key)
	require.NoError(t, err)
	pem, err := cryptoutils.MarshalCertificateToPEM(&x509.Certificate{Raw: der})
	require.NoError(t, err)
	return key, pem
}

// rekor is a Rekor-like transparency log key signing entry timestamps.
type rekor struct {
	key   *ecdsa.PrivateKey
	der   []byte
	logID string
}

func newRekor(t *testing.T) *rekor {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	require.NoError(t, err)
	sum := sha256.Sum256(der)
	return &rekor{key: key, der: der, logID: hex.EncodeToString(sum[:])}
}

// trustedRootJSON is a Sigstore TrustedRoot document trusting the CAs and
// logs given, as sigstore's tooling writes trusted_root.json.
func trustedRootJSON(t *testing.T, cas []*fulcio, logs []*rekor) []byte {
	t.Helper()
	tr := &trustrootv1.TrustedRoot{MediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1"}
	for _, ca := range cas {
		tr.CertificateAuthorities = append(tr.CertificateAuthorities, &trustrootv1.CertificateAuthority{
			Uri:       "https://fulcio.example",
			CertChain: &commonv1.X509CertificateChain{Certificates: []*commonv1.X509Certificate{{RawBytes: ca.cert.Raw}}}})
	}
	for _, l := range logs {
		tr.Tlogs = append(tr.Tlogs, &trustrootv1.TransparencyLogInstance{BaseUrl: "https://rekor.example",
			HashAlgorithm: commonv1.HashAlgorithm_SHA2_256,
			PublicKey:     &commonv1.PublicKey{RawBytes: l.der, KeyDetails: commonv1.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256},
			LogId:         &commonv1.LogId{KeyId: mustHex(t, l.logID)}})
	}
	raw, err := protojson.Marshal(tr)
	require.NoError(t, err)
	return raw
}

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// keylessSig is what a keyless `cosign sign` pushes: the payload signed
// with the leaf key, the leaf certificate, and a Rekor bundle.
type keylessSig struct {
	payload []byte
	key     *ecdsa.PrivateKey
	cert    []byte
	// log signs the entry timestamp; logID is the log it claims, the
	// log's own when "".
	log   *rekor
	logID string
	// signer signs instead of key when set; at is the integrated time,
	// now when zero; tamper changes the payload after it was signed
	// and logged.
	signer *ecdsa.PrivateKey
	at     time.Time
	tamper func([]byte) []byte
	// loggedCert, when set, is the certificate the Rekor entry records
	// instead of cert; otherSig has it record another signature.
	loggedCert []byte
	otherSig   bool
}

// push pushes the signature under the cosign tag of digest in repo.
func (k keylessSig) push(t *testing.T, repo *remote.Repository, digest string) {
	t.Helper()
	h := sha256.Sum256(k.payload)
	signer := k.key
	if k.signer != nil {
		signer = k.signer
	}
	sig, err := ecdsa.SignASN1(rand.Reader, signer, h[:])
	require.NoError(t, err)
	logged, loggedCert := sig, k.cert
	if k.otherSig {
		logged, err = ecdsa.SignASN1(rand.Reader, signer, h[:])
		require.NoError(t, err)
	}
	if k.loggedCert != nil {
		loggedCert = k.loggedCert
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": map[string]any{
		"data":      map[string]any{"hash": map[string]any{"algorithm": "sha256", "value": hex.EncodeToString(h[:])}},
		"signature": map[string]any{"content": base64.StdEncoding.EncodeToString(logged), "publicKey": map[string]any{"content": base64.StdEncoding.EncodeToString(loggedCert)}},
	}})
	require.NoError(t, err)
	logID := k.logID
	if logID == "" {
		logID = k.log.logID
	}
	at := k.at
	if at.IsZero() {
		at = time.Now()
	}
	entry := rekorEntry{Body: base64.StdEncoding.EncodeToString(body), IntegratedTime: at.Unix(), LogID: logID, LogIndex: 42}
	canonical, err := json.Marshal(entry)
	require.NoError(t, err)
	eh := sha256.Sum256(canonical)
	set, err := ecdsa.SignASN1(rand.Reader, k.log.key, eh[:])
	require.NoError(t, err)
	bundle, err := json.Marshal(rekorBundle{SignedEntryTimestamp: set, Payload: entry})
	require.NoError(t, err)
	payload := k.payload
	if k.tamper != nil {
		payload = k.tamper(payload)
	}
	ocitest.PushSignature(t, repo, digest, payload, map[string]string{
		cosignSignatureAnnotation:   base64.StdEncoding.EncodeToString(sig),
		cosignCertificateAnnotation: string(k.cert),
		cosignChainAnnotation:       "",
		cosignBundleAnnotation:      string(bundle),
	})
}

// TestVerifyKeyless signs charts keyless in the test (a Fulcio-like CA,
// a Rekor-like log key, a trusted_root.json trusting them) and pushes
// them to an in-process registry: a chart signed by an accepted identity
// resolves naming it; a wrong identity or issuer, another CA, another
// log key, a signature of another digest, or no trusted root is refused,
// naming the object, the digest and the reason.
func TestVerifyKeyless(t *testing.T) {
	host, sigRequests := countingRegistry(t)
	client := newRegistryClient(t)
	repo := ocitest.Repository(t, host, "charts/app", nil)
	ref := host + "/charts/app"
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0", "1.3.0", "1.4.0", "1.5.0", "1.6.0", "1.7.0", "1.8.0", "1.9.0", "1.10.0", "1.11.0", "1.12.0", "1.13.0"} {
		digests[v] = push(t, client, host, "app", v, map[string]string{"NOTES.txt": v})
	}
	ca, otherCA := newFulcio(t, "fulcio"), newFulcio(t, "elsewhere")
	log, otherLog := newRekor(t), newRekor(t)
	const (
		workflow = "https://github.com/acme/app/.github/workflows/release.yaml@refs/heads/main"
		actions  = "https://token.actions.githubusercontent.com"
	)
	sign := func(version, signs string, ca *fulcio, subject, issuer string, log *rekor, logID string) {
		key, cert := ca.leaf(t, subject, issuer)
		keylessSig{payload: ocitest.SimpleSigning(ref, digests[signs]), key: key, cert: cert, log: log, logID: logID}.push(t, repo, digests[version])
	}
	sign("1.0.0", "1.0.0", ca, workflow, actions, log, "")
	sign("1.1.0", "1.1.0", ca, "mallory@example.com", actions, log, "")
	sign("1.2.0", "1.2.0", ca, workflow, "https://accounts.example.com", log, "")
	sign("1.3.0", "1.0.0", ca, workflow, actions, log, "")             // signs another digest
	sign("1.4.0", "1.4.0", otherCA, workflow, actions, log, "")        // certificate from another CA
	sign("1.5.0", "1.5.0", ca, workflow, actions, otherLog, log.logID) // SET by another key, claiming the trusted log
	sign("1.11.0", "1.11.0", ca, workflow, actions, otherLog, "")      // SET of a log not trusted
	// 1.6.0 is not signed.
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	key, cert := ca.leaf(t, workflow, actions)
	keylessSig{payload: ocitest.SimpleSigning(ref, digests["1.7.0"]), key: key, cert: cert, log: log, signer: other}.push(t, repo, digests["1.7.0"])
	keylessSig{payload: ocitest.SimpleSigning(ref, digests["1.8.0"]), key: key, cert: cert, log: log, tamper: func(p []byte) []byte {
		return bytes.Replace(p, []byte(`"optional":null`), []byte(`"optional":{"x":"y"}`), 1)
	}}.push(t, repo, digests["1.8.0"])
	key, cert = ca.leaf(t, workflow, actions, func(c *x509.Certificate) { c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth} })
	keylessSig{payload: ocitest.SimpleSigning(ref, digests["1.9.0"]), key: key, cert: cert, log: log}.push(t, repo, digests["1.9.0"])
	key, cert = ca.leaf(t, workflow, actions)
	_, loggedCert := ca.leaf(t, workflow, actions)
	keylessSig{payload: ocitest.SimpleSigning(ref, digests["1.12.0"]), key: key, cert: cert, log: log, loggedCert: loggedCert}.push(t, repo, digests["1.12.0"])
	keylessSig{payload: ocitest.SimpleSigning(ref, digests["1.13.0"]), key: key, cert: cert, log: log, otherSig: true}.push(t, repo, digests["1.13.0"])
	key, cert = ca.leaf(t, workflow, actions)
	keylessSig{payload: ocitest.SimpleSigning(ref, digests["1.10.0"]), key: key, cert: cert, log: log, at: time.Now().Add(30 * time.Minute)}.push(t, repo, digests["1.10.0"])

	secrets := secretData(map[string]map[string][]byte{
		"flux/sigstore-root": {trustedRootKey: trustedRootJSON(t, []*fulcio{ca}, []*rekor{log})},
	})
	r := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t), Secrets: secrets})
	identity := []OIDCIdentityMatch{{Issuer: "^" + strings.ReplaceAll(actions, ".", `\.`) + "$", Subject: `^https://github\.com/acme/app/`}}
	ociRepo := func(tag string, root *LocalObjectReference, ids []OIDCIdentityMatch) Ref {
		return Ref{OCIRepository: &OCIRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "app"}, Spec: OCIRepositorySpec{
			URL: "oci://" + ref, Reference: &OCIRepositoryRef{Tag: tag},
			Verify: &OCIRepositoryVerification{Provider: "cosign", MatchOIDCIdentity: ids, TrustedRootSecretRef: root}}}}
	}
	root := &LocalObjectReference{Name: "sigstore-root"}
	tests := []struct {
		name    string
		ref     Ref
		version string
		reason  string
		field   string
	}{
		{name: "signed by an accepted identity", ref: ociRepo("1.0.0", root, identity), version: "1.0.0"},
		{name: "identity not accepted", ref: ociRepo("1.1.0", root, identity), version: "1.1.0", field: "spec.verify",
			reason: "identity mallory@example.com (issuer " + actions + ") matches no spec.verify.matchOIDCIdentity entry"},
		{name: "issuer not accepted", ref: ociRepo("1.2.0", root, identity), version: "1.2.0", field: "spec.verify",
			reason: "identity " + workflow + " (issuer https://accounts.example.com) matches no spec.verify.matchOIDCIdentity entry"},
		{name: "signature of another digest", ref: ociRepo("1.3.0", root, identity), version: "1.3.0", field: "spec.verify",
			reason: "but it signs artifact \"" + digests["1.0.0"] + "\""},
		{name: "certificate from another CA", ref: ociRepo("1.4.0", root, identity), version: "1.4.0", field: "spec.verify",
			reason: "the certificate (issuer \"CN=elsewhere\") does not chain to a Fulcio CA of the trusted root"},
		{name: "entry timestamp signed by another key", ref: ociRepo("1.5.0", root, identity), version: "1.5.0", field: "spec.verify",
			reason: "the Rekor bundle's signed entry timestamp does not verify with the key of log " + log.logID},
		{name: "signature not made with the certificate's key", ref: ociRepo("1.7.0", root, identity), version: "1.7.0", field: "spec.verify",
			reason: "the signature does not verify with the key of the certificate of " + workflow},
		{name: "payload tampered after signing", ref: ociRepo("1.8.0", root, identity), version: "1.8.0", field: "spec.verify",
			reason: "the Rekor entry records another payload"},
		{name: "certificate not for code signing", ref: ociRepo("1.9.0", root, identity), version: "1.9.0", field: "spec.verify",
			reason: "the certificate is not for code signing"},
		{name: "logged after the certificate expired", ref: ociRepo("1.10.0", root, identity), version: "1.10.0", field: "spec.verify",
			reason: "not at the integrated time"},
		{name: "entry of a log not trusted", ref: ociRepo("1.11.0", root, identity), version: "1.11.0", field: "spec.verify",
			reason: "the Rekor bundle is from log \"" + otherLog.logID + "\", which is not a tlog of the trusted root"},
		{name: "entry of another certificate", ref: ociRepo("1.12.0", root, identity), version: "1.12.0", field: "spec.verify",
			reason: "the Rekor entry records another certificate"},
		{name: "entry of another signature", ref: ociRepo("1.13.0", root, identity), version: "1.13.0", field: "spec.verify",
			reason: "the Rekor entry records another signature"},
		{name: "unsigned", ref: ociRepo("1.6.0", root, identity), version: "1.6.0", field: "spec.verify",
			reason: "no cosign signature"},
		{name: "no trusted root", ref: ociRepo("1.0.0", nil, identity), version: "1.0.0", field: "spec.verify.trustedRootSecretRef",
			reason: "keyless verification needs spec.verify.trustedRootSecretRef: Sigstore's public-good trusted root is fetched by TUF"},
		{name: "no identity", ref: ociRepo("1.0.0", root, nil), version: "1.0.0", field: "spec.verify.matchOIDCIdentity",
			reason: "keyless verification needs at least one issuer/subject identity"},
		{name: "trusted root Secret missing", ref: ociRepo("1.0.0", &LocalObjectReference{Name: "absent"}, identity), version: "1.0.0",
			field: "spec.verify.trustedRootSecretRef", reason: "read Secret flux/absent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.Resolve(context.Background(), tt.ref)
			signer := ""
			if tt.reason == "" {
				signer = workflow + " (issuer " + actions + ")"
			}
			requireResolved(t, got, err, digests[tt.version], signer, "oci://"+ref, "OCIRepository flux/app", tt.field, tt.reason)
		})
	}

	t.Run("a digest is verified once per trusted root and identities", func(t *testing.T) {
		before := sigRequests.Load()
		for range 3 {
			got, err := r.Resolve(context.Background(), ociRepo("1.0.0", root, identity))
			require.NoError(t, err)
			assert.Equal(t, workflow+" (issuer "+actions+")", got.Verified.Signer)
		}
		assert.Equal(t, before, sigRequests.Load(), "cached: no signature fetched again")
		wider := append([]OIDCIdentityMatch{{Issuer: ".*", Subject: "^nobody@example\\.com$"}}, identity...)
		_, err := r.Resolve(context.Background(), ociRepo("1.0.0", root, wider))
		require.NoError(t, err)
		assert.Equal(t, before+1, sigRequests.Load(), "other identities verify again")
		for range 2 {
			_, err = r.Resolve(context.Background(), ociRepo("1.1.0", root, identity))
			require.ErrorIs(t, err, ErrUnverified)
		}
		assert.Equal(t, before+3, sigRequests.Load(), "a refusal is not cached")
	})

	t.Run("HelmChart from an OCI HelmRepository", func(t *testing.T) {
		helmRepo := &HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "charts"},
			Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: RepositoryTypeOCI}}
		chart := func(version string) Ref {
			return Ref{HelmRepository: helmRepo, HelmChart: &HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "app"},
				Spec: HelmChartSpec{Chart: "app", Version: version, Verify: &OCIRepositoryVerification{MatchOIDCIdentity: identity, TrustedRootSecretRef: root}}}}
		}
		got, err := r.Resolve(context.Background(), chart("1.0.0"))
		require.NoError(t, err)
		assert.Equal(t, workflow+" (issuer "+actions+")", got.Verified.Signer)
		_, err = r.Resolve(context.Background(), chart("1.1.0"))
		require.ErrorIs(t, err, ErrUnverified)
		assert.Contains(t, err.Error(), "HelmChart flux/app spec.verify (artifact "+digests["1.1.0"]+"): no keyless signature verifies with the trusted root of Secret flux/sigstore-root")
	})

	t.Run("a HelmRelease's chart.spec.verify cannot name a trusted root", func(t *testing.T) {
		helmRepo := &HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "charts"},
			Spec: HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: RepositoryTypeOCI}}
		got, err := r.Resolve(context.Background(), Ref{Chart: "app", Version: "1.0.0", HelmRepository: helmRepo, Verify: &Verification{
			Provider: "cosign", Namespace: "flux", Object: "HelmRelease apps/app", Field: "spec.chart.spec.verify"}})
		require.ErrorIs(t, err, ErrUnverified)
		assert.Nil(t, got)
		var ve *VerifyError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, "spec.chart.spec.verify.secretRef", ve.Field)
		assert.Contains(t, err.Error(), "keyless verification needs a trusted root")
	})

	t.Run("the trusted root decides", func(t *testing.T) {
		// The same good signature against a root trusting only the
		// other CA, or only the other log, is refused.
		for name, data := range map[string][]byte{
			"other CA":  trustedRootJSON(t, []*fulcio{otherCA}, []*rekor{log}),
			"other log": trustedRootJSON(t, []*fulcio{ca}, []*rekor{otherLog}),
		} {
			r := NewOCIResolver(OCIOptions{ClientOptions: registryOptions(t),
				Secrets: secretData(map[string]map[string][]byte{"flux/sigstore-root": {trustedRootKey: data}})})
			_, err := r.Resolve(context.Background(), ociRepo("1.0.0", root, identity))
			require.ErrorIs(t, err, ErrUnverified, name)
		}
	})
}
