package release

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/source"
)

// TestValidateVerify: a verify block the resolvers cannot honour is refused
// at validation (notation, keyless cosign without a trusted root or an
// identity), naming the field; cosign with public keys from a Secret, or
// keyless with trustedRootSecretRef and matchOIDCIdentity, is accepted.
func TestValidateVerify(t *testing.T) {
	const refusing = "refusing rather than installing unverified"
	meta := metav1.ObjectMeta{Name: "s", Namespace: "apps"}
	keys := &source.LocalObjectReference{Name: "cosign-keys"}
	root := &source.LocalObjectReference{Name: "sigstore-root"}
	oci := func(v *source.OCIRepositoryVerification) error {
		return ValidateOCIRepository(&source.OCIRepository{ObjectMeta: meta,
			Spec: source.OCIRepositorySpec{URL: "oci://ghcr.io/x/podinfo", Verify: v}})
	}
	chart := func(v *source.OCIRepositoryVerification) error {
		return ValidateHelmChart(&source.HelmChart{ObjectMeta: meta, Spec: source.HelmChartSpec{Chart: "podinfo",
			SourceRef: source.LocalHelmChartSourceReference{Kind: "HelmRepository", Name: "r"}, Verify: v}})
	}
	rel := func(v *HelmChartTemplateVerification) error {
		r := validRelease()
		r.Spec.Chart.Spec.Verify = v
		r.Default()
		return r.Validate()
	}
	tests := []struct {
		name  string
		err   error
		path  string
		value string
		msg   string
	}{
		{name: "oci repository cosign with keys", err: oci(&source.OCIRepositoryVerification{Provider: "cosign", SecretRef: keys})},
		{name: "oci repository notation", err: oci(&source.OCIRepositoryVerification{Provider: "notation", SecretRef: keys}),
			path: "spec.verify.provider", value: "notation", msg: "notation is not supported yet: charts cannot be verified, " + refusing},
		{name: "oci repository keyless with a trusted root", err: oci(&source.OCIRepositoryVerification{Provider: "cosign",
			MatchOIDCIdentity: []source.OIDCIdentityMatch{{Issuer: ".*", Subject: ".*"}}, TrustedRootSecretRef: root})},
		{name: "oci repository keyless without a trusted root", err: oci(&source.OCIRepositoryVerification{Provider: "cosign",
			MatchOIDCIdentity: []source.OIDCIdentityMatch{{Issuer: ".*", Subject: ".*"}}}),
			path: "spec.verify.trustedRootSecretRef", msg: "keyless verification needs spec.verify.trustedRootSecretRef: Sigstore's public-good trusted root is fetched by TUF"},
		{name: "oci repository keyless without identity", err: oci(&source.OCIRepositoryVerification{Provider: "cosign", TrustedRootSecretRef: root}),
			path: "spec.verify.matchOIDCIdentity", msg: "keyless verification needs at least one issuer/subject identity"},
		{name: "oci repository keys and a trusted root", err: oci(&source.OCIRepositoryVerification{Provider: "cosign", SecretRef: keys, TrustedRootSecretRef: root}),
			path: "spec.verify.trustedRootSecretRef", msg: "applies to keyless verification only"},
		{name: "oci repository keys and identities", err: oci(&source.OCIRepositoryVerification{Provider: "cosign", SecretRef: keys,
			MatchOIDCIdentity: []source.OIDCIdentityMatch{{Issuer: ".*", Subject: ".*"}}}),
			path: "spec.verify.matchOIDCIdentity", msg: "applies to keyless verification only"},
		{name: "helm chart cosign with keys", err: chart(&source.OCIRepositoryVerification{Provider: "cosign", SecretRef: keys})},
		{name: "helm chart default provider keyless", err: chart(&source.OCIRepositoryVerification{}),
			path: "spec.verify.trustedRootSecretRef", msg: refusing},
		{name: "helm chart keyless with a trusted root", err: chart(&source.OCIRepositoryVerification{TrustedRootSecretRef: root,
			MatchOIDCIdentity: []source.OIDCIdentityMatch{{Issuer: "^https://token\\.actions\\.githubusercontent\\.com$", Subject: "^https://github\\.com/x/"}}})},
		{name: "helm chart notation", err: chart(&source.OCIRepositoryVerification{Provider: "notation", SecretRef: keys}),
			path: "spec.verify.provider", value: "notation", msg: "notation is not supported yet"},
		{name: "release cosign with keys", err: rel(&HelmChartTemplateVerification{SecretRef: &LocalObjectReference{Name: "k"}})},
		{name: "release keyless", err: rel(&HelmChartTemplateVerification{Provider: "cosign"}),
			path: "spec.chart.spec.verify.secretRef", msg: "keyless cosign verification needs a trusted root (trustedRootSecretRef of a HelmChart or OCIRepository), which this object cannot name"},
		{name: "release notation", err: rel(&HelmChartTemplateVerification{Provider: "notation", SecretRef: &LocalObjectReference{Name: "k"}}),
			path: "spec.chart.spec.verify.provider", value: "notation", msg: "notation is not supported yet"},
		{name: "release unknown provider", err: rel(&HelmChartTemplateVerification{Provider: "gpg", SecretRef: &LocalObjectReference{Name: "k"}}),
			path: "spec.chart.spec.verify.provider", value: "gpg", msg: "must be one of cosign, notation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path == "" {
				require.NoError(t, tt.err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, tt.err, &ve)
			require.Len(t, ve.Errors, 1, "%v", tt.err)
			assert.Equal(t, tt.path, ve.Errors[0].Path)
			assert.Equal(t, tt.value, ve.Errors[0].Value)
			assert.Contains(t, ve.Errors[0].Message, tt.msg)
		})
	}
}
