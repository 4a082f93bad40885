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
	// Version is the API version the Go types model and the scheme
	// registers (see AddToScheme).
	Version = "v1"
	// APIVersion is Group/Version.
	APIVersion = Group + "/" + Version
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

// +kubebuilder:object:generate=true

// LocalObjectReference names an object in the same namespace, such as a
// Secret holding credentials.
type LocalObjectReference struct {
	// Name of the referent.
	Name string `json:"name"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=helmrepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:object:generate=true

// HelmRepository is Flux's HelmRepository: a Helm chart repository served
// over HTTP(S) with an index, or an OCI registry when Spec.Type is "oci".
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says where the repository is and how to reach it.
	Spec HelmRepositorySpec `json:"spec,omitempty"`
	// Status is what Flux's source-controller (or a caller acting as
	// one) observed; this package reads none of it.
	Status HelmRepositoryStatus `json:"status,omitempty"`
}

// AnnotationAllowMissingDigest, set to "true" on an HTTP(S)
// HelmRepository, accepts its index entries that have no digest: such an
// entry's archive is deployed unverified, and the resolved Chart says so
// in Warnings. Without it, such an entry is refused (ErrDigestMissing):
// nothing vouches for the archive. Hand-written and some proxied indexes
// carry no digests. It is helmfleet's extension, an annotation rather
// than a spec field so that the same object stays valid for Flux's CRD
// (Flux accepts such entries anyway and ignores it). Validate refuses a
// value other than "true" or "false". OCI registries have no index: the
// annotation does nothing there.
const AnnotationAllowMissingDigest = "source.helmfleet.io/allow-missing-digest"

// AllowsMissingDigest reports whether r accepts index entries without a
// digest: AnnotationAllowMissingDigest is "true".
func (r *HelmRepository) AllowsMissingDigest() bool {
	return r.Annotations[AnnotationAllowMissingDigest] == "true"
}

// +kubebuilder:object:root=true
// +kubebuilder:object:generate=true

// HelmRepositoryList is a list of HelmRepositories, as the API server
// returns it.
type HelmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the HelmRepositories.
	Items []HelmRepository `json:"items"`
}

// +kubebuilder:object:generate=true

// HelmRepositorySpec mirrors Flux's HelmRepositorySpec field for field.
type HelmRepositorySpec struct {
	// +kubebuilder:validation:Pattern="^(http|https|oci)://.*$"
	// +required

	// URL of the repository: https://… for an index, oci://… for a registry.
	URL string `json:"url"`
	// SecretRef names a Secret with credentials (username/password or a
	// docker config). helmfleet leaves reading it to the caller's client.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// CertSecretRef names a Secret with TLS client certificates and CA.
	CertSecretRef *LocalObjectReference `json:"certSecretRef,omitempty"`
	// PassCredentials sends credentials to hosts other than the index host.
	PassCredentials bool `json:"passCredentials,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Interval between index refreshes; informational for a library.
	Interval metav1.Duration `json:"interval,omitempty"`
	// Insecure allows plain HTTP for OCI registries.
	Insecure bool `json:"insecure,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each download from the repository: the index, then the
	// chart archive, each within its own Timeout (Flux's getter applies it
	// to every request). For an OCI registry it bounds the registry work of
	// one resolution, the tag list, manifest and chart blob together.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Suspend stops reconciliation of this source.
	Suspend bool `json:"suspend,omitempty"`
	// AccessFrom is Flux's cross-namespace access list, kept for compatibility.
	AccessFrom *AccessFrom `json:"accessFrom,omitempty"`

	// +kubebuilder:validation:Enum=default;oci

	// Type is "default" (HTTP index) or "oci".
	Type string `json:"type,omitempty"`

	// +kubebuilder:validation:Enum=generic;aws;azure;gcp

	// Provider names the cloud provider used for OCI authentication
	// (generic, aws, azure, gcp).
	Provider string `json:"provider,omitempty"`
}

// +kubebuilder:object:generate=true

// AccessFrom lists the namespaces allowed to refer to a source.
type AccessFrom struct {
	// NamespaceSelectors select namespaces by label.
	NamespaceSelectors []NamespaceSelector `json:"namespaceSelectors"`
}

// +kubebuilder:object:generate=true

// NamespaceSelector selects namespaces by label.
type NamespaceSelector struct {
	// MatchLabels are the labels a namespace must carry.
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ocirepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:object:generate=true

// OCIRepository is Flux's OCIRepository: one OCI artifact (here a Helm
// chart) with a tag, semver range or digest reference.
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec says where the artifact is and which one to take.
	Spec OCIRepositorySpec `json:"spec,omitempty"`
	// Status is what Flux's source-controller (or a caller acting as
	// one) observed; this package reads none of it.
	Status OCIRepositoryStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:object:generate=true

// OCIRepositoryList is a list of OCIRepositories, as the API server
// returns it.
type OCIRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the OCIRepositories.
	Items []OCIRepository `json:"items"`
}

// +kubebuilder:object:generate=true

// OCIRepositorySpec mirrors Flux's OCIRepositorySpec.
type OCIRepositorySpec struct {
	// +kubebuilder:validation:Pattern="^oci://.*$"
	// +required

	// URL of the repository, oci://host/path/name.
	URL string `json:"url"`
	// Reference picks the artifact: digest > semver > tag > latest.
	Reference *OCIRepositoryRef `json:"ref,omitempty"`
	// LayerSelector picks the layer holding the chart.
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`

	// +kubebuilder:validation:Enum=generic;aws;azure;gcp

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

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Interval between checks for a new artifact.
	Interval metav1.Duration `json:"interval,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of one pull: the tag list, manifest and chart blob together.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Ignore is a .gitignore-style filter over the artifact's files.
	Ignore *string `json:"ignore,omitempty"`
	// Insecure allows plain HTTP.
	Insecure bool `json:"insecure,omitempty"`
	// Suspend stops reconciliation of this source.
	Suspend bool `json:"suspend,omitempty"`
}

// +kubebuilder:object:generate=true

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

// +kubebuilder:object:generate=true

// OCILayerSelector picks a layer by media type.
type OCILayerSelector struct {
	// MediaType of the layer.
	MediaType string `json:"mediaType,omitempty"`

	// +kubebuilder:validation:Enum=extract;copy

	// Operation is "extract" or "copy".
	Operation string `json:"operation,omitempty"`
}

// +kubebuilder:object:generate=true

// OCIRepositoryVerification configures signature verification.
type OCIRepositoryVerification struct {
	// +kubebuilder:validation:Enum=cosign;notation

	// Provider is "cosign" or "notation".
	Provider string `json:"provider"`
	// SecretRef names a Secret with public keys.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// MatchOIDCIdentity lists accepted keyless identities.
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
	// TrustedRootSecretRef names a Secret whose key trusted_root.json is
	// the Sigstore trusted root (Fulcio CAs, Rekor keys) keyless
	// signatures are verified against (Flux 2.9).
	TrustedRootSecretRef *LocalObjectReference `json:"trustedRootSecretRef,omitempty"`
}

// +kubebuilder:object:generate=true

// OIDCIdentityMatch is one accepted keyless signing identity.
type OIDCIdentityMatch struct {
	// Issuer is a regular expression over the OIDC issuer.
	Issuer string `json:"issuer"`
	// Subject is a regular expression over the OIDC subject.
	Subject string `json:"subject"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=hc,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Source Kind",type=string,JSONPath=`.spec.sourceRef.kind`
// +kubebuilder:printcolumn:name="Source Name",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:object:generate=true

// HelmChart is Flux's HelmChart: one chart taken from a HelmRepository.
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec names the chart, its version constraint and its repository.
	Spec HelmChartSpec `json:"spec,omitempty"`
	// Status is what Flux's source-controller (or a caller acting as
	// one) observed; this package reads none of it.
	Status HelmChartStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:object:generate=true

// HelmChartList is a list of HelmCharts, as the API server returns it.
type HelmChartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the HelmCharts.
	Items []HelmChart `json:"items"`
}

