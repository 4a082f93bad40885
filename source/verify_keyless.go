package source

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	commonv1 "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	trustrootv1 "github.com/sigstore/protobuf-specs/gen/pb-go/trustroot/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"google.golang.org/protobuf/encoding/protojson"
)

// Cosign's annotations of a keyless signature layer.
const (
	// cosignCertificateAnnotation holds the PEM leaf certificate.
	cosignCertificateAnnotation = "dev.sigstore.cosign/certificate"
	// cosignChainAnnotation holds the PEM intermediates and root.
	cosignChainAnnotation = "dev.sigstore.cosign/chain"
	// cosignBundleAnnotation holds the Rekor bundle: the signed entry
	// timestamp and the entry it signs.
	cosignBundleAnnotation = "dev.sigstore.cosign/bundle"
	// trustedRootKey is the key of the trustedRootSecretRef Secret.
	trustedRootKey = "trusted_root.json"
)

// The Fulcio certificate extensions naming the OIDC issuer: V1 holds the
// raw string, V2 a DER UTF8String.
var (
	oidFulcioIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	oidFulcioIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

// timeRange is a validity window; a zero end is open.
type timeRange struct{ start, end time.Time }

func rangeOf(r *commonv1.TimeRange) timeRange {
	var tr timeRange
	if r.GetStart() != nil {
		tr.start = r.GetStart().AsTime()
	}
	if r.GetEnd() != nil {
		tr.end = r.GetEnd().AsTime()
	}
	return tr
}

func (r timeRange) contains(t time.Time) bool {
	return !t.Before(r.start) && (r.end.IsZero() || !t.After(r.end))
}

// fulcioCA is one certificate authority of a trusted root.
type fulcioCA struct {
	roots, intermediates []*x509.Certificate
	valid                timeRange
}

// rekorLog is one transparency log key of a trusted root.
type rekorLog struct {
	logID    string // hex
	verifier signature.Verifier
	valid    timeRange
}

// trustedRoot is the part of a Sigstore TrustedRoot keyless verification
// uses: the Fulcio CAs and the Rekor keys.
type trustedRoot struct {
	cas  []fulcioCA
	logs []rekorLog
}

// parseTrustedRoot reads a Sigstore TrustedRoot JSON document (protobuf
// JSON, trustroot.v1).
func parseTrustedRoot(raw []byte) (*trustedRoot, error) {
	var tr trustrootv1.TrustedRoot
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(raw, &tr); err != nil {
		return nil, fmt.Errorf("not a Sigstore TrustedRoot document: %w", err)
	}
	var root trustedRoot
	for i, ca := range tr.GetCertificateAuthorities() {
		var certs []*x509.Certificate
		for j, c := range ca.GetCertChain().GetCertificates() {
			cert, err := x509.ParseCertificate(c.GetRawBytes())
			if err != nil {
				return nil, fmt.Errorf("certificateAuthorities[%d].certChain.certificates[%d]: %w", i, j, err)
			}
			certs = append(certs, cert)
		}
		if len(certs) == 0 {
			return nil, fmt.Errorf("certificateAuthorities[%d] has no certificates", i)
		}
		// The chain runs from the issuing CA to the root, the last.
		root.cas = append(root.cas, fulcioCA{roots: certs[len(certs)-1:], intermediates: certs[:len(certs)-1], valid: rangeOf(ca.GetValidFor())})
	}
	for i, l := range tr.GetTlogs() {
		der := l.GetPublicKey().GetRawBytes()
		pub, err := x509.ParsePKIXPublicKey(der)
		if err != nil {
			return nil, fmt.Errorf("tlogs[%d].publicKey: %w", i, err)
		}
		ver, err := signature.LoadVerifier(pub, crypto.SHA256)
		if err != nil {
			return nil, fmt.Errorf("tlogs[%d].publicKey: %w", i, err)
		}
		id := l.GetLogId().GetKeyId()
		if len(id) == 0 {
			sum := sha256.Sum256(der)
			id = sum[:]
		}
		root.logs = append(root.logs, rekorLog{logID: hex.EncodeToString(id), verifier: ver, valid: rangeOf(l.GetPublicKey().GetValidFor())})
	}
	switch {
	case len(root.cas) == 0:
		return nil, fmt.Errorf("no certificateAuthorities (Fulcio CAs)")
	case len(root.logs) == 0:
		return nil, fmt.Errorf("no tlogs (Rekor keys)")
	}
	return &root, nil
}

// identityMatch is a compiled matchOIDCIdentity entry.
type identityMatch struct{ issuer, subject *regexp.Regexp }

// verifyKeyless verifies the keyless cosign signatures of digest dgst
// against the trusted root of v.TrustedRootSecretRef and the identities
// of v.MatchOIDCIdentity, and returns who signed it.
func (r *OCIResolver) verifyKeyless(ctx context.Context, sess *session, base string, v *Verification, dgst string, fail func(field, reason string, err error) error) (*Verified, error) {
	const public = "Sigstore's public-good trusted root is fetched by TUF, which helmfleet cannot reach offline"
	switch {
	case v.Field != "spec.verify" && v.TrustedRootSecretRef == nil:
		// A HelmRelease's chart.spec.verify has no trustedRootSecretRef.
		return nil, fail(".secretRef", fmt.Sprintf("keyless verification needs a trusted root (spec.verify.trustedRootSecretRef of a HelmChart or OCIRepository), which %s cannot name, and %s: %s", v.Field, public, refusing), nil)
	case v.TrustedRootSecretRef == nil || v.TrustedRootSecretRef.Name == "":
		return nil, fail(".trustedRootSecretRef", fmt.Sprintf("keyless verification needs %s.trustedRootSecretRef: %s: %s", v.Field, public, refusing), nil)
	case len(v.MatchOIDCIdentity) == 0:
		return nil, fail(".matchOIDCIdentity", "keyless verification needs at least one issuer/subject identity, else any certificate of the trusted root would pass: "+refusing, nil)
	case r.secrets == nil:
		return nil, fail(".trustedRootSecretRef", "the resolver has no SecretReader (OCIOptions.Secrets) to read the trusted root: "+refusing, nil)
	}
	ids := make([]identityMatch, len(v.MatchOIDCIdentity))
	h := sha256.New()
	for i, m := range v.MatchOIDCIdentity {
		iss, err := regexp.Compile(m.Issuer)
		if err != nil {
			return nil, fail(fmt.Sprintf(".matchOIDCIdentity[%d].issuer", i), "invalid regular expression", err)
		}
		sub, err := regexp.Compile(m.Subject)
		if err != nil {
			return nil, fail(fmt.Sprintf(".matchOIDCIdentity[%d].subject", i), "invalid regular expression", err)
		}
		ids[i] = identityMatch{issuer: iss, subject: sub}
		fmt.Fprintf(h, "%d:%s%d:%s", len(m.Issuer), m.Issuer, len(m.Subject), m.Subject)
	}
	secret := v.Namespace + "/" + v.TrustedRootSecretRef.Name
	data, err := r.secrets.SecretData(ctx, v.Namespace, v.TrustedRootSecretRef.Name)
	if err != nil {
		return nil, fail(".trustedRootSecretRef", "read Secret "+secret, err)
	}
	raw, ok := data[trustedRootKey]
	if !ok {
		return nil, fail(".trustedRootSecretRef", fmt.Sprintf("Secret %s has no key %s", secret, trustedRootKey), nil)
	}
	root, err := parseTrustedRoot(raw)
	if err != nil {
		return nil, fail(".trustedRootSecretRef", fmt.Sprintf("Secret %s key %s", secret, trustedRootKey), err)
	}
	h.Write(raw)
	cacheKey := dgst + "\x00keyless\x00" + hex.EncodeToString(h.Sum(nil))
	got, reasons, err := r.firstVerified(ctx, sess, base, dgst, cacheKey, fail, func(s cosignSignature) (string, string) {
		return s.checkKeyless(root, ids, dgst)
	})
	if got != nil || err != nil {
		return got, err
	}
	return nil, fail("", fmt.Sprintf("no keyless signature verifies with the trusted root of Secret %s: %s", secret, strings.Join(reasons, "; ")), nil)
}

// rekorBundle is cosign's dev.sigstore.cosign/bundle annotation.
type rekorBundle struct {
	SignedEntryTimestamp []byte     `json:"SignedEntryTimestamp"`
	Payload              rekorEntry `json:"Payload"`
}

// rekorEntry is the entry a signed entry timestamp signs. Its fields are
// in the order of RFC 8785 canonical JSON (sorted keys), which is what
// Rekor signs.
type rekorEntry struct {
	Body           string `json:"body"`
	IntegratedTime int64  `json:"integratedTime"`
	LogID          string `json:"logID"`
	LogIndex       int64  `json:"logIndex"`
}

// hashedRekord is the part of a hashedrekord entry body checked against
// the signature it records.
type hashedRekord struct {
	Kind string `json:"kind"`
	Spec struct {
		Data struct {
			Hash struct {
				Algorithm string `json:"algorithm"`
				Value     string `json:"value"`
			} `json:"hash"`
		} `json:"data"`
		Signature struct {
			Content   string `json:"content"`
			PublicKey struct {
				Content string `json:"content"`
			} `json:"publicKey"`
		} `json:"signature"`
	} `json:"spec"`
}

// checkKeyless verifies a keyless signature as cosign does offline: the
// Rekor bundle's signed entry timestamp with a tlog key of the trusted
// root, the entry recording this signature, certificate and payload; the
// leaf certificate chaining to a Fulcio CA of the trusted root at the
// integrated time, for code signing; its identity matching one of ids;
// the signature over the payload with the leaf key; and the payload's
// claim of digest dgst. It returns the signer, or why it fails.
func (s cosignSignature) checkKeyless(root *trustedRoot, ids []identityMatch, dgst string) (string, string) {
	if s.certificate == "" {
		return "", "no certificate (" + cosignCertificateAnnotation + "): not a keyless signature"
	}
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(s.certificate))
	if err != nil || len(certs) != 1 {
		return "", "the certificate (" + cosignCertificateAnnotation + ") is not one PEM certificate"
	}
	leaf := certs[0]
	var chain []*x509.Certificate
	if s.chain != "" {
		if chain, err = cryptoutils.UnmarshalCertificatesFromPEM([]byte(s.chain)); err != nil {
			return "", "the chain (" + cosignChainAnnotation + ") is not PEM certificates"
		}
	}
	signed, reason := s.checkBundle(root)
	if reason != "" {
		return "", reason
	}
	if reason := checkChain(root, leaf, chain, signed); reason != "" {
		return "", reason
	}
	subject, issuer, reason := matchIdentity(leaf, ids)
	if reason != "" {
		return "", reason
	}
	signer := fmt.Sprintf("%s (issuer %s)", subject, issuer)
	ver, err := signature.LoadVerifier(leaf.PublicKey, crypto.SHA256)
	if err != nil {
		return "", fmt.Sprintf("the certificate of %s has an unusable key: %v", signer, err)
	}
	if ver.VerifySignature(bytes.NewReader(s.signature), bytes.NewReader(s.payload)) != nil {
		return "", fmt.Sprintf("the signature does not verify with the key of the certificate of %s", signer)
	}
	if reason := s.claims(signer, dgst); reason != "" {
		return "", reason
	}
	return signer, ""
}

