package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API groups and kinds of the Flux source objects this package understands.
// Documents of apiVersion source.toolkit.fluxcd.io/v1 and v1beta2 decode into
// the same Go types.
const (
	// Group is the API group of Flux's source objects.
	Group = "source.toolkit.fluxcd.io"
	// KindHelmRepository is the kind of a Helm chart repository (HTTP or OCI).
	KindHelmRepository = "HelmRepository"
	// KindOCIRepository is the kind of a single OCI artifact repository.
	KindOCIRepository = "OCIRepository"
	// KindHelmChart is the kind of a chart taken from a HelmRepository.
	KindHelmChart = "HelmChart"

	// RepositoryTypeDefault marks an HTTP(S) Helm repository with an index.
	RepositoryTypeDefault = "default"
	// RepositoryTypeOCI marks a Helm repository that is an OCI registry.
	RepositoryTypeOCI = "oci"
)

// LocalObjectReference names an object in the same namespace, such as a
// Secret holding credentials.
type LocalObjectReference struct {
	// Name of the referent.
	Name string `json:"name"`
}

// HelmRepository is Flux's HelmRepository: a Helm chart repository served
// over HTTP(S) with an index, or an OCI registry when Spec.Type is "oci".
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says where the repository is and how to reach it.
	Spec HelmRepositorySpec `json:"spec,omitempty"`
}

// HelmRepositorySpec mirrors Flux's HelmRepositorySpec field for field.
type HelmRepositorySpec struct {
	// URL of the repository: https://… for an index, oci://… for a registry.
	URL string `json:"url"`
	// SecretRef names a Secret with credentials (username/password or a
	// docker config). helmfleet leaves reading it to the caller's client.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// CertSecretRef names a Secret with TLS client certificates and CA.
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// PassCredentials sends credentials to hosts other than the index host.
	PassCredentials bool `json:"passCredentials,omitempty"`
	// Interval between index refreshes; informational for a library.
	Interval metav1.Duration `json:"interval,omitempty"`
	// Insecure allows plain HTTP for OCI registries.
	Insecure bool `json:"insecure,omitempty"`
	// Timeout of each download from the repository: the index, then the
	// chart archive, each within its own Timeout (Flux's getter applies it
	// to every request). For an OCI registry it bounds the registry work of
	// one resolution, the tag list, manifest and chart blob together.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Suspend stops reconciliation of this source.
	Suspend bool `json:"suspend,omitempty"`
	// AccessFrom is Flux's cross-namespace access list, kept for compatibility.
	AccessFrom *AccessFrom `json:"accessFrom,omitempty"`
	// Type is "default" (HTTP index) or "oci".
	Type string `json:"type,omitempty"`
	// Provider names the cloud provider used for OCI authentication
	// (generic, aws, azure, gcp).
	Provider string `json:"provider,omitempty"`
}

// AccessFrom lists the namespaces allowed to refer to a source.
type AccessFrom struct {
	// NamespaceSelectors select namespaces by label.
	NamespaceSelectors []NamespaceSelector `json:"namespaceSelectors"`
}

// NamespaceSelector selects namespaces by label.
type NamespaceSelector struct {
	// MatchLabels are the labels a namespace must carry.
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// OCIRepository is Flux's OCIRepository: one OCI artifact (here a Helm
// chart) with a tag, semver range or digest reference.
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says where the artifact is and which one to take.
	Spec OCIRepositorySpec `json:"spec,omitempty"`
}

// OCIRepositorySpec mirrors Flux's OCIRepositorySpec.
type OCIRepositorySpec struct {
	// URL of the repository, oci://host/path/name.
	URL string `json:"url"`
	// Reference picks the artifact: digest > semver > tag > latest.
	Reference *OCIRepositoryRef `json:"ref,omitempty"`
	// LayerSelector picks the layer holding the chart.
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`
	// Provider names the cloud provider used for authentication.
	Provider string `json:"provider,omitempty"`
	// SecretRef names a Secret with registry credentials.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// Verify configures signature verification.
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`
	// ServiceAccountName is used for image pull secrets.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// CertSecretRef names a Secret with TLS material.
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// ProxySecretRef names a Secret with proxy settings.
	ProxySecretRef *LocalObjectReference `json:"proxySecretRef,omitempty"`
	// Interval between checks for a new artifact.
	Interval metav1.Duration `json:"interval,omitempty"`
	// Timeout of one pull: the tag list, manifest and chart blob together.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Ignore is a .gitignore-style filter over the artifact's files.
	Ignore *string `json:"ignore,omitempty"`
	// Insecure allows plain HTTP.
	Insecure bool `json:"insecure,omitempty"`
	// Suspend stops reconciliation of this source.
	Suspend bool `json:"suspend,omitempty"`
}

// OCIRepositoryRef picks one artifact of an OCI repository.
type OCIRepositoryRef struct {
	// Digest pins the artifact, e.g. sha256:….
	Digest string `json:"digest,omitempty"`
	// SemVer is a Masterminds/semver constraint over the tags.
	SemVer string `json:"semver,omitempty"`
	// SemverFilter is a regular expression the tags must match first.
	SemverFilter string `json:"semverFilter,omitempty"`
	// Tag names one tag.
	Tag string `json:"tag,omitempty"`
}

// OCILayerSelector picks a layer by media type.
type OCILayerSelector struct {
	// MediaType of the layer.
	MediaType string `json:"mediaType,omitempty"`
	// Operation is "extract" or "copy".
	Operation string `json:"operation,omitempty"`
}

// OCIRepositoryVerification configures signature verification.
type OCIRepositoryVerification struct {
	// Provider is "cosign" or "notation".
	Provider string `json:"provider"`
	// SecretRef names a Secret with public keys.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// MatchOIDCIdentity lists accepted keyless identities.
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OIDCIdentityMatch is one accepted keyless signing identity.
type OIDCIdentityMatch struct {
	// Issuer is a regular expression over the OIDC issuer.
	Issuer string `json:"issuer"`
	// Subject is a regular expression over the OIDC subject.
	Subject string `json:"subject"`
}

// HelmChart is Flux's HelmChart: one chart taken from a HelmRepository.
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec names the chart, its version constraint and its repository.
	Spec HelmChartSpec `json:"spec,omitempty"`
}

// HelmChartSpec mirrors Flux's HelmChartSpec.
type HelmChartSpec struct {
	// Chart is the chart's name in the repository.
	Chart string `json:"chart"`
	// Version is an exact version or a semver constraint; default "*".
	Version string `json:"version,omitempty"`
	// SourceRef names the repository.
	SourceRef LocalHelmChartSourceReference `json:"sourceRef"`
	// Interval between checks for a new chart version.
	Interval metav1.Duration `json:"interval,omitempty"`
	// ReconcileStrategy is ChartVersion or Revision.
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`
	// ValuesFiles replace the chart's values.yaml, merged in order.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// IgnoreMissingValuesFiles skips listed files the chart lacks.
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`
	// Suspend stops reconciliation of this source.
	Suspend bool `json:"suspend,omitempty"`
	// Verify configures signature verification (OCI only).
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`
}

// LocalHelmChartSourceReference names the repository a HelmChart comes from.
type LocalHelmChartSourceReference struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the referent: HelmRepository, GitRepository or Bucket.
	Kind string `json:"kind"`
	// Name of the referent.
	Name string `json:"name"`
}