// +kubebuilder:object:generate=true

// HelmChartSpec mirrors Flux's HelmChartSpec.
type HelmChartSpec struct {
	// Chart is the chart's name in the repository.
	Chart string `json:"chart"`
	// Version is an exact version or a semver constraint; default "*".
	Version string `json:"version,omitempty"`
	// SourceRef names the repository.
	SourceRef LocalHelmChartSourceReference `json:"sourceRef"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Interval between checks for a new chart version.
	Interval metav1.Duration `json:"interval,omitempty"`

	// +kubebuilder:validation:Enum=ChartVersion;Revision

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

// +kubebuilder:object:generate=true

// LocalHelmChartSourceReference names the repository a HelmChart comes from.
type LocalHelmChartSourceReference struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`

	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket

	// Kind of the referent: HelmRepository, GitRepository or Bucket.
	Kind string `json:"kind"`
	// Name of the referent.
	Name string `json:"name"`
}

// +kubebuilder:object:generate=true

// HelmRepositoryStatus is Flux's HelmRepositoryStatus: what the
// source-controller observed of a HelmRepository.
type HelmRepositoryStatus struct {
	// +optional

	// ObservedGeneration is the last generation reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional

	// Conditions of the repository (Ready, Reconciling, Stalled, …).
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// +optional

	// URL is where the controller serves the last index it fetched.
	URL string `json:"url,omitempty"`

	// +optional

	// Artifact is the last index fetched.
	Artifact *Artifact `json:"artifact,omitempty"`
	// ReconcileRequestStatus records the last reconcile request handled.
	ReconcileRequestStatus `json:",inline"`
}

