package source

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnverified: a source asks for signature verification (spec.verify)
// and the chart could not be verified: no signature, a wrong one, no
// trusted key, or a provider or mode this package cannot check. The chart
// is refused, never handed on unverified.
var ErrUnverified = errors.New("signature verification failed")

// Verification is the signature check a chart must pass before a resolver
// hands it on: Flux's spec.verify of an OCIRepository or HelmChart, or a
// HelmRelease's spec.chart.spec.verify, with where it was written.
type Verification struct {
	// Provider is "cosign" (the default when empty) or "notation".
	Provider string
	// SecretRef names the Secret, in Namespace, holding the trusted
	// public keys (its keys ending in ".pub", as Flux reads them).
	SecretRef *LocalObjectReference
	// MatchOIDCIdentity lists the keyless identities accepted.
	MatchOIDCIdentity []OIDCIdentityMatch
	// TrustedRootSecretRef names the Secret, in Namespace, whose key
	// trusted_root.json is the Sigstore trusted root keyless signatures
	// are verified against.
	TrustedRootSecretRef *LocalObjectReference
	// Namespace is where SecretRef is read: the namespace of the object
	// that holds the verify block (for a HelmRelease's chart.spec, the
	// HelmRepository's, where Flux creates the HelmChart).
	Namespace string
	// Object names the object that asked, e.g. "HelmChart flux/podinfo".
	Object string
	// Field is the path of the verify block in Object, e.g. "spec.verify".
	Field string
}

// verification returns the check the source asks for: ref.Verify, else
// the HelmChart's or OCIRepository's spec.verify; nil when none.
func (r Ref) verification() *Verification {
	if r.Verify != nil {
		return r.Verify
	}
	from := func(v *OCIRepositoryVerification, kind, ns, name string) *Verification {
		return &Verification{Provider: v.Provider, SecretRef: v.SecretRef, MatchOIDCIdentity: v.MatchOIDCIdentity,
			TrustedRootSecretRef: v.TrustedRootSecretRef, Namespace: ns, Object: kind + " " + ns + "/" + name, Field: "spec.verify"}
	}
	switch {
	case r.HelmChart != nil && r.HelmChart.Spec.Verify != nil:
		return from(r.HelmChart.Spec.Verify, KindHelmChart, r.HelmChart.Namespace, r.HelmChart.Name)
	case r.OCIRepository != nil && r.OCIRepository.Spec.Verify != nil:
		return from(r.OCIRepository.Spec.Verify, KindOCIRepository, r.OCIRepository.Namespace, r.OCIRepository.Name)
	}
	return nil
}

// provider returns the provider, cosign when empty (Flux's default).
func (v *Verification) provider() string {
	if v.Provider == "" {
		return "cosign"
	}
	return v.Provider
}

// VerifyError says why a chart was refused for its spec.verify: the object
// and field that asked, the artifact digest (when it was known) and the
// reason. It wraps ErrUnverified; the *Error around it names the source
// and the chart.
type VerifyError struct {
	// Object names the object holding the verify block.
	Object string
	// Field is the path of the offending setting, e.g. "spec.verify.provider".
	Field string
	// Digest is the artifact's manifest digest, when it was pulled.
	Digest string
	// Reason says what failed.
	Reason string
	// Err is an underlying cause, if any.
	Err error
}

// Error implements error.
func (e *VerifyError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: ", ErrUnverified)
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(" ")
	}
	b.WriteString(e.Field)
	if e.Digest != "" {
		fmt.Fprintf(&b, " (artifact %s)", e.Digest)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns ErrUnverified and the cause.
func (e *VerifyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrUnverified, e.Err}
	}
	return []error{ErrUnverified}
}

// refuseUnverifiable refuses, before any request, a reference whose source
// asks for verification a resolver that cannot verify would ignore: an
// HTTP(S) HelmRepository or a local chart. Flux verifies only OCI
// artifacts; its HelmChart from an HTTP repository with spec.verify fails
// to build ("not implemented"), and helmfleet refuses it the same way.
func refuseUnverifiable(ref Ref, src string) error {
	v := ref.verification()
	if v == nil {
		return nil
	}
	return &Error{Op: "verify", Source: src, Chart: ref.Chart, Constraint: ref.Version, Err: &VerifyError{
		Object: v.Object, Field: v.Field + ".provider",
		Reason: fmt.Sprintf("%s verification applies only to OCI artifacts (an OCIRepository or an OCI HelmRepository); this source cannot be verified, refusing rather than installing it unverified", v.provider()),
	}}
}

// sourceURL returns the URL (or path) of the source ref names.
func sourceURL(ref Ref) string {
	switch {
	case ref.OCIRepository != nil:
		return ref.OCIRepository.Spec.URL
	case ref.HelmRepository != nil:
		return ref.HelmRepository.Spec.URL
	}
	return ref.Path
}

// Verified says how a chart artifact passed its verification.
type Verified struct {
	// Provider is the provider that verified it: "cosign".
	Provider string
	// Digest is the manifest digest the signature covers.
	Digest string
	// Signer names who signed: with keys, the trusted key that verified
	// the signature, the Secret and its key, e.g.
	// "flux/cosign-keys:cosign.pub"; keyless, the certificate's identity
	// and OIDC issuer, e.g. "dev@example.com (issuer https://accounts.example.com)".
	Signer string
}
