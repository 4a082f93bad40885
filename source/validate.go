package source

import (
	"fmt"
	"regexp"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
)

// ValidationError reports every problem of one object: its Kind,
// Namespace and Name, and its Errors (each a field path, the offending
// value and what is wrong) in field order. It is release.ValidationError:
// release reports the problems of the source kinds unchanged.
type ValidationError = fieldcheck.ValidationError

// Kinds a HelmChart's spec.sourceRef may name besides HelmRepository, and
// its reconcile strategies, as Flux's CRD enumerates them.
const (
	kindGitRepository             = "GitRepository"
	kindBucket                    = "Bucket"
	reconcileStrategyChartVersion = "ChartVersion"
	reconcileStrategyRevision     = "Revision"
)

// digestRe is an OCI digest: algorithm:hex.
var digestRe = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]{32,}$`)

// Validate checks the HelmRepository and returns every problem as a
// *ValidationError, or nil: metadata.name and metadata.namespace (call
// it after defaulting the namespace), the URL's scheme (http, https, or
// oci with type oci), the type and provider, durations, secret
// references and the AnnotationAllowMissingDigest value.
func (r *HelmRepository) Validate() error {
	var p fieldcheck.Problems
	fieldcheck.Meta(&p, r.ObjectMeta)
	fieldcheck.Enum(&p, "spec.type", r.Spec.Type, RepositoryTypeDefault, RepositoryTypeOCI)
	schemes := []string{"http", "https"}
	if r.Spec.Type == RepositoryTypeOCI {
		schemes = []string{"oci"}
	}
	fieldcheck.URL(&p, "spec.url", r.Spec.URL, schemes...)
	validateAccess(&p, r.Spec.Provider, &r.Spec.Interval, r.Spec.Timeout, r.Spec.SecretRef, r.Spec.CertSecretRef)
	if v, ok := r.Annotations[AnnotationAllowMissingDigest]; ok && v != "true" && v != "false" {
		p.Add("metadata.annotations["+AnnotationAllowMissingDigest+"]", v, `must be "true" or "false"`)
	}
	return p.Err(KindHelmRepository, r.ObjectMeta)
}

// Validate checks the OCIRepository and returns every problem as a
// *ValidationError, or nil: metadata.name and metadata.namespace, an
// oci:// URL, the reference (digest syntax, semver constraint, semver
// filter), the layer selector, the verification and provider, durations
// and secret references.
func (r *OCIRepository) Validate() error {
	var p fieldcheck.Problems
	fieldcheck.Meta(&p, r.ObjectMeta)
	fieldcheck.URL(&p, "spec.url", r.Spec.URL, "oci")
	if ref := r.Spec.Reference; ref != nil {
		if ref.Digest != "" && !digestRe.MatchString(ref.Digest) {
			p.Add("spec.ref.digest", ref.Digest, "must be algorithm:hex, e.g. sha256:<64 hex digits>")
		}
		if ref.SemVer != "" {
			if _, err := semver.NewConstraint(ref.SemVer); err != nil {
				p.Add("spec.ref.semver", ref.SemVer, "invalid semver constraint: %v", err)
			}
		}
		if ref.SemverFilter != "" {
			if _, err := regexp.Compile(ref.SemverFilter); err != nil {
				p.Add("spec.ref.semverFilter", ref.SemverFilter, "invalid regular expression: %v", err)
			}
		}
	}
	if ls := r.Spec.LayerSelector; ls != nil {
		fieldcheck.Enum(&p, "spec.layerSelector.operation", ls.Operation, "extract", "copy")
	}
	if v := r.Spec.Verify; v != nil {
		if v.Provider == "" {
			p.Add("spec.verify.provider", "", "is required; one of cosign, notation")
		}
		validateVerify(&p, v)
	}
	validateAccess(&p, r.Spec.Provider, &r.Spec.Interval, r.Spec.Timeout, r.Spec.SecretRef, r.Spec.CertSecretRef)
	validateSecretRef(&p, "spec.proxySecretRef", r.Spec.ProxySecretRef)
	return p.Err(KindOCIRepository, r.ObjectMeta)
}

// Validate checks the HelmChart and returns every problem as a
// *ValidationError, or nil: metadata.name and metadata.namespace, chart
// name, source reference kind and name, version constraint, reconcile
// strategy, durations and verification.
func (c *HelmChart) Validate() error {
	var p fieldcheck.Problems
	fieldcheck.Meta(&p, c.ObjectMeta)
	if c.Spec.Chart == "" {
		p.Add("spec.chart", "", "is required")
	}
	fieldcheck.Kind(&p, "spec.sourceRef.kind", c.Spec.SourceRef.Kind, KindHelmRepository, kindGitRepository, kindBucket)
	fieldcheck.RefName(&p, "spec.sourceRef", c.Spec.SourceRef.Name, "")
	if c.Spec.SourceRef.Kind == KindHelmRepository {
		fieldcheck.Version(&p, "spec.version", c.Spec.Version)
	}
	fieldcheck.Enum(&p, "spec.reconcileStrategy", c.Spec.ReconcileStrategy, reconcileStrategyChartVersion, reconcileStrategyRevision)
	fieldcheck.Duration(&p, "spec.interval", &c.Spec.Interval)
	if v := c.Spec.Verify; v != nil {
		validateVerify(&p, v)
	}
	return p.Err(KindHelmChart, c.ObjectMeta)
}

// validateAccess checks the fields a HelmRepository and an OCIRepository
// share: spec.provider, spec.interval, spec.timeout, spec.secretRef and
// spec.certSecretRef.
func validateAccess(p *fieldcheck.Problems, provider string, interval, timeout *metav1.Duration, secretRef, certSecretRef *LocalObjectReference) {
	fieldcheck.Enum(p, "spec.provider", provider, "generic", "aws", "azure", "gcp")
	fieldcheck.Duration(p, "spec.interval", interval)
	fieldcheck.Duration(p, "spec.timeout", timeout)
	validateSecretRef(p, "spec.secretRef", secretRef)
	validateSecretRef(p, "spec.certSecretRef", certSecretRef)
}

func validateSecretRef(p *fieldcheck.Problems, path string, ref *LocalObjectReference) {
	if ref != nil && ref.Name == "" {
		p.Add(path+".name", "", "is required")
	}
}

// validateVerify checks a spec.verify block: what fieldcheck.Verify
// refuses, and the matchOIDCIdentity regular expressions.
func validateVerify(p *fieldcheck.Problems, v *OCIRepositoryVerification) {
	fieldcheck.Verify(p, "spec.verify", v.Provider, v.SecretRef != nil, v.TrustedRootSecretRef != nil,
		len(v.MatchOIDCIdentity), "spec.verify.trustedRootSecretRef")
	validateSecretRef(p, "spec.verify.trustedRootSecretRef", v.TrustedRootSecretRef)
	for i, m := range v.MatchOIDCIdentity {
		for _, f := range []struct{ name, re string }{{"issuer", m.Issuer}, {"subject", m.Subject}} {
			path := fmt.Sprintf("spec.verify.matchOIDCIdentity[%d].%s", i, f.name)
			if f.re == "" {
				p.Add(path, "", "is required")
			} else if _, err := regexp.Compile(f.re); err != nil {
				p.Add(path, f.re, "invalid regular expression: %v", err)
			}
		}
	}
}