// checkBundle verifies the Rekor bundle: the signed entry timestamp with
// the tlog key of its logID, valid at the integrated time, over an entry
// that records this very signature, certificate and payload. It returns
// the integrated time.
func (s cosignSignature) checkBundle(root *trustedRoot) (time.Time, string) {
	if s.bundle == "" {
		return time.Time{}, "no Rekor bundle (" + cosignBundleAnnotation + "): the signing time cannot be verified offline"
	}
	var b rekorBundle
	if err := json.Unmarshal([]byte(s.bundle), &b); err != nil {
		return time.Time{}, "the Rekor bundle (" + cosignBundleAnnotation + ") is not JSON of a signed entry timestamp"
	}
	canonical, err := json.Marshal(b.Payload)
	if err != nil {
		return time.Time{}, "the Rekor bundle cannot be encoded"
	}
	signed := time.Unix(b.Payload.IntegratedTime, 0).UTC()
	var log *rekorLog
	for i := range root.logs {
		if root.logs[i].logID == b.Payload.LogID {
			log = &root.logs[i]
		}
	}
	switch {
	case log == nil:
		return time.Time{}, fmt.Sprintf("the Rekor bundle is from log %q, which is not a tlog of the trusted root", b.Payload.LogID)
	case log.verifier.VerifySignature(bytes.NewReader(b.SignedEntryTimestamp), bytes.NewReader(canonical)) != nil:
		return time.Time{}, fmt.Sprintf("the Rekor bundle's signed entry timestamp does not verify with the key of log %s", b.Payload.LogID)
	case !log.valid.contains(signed):
		return time.Time{}, fmt.Sprintf("the Rekor bundle's integrated time %s is outside the validity of log %s", signed.Format(time.RFC3339), b.Payload.LogID)
	}
	body, err := base64.StdEncoding.DecodeString(b.Payload.Body)
	var rec hashedRekord
	if err != nil || json.Unmarshal(body, &rec) != nil || rec.Kind != "hashedrekord" {
		return time.Time{}, "the Rekor entry is not a hashedrekord"
	}
	sum := sha256.Sum256(s.payload)
	recCert, _ := base64.StdEncoding.DecodeString(rec.Spec.Signature.PublicKey.Content)
	switch {
	case rec.Spec.Data.Hash.Algorithm != "sha256" || rec.Spec.Data.Hash.Value != hex.EncodeToString(sum[:]):
		return time.Time{}, "the Rekor entry records another payload"
	case rec.Spec.Signature.Content != base64.StdEncoding.EncodeToString(s.signature):
		return time.Time{}, "the Rekor entry records another signature"
	case !samePEM(recCert, []byte(s.certificate)):
		return time.Time{}, "the Rekor entry records another certificate"
	}
	return signed, ""
}