// +kubebuilder:object:generate=true

// OCIRepositoryStatus is Flux's OCIRepositoryStatus: what the
// source-controller observed of an OCIRepository.
type OCIRepositoryStatus struct {
	// +optional

	// ObservedGeneration is the last generation reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional

	// Conditions of the repository (Ready, Reconciling, Stalled, …).
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// +optional

	// URL is where the controller serves the last artifact it pulled.
	URL string `json:"url,omitempty"`

	// +optional

	// Artifact is the last artifact pulled.
	Artifact *Artifact `json:"artifact,omitempty"`

	// +optional

	// ObservedIgnore is the spec.ignore the artifact was filtered with.
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// +optional

	// ObservedLayerSelector is the spec.layerSelector of the artifact.
	ObservedLayerSelector *OCILayerSelector `json:"observedLayerSelector,omitempty"`
	// ReconcileRequestStatus records the last reconcile request handled.
	ReconcileRequestStatus `json:",inline"`
}

// +kubebuilder:object:generate=true

// HelmChartStatus is Flux's HelmChartStatus: what the source-controller
// observed of a HelmChart.
type HelmChartStatus struct {
	// +optional

	// ObservedGeneration is the last generation reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional

	// ObservedSourceArtifactRevision is the revision of the source the
	// chart was last built from.
	ObservedSourceArtifactRevision string `json:"observedSourceArtifactRevision,omitempty"`

	// +optional

	// ObservedChartName is the name of the last chart built.
	ObservedChartName string `json:"observedChartName,omitempty"`

	// +optional

	// ObservedValuesFiles are the values files of the last chart built.
	ObservedValuesFiles []string `json:"observedValuesFiles,omitempty"`

	// +optional

	// Conditions of the chart (Ready, Reconciling, Stalled, …).
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// +optional

	// URL is where the controller serves the last chart it built.
	URL string `json:"url,omitempty"`

	// +optional

	// Artifact is the last chart built.
	Artifact *Artifact `json:"artifact,omitempty"`
	// ReconcileRequestStatus records the last reconcile request handled.
	ReconcileRequestStatus `json:",inline"`
}

// +kubebuilder:object:generate=true

// Artifact is Flux's meta.Artifact: one file a source produced (an
// index, a chart archive), where it is served and what it holds.
type Artifact struct {
	// Path of the file relative to the controller's storage root.
	Path string `json:"path"`
	// URL the file is served at.
	URL string `json:"url"`
	// Revision of the source the file was made from, e.g. a chart
	// version or an OCI digest.
	Revision string `json:"revision"`

	// +optional
	// +kubebuilder:validation:Pattern="^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$"

	// Digest of the file, algo:hex.
	Digest string `json:"digest,omitempty"`
	// LastUpdateTime is when the file last changed.
	LastUpdateTime metav1.Time `json:"lastUpdateTime"`

	// +optional

	// Size of the file in bytes.
	Size *int64 `json:"size,omitempty"`

	// +optional

	// Metadata of the OCI artifact, e.g. its annotations.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// +kubebuilder:object:generate=true

// ReconcileRequestStatus is Flux's meta.ReconcileRequestStatus: the last
// value of the reconcile.fluxcd.io/requestedAt annotation handled.
type ReconcileRequestStatus struct {
	// +optional

	// LastHandledReconcileAt is that value.
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}
