package source_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/source"
)

// Each source kind validates itself, naming the object, every field
// path and the bad value, as release.Objects.Validate reports it.
func TestSourceKindsValidate(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "s", Namespace: "apps"}
	tests := []struct {
		name string
		obj  interface{ Validate() error }
		want string // "" when valid
	}{
		{name: "helm repository ok", obj: &source.HelmRepository{ObjectMeta: meta,
			Spec: source.HelmRepositorySpec{URL: "https://charts.example.com"}}},
		{name: "helm repository bad", obj: &source.HelmRepository{ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Spec: source.HelmRepositorySpec{URL: "ftp://u:secret@x", Type: "git", Provider: "ibm",
				SecretRef: &source.LocalObjectReference{}}},
			want: "HelmRepository s: 5 problems:\n" +
				"  metadata.namespace: is required (Default sets \"default\")\n" +
				"  spec.type: must be one of default, oci (value: git)\n" +
				"  spec.url: scheme must be http or https (value: ftp://***@x)\n" +
				"  spec.provider: must be one of generic, aws, azure, gcp (value: ibm)\n" +
				"  spec.secretRef.name: is required"},
		{name: "helm repository allows missing digests", obj: &source.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "apps", Annotations: map[string]string{source.AnnotationAllowMissingDigest: "true"}},
			Spec:       source.HelmRepositorySpec{URL: "https://charts.example.com"}}},
		{name: "helm repository allow-missing-digest not a boolean", obj: &source.HelmRepository{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "apps", Annotations: map[string]string{source.AnnotationAllowMissingDigest: "yes"}},
			Spec:       source.HelmRepositorySpec{URL: "https://charts.example.com"}},
			want: `HelmRepository apps/s: metadata.annotations[source.helmfleet.io/allow-missing-digest]: must be "true" or "false" (value: yes)`},
		{name: "oci repository ok", obj: &source.OCIRepository{ObjectMeta: meta,
			Spec: source.OCIRepositorySpec{URL: "oci://ghcr.io/stefanprodan/charts/podinfo",
				Reference: &source.OCIRepositoryRef{SemVer: ">= 6.0.0"}}}},
		{name: "oci repository bad", obj: &source.OCIRepository{ObjectMeta: meta, Spec: source.OCIRepositorySpec{
			URL:       "oci://ghcr.io/x",
			Reference: &source.OCIRepositoryRef{Digest: "sha256"},
			Verify:    &source.OCIRepositoryVerification{Provider: "cosign"},
		}},
			want: "OCIRepository apps/s: 2 problems:\n" +
				"  spec.ref.digest: must be algorithm:hex, e.g. sha256:<64 hex digits> (value: sha256)\n" +
				"  spec.verify.trustedRootSecretRef: is required: keyless verification needs spec.verify.trustedRootSecretRef: Sigstore's public-good trusted root is fetched by TUF, which helmfleet cannot reach offline: charts cannot be verified, refusing rather than installing unverified"},
		{name: "oci repository keyless with a trusted root", obj: &source.OCIRepository{ObjectMeta: meta, Spec: source.OCIRepositorySpec{
			URL: "oci://ghcr.io/x", Verify: &source.OCIRepositoryVerification{Provider: "cosign",
				TrustedRootSecretRef: &source.LocalObjectReference{Name: "root"},
				MatchOIDCIdentity:    []source.OIDCIdentityMatch{{Issuer: "^https://token\\.actions\\.githubusercontent\\.com$", Subject: "^https://github\\.com/x/"}}}}}},
		{name: "oci repository keyless bad", obj: &source.OCIRepository{ObjectMeta: meta, Spec: source.OCIRepositorySpec{
			URL: "oci://ghcr.io/x", Verify: &source.OCIRepositoryVerification{Provider: "cosign",
				TrustedRootSecretRef: &source.LocalObjectReference{},
				MatchOIDCIdentity:    []source.OIDCIdentityMatch{{Issuer: "(", Subject: ""}}}}},
			want: "OCIRepository apps/s: 3 problems:\n" +
				"  spec.verify.trustedRootSecretRef.name: is required\n" +
				"  spec.verify.matchOIDCIdentity[0].issuer: invalid regular expression: error parsing regexp: missing closing ): `(` (value: ()\n" +
				"  spec.verify.matchOIDCIdentity[0].subject: is required"},
		{name: "oci repository keyless without identity", obj: &source.OCIRepository{ObjectMeta: meta, Spec: source.OCIRepositorySpec{
			URL: "oci://ghcr.io/x", Verify: &source.OCIRepositoryVerification{Provider: "cosign",
				TrustedRootSecretRef: &source.LocalObjectReference{Name: "root"}}}},
			want: "OCIRepository apps/s: spec.verify.matchOIDCIdentity: is required: keyless verification needs at least one issuer/subject identity, else any certificate of the trusted root would pass: charts cannot be verified, refusing rather than installing unverified"},
		{name: "helm chart ok", obj: &source.HelmChart{ObjectMeta: meta, Spec: source.HelmChartSpec{
			Chart: "podinfo", Version: "6.x", SourceRef: source.LocalHelmChartSourceReference{Kind: "HelmRepository", Name: "r"}}}},
		{name: "helm chart bad", obj: &source.HelmChart{ObjectMeta: meta, Spec: source.HelmChartSpec{
			Chart: "podinfo", Version: "!!6", ReconcileStrategy: "Always",
			SourceRef: source.LocalHelmChartSourceReference{Kind: "HelmRepository", Name: "r"}}},
			want: "HelmChart apps/s: 2 problems:\n" +
				"  spec.version: is neither a version nor a semver constraint: improper constraint: \"!!6\" (value: !!6)\n" +
				"  spec.reconcileStrategy: must be one of ChartVersion, Revision (value: Always)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.obj.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			var ve *source.ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.want, err.Error())
		})
	}
}