// samePEM reports whether two PEM documents hold the same certificates.
func samePEM(a, b []byte) bool {
	ca, err1 := cryptoutils.UnmarshalCertificatesFromPEM(a)
	cb, err2 := cryptoutils.UnmarshalCertificatesFromPEM(b)
	if err1 != nil || err2 != nil || len(ca) != len(cb) || len(ca) == 0 {
		return false
	}
	for i := range ca {
		if !ca[i].Equal(cb[i]) {
			return false
		}
	}
	return true
}

// checkChain verifies that leaf chains, through the trusted root's
// intermediates and those of chain, to a root of a Fulcio CA of the
// trusted root valid at time signed, every certificate valid then, and
// that it is for code signing.
func checkChain(root *trustedRoot, leaf *x509.Certificate, chain []*x509.Certificate, signed time.Time) string {
	if signed.Before(leaf.NotBefore) || signed.After(leaf.NotAfter) {
		return fmt.Sprintf("the certificate is valid from %s to %s, not at the integrated time %s",
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), signed.Format(time.RFC3339))
	}
	codeSigning := false
	for _, u := range leaf.ExtKeyUsage {
		codeSigning = codeSigning || u == x509.ExtKeyUsageCodeSigning
	}
	if !codeSigning {
		return "the certificate is not for code signing (no code-signing extended key usage)"
	}
	for _, ca := range root.cas {
		if !ca.valid.contains(signed) {
			continue
		}
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		for _, c := range ca.roots {
			roots.AddCert(c)
		}
		for _, c := range append(append([]*x509.Certificate{}, ca.intermediates...), chain...) {
			inter.AddCert(c)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: signed,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}}); err == nil {
			return ""
		}
	}
	return fmt.Sprintf("the certificate (issuer %q) does not chain to a Fulcio CA of the trusted root valid at %s", leaf.Issuer.String(), signed.Format(time.RFC3339))
}

// matchIdentity returns the certificate's subject (a SAN, email or URI)
// and OIDC issuer (Fulcio extension) when they match one of ids, as
// cosign matches its --certificate-identity-regexp and
// --certificate-oidc-issuer-regexp (Go regular expressions, unanchored).
func matchIdentity(leaf *x509.Certificate, ids []identityMatch) (string, string, string) {
	issuer := ""
	for _, ext := range leaf.Extensions {
		switch {
		case ext.Id.Equal(oidFulcioIssuerV2):
			var v string
			if rest, err := asn1.UnmarshalWithParams(ext.Value, &v, "utf8"); err == nil && len(rest) == 0 {
				issuer = v
			}
		case ext.Id.Equal(oidFulcioIssuerV1) && issuer == "":
			issuer = string(ext.Value)
		}
	}
	if issuer == "" {
		return "", "", "the certificate names no OIDC issuer (Fulcio extension 1.3.6.1.4.1.57264.1.8 or .1.1)"
	}
	subjects := append([]string{}, leaf.EmailAddresses...)
	for _, u := range leaf.URIs {
		subjects = append(subjects, u.String())
	}
	if len(subjects) == 0 {
		return "", "", "the certificate names no subject (email or URI SAN)"
	}
	for _, id := range ids {
		if !id.issuer.MatchString(issuer) {
			continue
		}
		for _, s := range subjects {
			if id.subject.MatchString(s) {
				return s, issuer, ""
			}
		}
	}
	return "", "", fmt.Sprintf("identity %s (issuer %s) matches no spec.verify.matchOIDCIdentity entry", strings.Join(subjects, ", "), issuer)
}
