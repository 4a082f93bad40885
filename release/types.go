package release

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API group, versions and kind of a Release document. The Go types below
// follow Flux's helm.toolkit.fluxcd.io/v2 HelmRelease field for field, with
// the same JSON names, so Flux YAML decodes unchanged. Documents of the older
// versions v2beta1 and v2beta2 are converted to this model by Decode.
const (
	// Group is the API group of a Release (Flux's HelmRelease).
	Group = "helm.toolkit.fluxcd.io"
	// Version is the API version Release models.
	Version = "v2"
	// VersionV2Beta2 is an older API version Decode converts to Version.
	VersionV2Beta2 = "v2beta2"
	// VersionV2Beta1 is an older API version Decode converts to Version.
	VersionV2Beta1 = "v2beta1"
	// Kind is the kind of a Release document.
	Kind = "HelmRelease"
	// APIVersion is Group/Version.
	APIVersion = Group + "/" + Version
)

// Defaults applied by Default and by the Get… accessors, as Flux applies them.
const (
	// DefaultMaxHistory is the number of Helm revisions kept when
	// spec.maxHistory is unset.
	DefaultMaxHistory = 5
	// DefaultTimeout is the action timeout when spec.timeout is unset.
	DefaultTimeout = "5m0s"
	// DefaultChartVersion is the chart version constraint when
	// spec.chart.spec.version is unset: the latest stable version.
	DefaultChartVersion = "*"
	// DefaultRetryInterval is the interval between RetryOnFailure attempts.
	DefaultRetryInterval = "5m0s"
	// DefaultDeletionPropagation is the uninstall deletion propagation policy.
	DefaultDeletionPropagation = "background"
	// MaxReleaseNameLength is the longest release name Helm accepts.
	MaxReleaseNameLength = 53
)

// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=helmreleases,singular=helmrelease,shortName=hr,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""

// Release is one Helm release to run: Flux's HelmRelease (v2). Decode it
// with Decode, then call Default and Validate. It is a runtime.Object
// registered as HelmRelease by AddToScheme.
type Release struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the release.
	Spec Spec `json:"spec,omitempty"`
	// Status is the observed state, as the reconciler records it.
	Status Status `json:"status,omitempty"`
}

// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true

// ReleaseList is a list of Releases, as the API server returns it
// (Flux's HelmReleaseList).
type ReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Releases.
	Items []Release `json:"items"`
}

// +kubebuilder:object:generate=false
// +kubebuilder:validation:XValidation:rule="(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))", message="either chart or chartRef must be set"

// Spec is Flux's HelmReleaseSpec: which chart, which values, and how each
// Helm action runs.
//
// Its deep copy is written by hand (deepcopy.go): controller-gen cannot
// copy the free-form Values.
type Spec struct {
	// Chart is the template of the HelmChart to take the chart from.
	// Exactly one of Chart and ChartRef is set.
	Chart *HelmChartTemplate `json:"chart,omitempty"`
	// ChartRef names an OCIRepository or HelmChart holding the chart.
	// Exactly one of Chart and ChartRef is set.
	ChartRef *CrossNamespaceSourceReference `json:"chartRef,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required

	// Interval at which to reconcile the release.
	Interval metav1.Duration `json:"interval"`
	// KubeConfig names a Secret with a kubeconfig of a remote cluster.
	// Kept for compatibility with Flux YAML; helmfleet reaches clusters
	// through the caller's cluster backends instead.
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`
	// Suspend skips reconciliation. A suspended release that is deleted
	// is not uninstalled.
	Suspend bool `json:"suspend,omitempty"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	// +optional

	// ReleaseName of the Helm release; default [targetNamespace-]name,
	// shortened with a hash when longer than 53 characters.
	ReleaseName string `json:"releaseName,omitempty"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional

	// TargetNamespace of the release's objects; default the namespace of
	// the Release.
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional

	// StorageNamespace where Helm stores the release; default the
	// namespace of the Release.
	StorageNamespace string `json:"storageNamespace,omitempty"`
	// DependsOn lists Releases that must be ready first.
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each Kubernetes operation of a Helm action; default 5m.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// MaxHistory is the number of Helm revisions kept; default 5, 0 means
	// unlimited.
	MaxHistory *int `json:"maxHistory,omitempty"`
	// ServiceAccountName to impersonate; kept for compatibility.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// PersistentClient reuses one Kubernetes client for a reconcile;
	// default true. Kept for compatibility.
	PersistentClient *bool `json:"persistentClient,omitempty"`
	// DriftDetection configures detection and correction of changes made
	// to the release's objects outside Helm.
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`
	// Install configures Helm install actions.
	Install *Install `json:"install,omitempty"`
	// Upgrade configures Helm upgrade actions.
	Upgrade *Upgrade `json:"upgrade,omitempty"`
	// Test configures Helm test actions.
	Test *Test `json:"test,omitempty"`
	// Rollback configures Helm rollback actions.
	Rollback *Rollback `json:"rollback,omitempty"`
	// Uninstall configures Helm uninstall actions.
	Uninstall *Uninstall `json:"uninstall,omitempty"`
	// ValuesFrom lists ConfigMaps and Secrets holding values, merged in
	// order before Values.
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional

	// Values are the inline Helm values, merged last.
	//
	// It is free-form JSON: the CRD keeps whatever it holds
	// (x-kubernetes-preserve-unknown-fields), and DeepCopy copies it
	// recursively.
	Values map[string]any `json:"values,omitempty"`
	// PostRenderers run over the rendered manifests, in order.
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`

	// +kubebuilder:validation:Enum=nohooks;combined;separate
	// +optional

	// PostRenderStrategy says whether hooks go through the
	// post-renderers (Flux 2.9): nohooks (Helm 3, what helmfleet's Helm
	// v3 engine does), combined or separate (Helm 4). FieldWarnings
	// warns of combined and separate when post-renderers are set.
	PostRenderStrategy string `json:"postRenderStrategy,omitempty"`
	// CommonMetadata adds labels and annotations to every rendered object,
	// after the post-renderers.
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`
	// WaitStrategy picks how Helm waits for readiness (Flux 2.8, Helm 4):
	// poller (kstatus) or legacy.
	WaitStrategy *WaitStrategy `json:"waitStrategy,omitempty"`
	// HealthCheckExprs are CEL health checks for custom resources, used
	// by the poller wait strategy (Flux 2.8).
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`
}

// Wait strategy names.
const (
	// WaitStrategyPoller waits with kstatus polling.
	WaitStrategyPoller = "poller"
	// WaitStrategyLegacy waits as Helm 3 did.
	WaitStrategyLegacy = "legacy"
)

// Post-render strategies (spec.postRenderStrategy, Flux 2.9).
const (
	// PostRenderStrategyNoHooks sends no hooks to the post-renderers
	// (Helm 3, what helmfleet does).
	PostRenderStrategyNoHooks = "nohooks"
	// PostRenderStrategyCombined sends hooks and templates together (Helm 4).
	PostRenderStrategyCombined = "combined"
	// PostRenderStrategySeparate sends hooks and templates apart (Helm 4.2).
	PostRenderStrategySeparate = "separate"
)

// +kubebuilder:object:generate=true

// WaitStrategy picks how Helm waits for the release's objects.
type WaitStrategy struct {
	// +kubebuilder:validation:Enum=poller;legacy
	// +required

	// Name is poller or legacy.
	Name string `json:"name"`
}

// +kubebuilder:object:generate=true

// CustomHealthCheck computes the health of one kind of custom resource
// with CEL expressions (Flux's kustomize.CustomHealthCheck).
type CustomHealthCheck struct {
	// APIVersion of the resources.
	APIVersion string `json:"apiVersion"`

	// +optional

	// Kind of the resources; optional since Flux 2.9 (all kinds of
	// APIVersion).
	Kind string `json:"kind,omitempty"`
	// HealthCheckExpressions are the expressions.
	HealthCheckExpressions `json:",inline"`
}

// +kubebuilder:object:generate=true

// HealthCheckExpressions are CEL expressions over a resource deciding its
// kstatus.
type HealthCheckExpressions struct {
	// InProgress is true while the resource progresses.
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the resource failed.
	Failed string `json:"failed,omitempty"`
	// Current is true when the resource is healthy; required.
	Current string `json:"current"`
}

// ServerSideApplyMode says whether an upgrade or rollback applies objects
// server-side (Flux 2.8, Helm 4).
type ServerSideApplyMode string

// Server-side apply modes.
const (
	// ServerSideApplyEnabled applies server-side.
	ServerSideApplyEnabled ServerSideApplyMode = "enabled"
	// ServerSideApplyDisabled applies client-side.
	ServerSideApplyDisabled ServerSideApplyMode = "disabled"
	// ServerSideApplyAuto reuses the method of the last release; the
	// default.
	ServerSideApplyAuto ServerSideApplyMode = "auto"
)

// +kubebuilder:object:generate=true

// KubeConfigReference names a kubeconfig for a remote cluster (Flux's
// meta.KubeConfigReference).
type KubeConfigReference struct {
	// SecretRef names the Secret and key holding the kubeconfig.
	SecretRef *SecretKeyReference `json:"secretRef,omitempty"`
	// ConfigMapRef names a ConfigMap with a provider configuration.
	ConfigMapRef *LocalObjectReference `json:"configMapRef,omitempty"`
}

// +kubebuilder:object:generate=true

// SecretKeyReference names a key of a Secret in the same namespace.
type SecretKeyReference struct {
	// Name of the Secret.
	Name string `json:"name"`
	// Key in the Secret; the consumer picks a default when empty.
	Key string `json:"key,omitempty"`
}

// +kubebuilder:object:generate=true

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the referent.
	Name string `json:"name"`
}

// +kubebuilder:object:generate=true

// DependencyReference names a Release or Kustomization this one depends
// on.
type DependencyReference struct {
	// Name of the dependency.
	Name string `json:"name"`
	// Namespace of the dependency; default the dependent's namespace.
	Namespace string `json:"namespace,omitempty"`

	// +kubebuilder:validation:Enum=HelmRelease;Kustomization
	// +optional

	// Kind of the dependency, HelmRelease or Kustomization; default the
	// dependent's own kind, as in Flux. A helmfleet extension: Flux
	// depends only on objects of the dependent's own kind.
	Kind string `json:"kind,omitempty"`
	// ReadyExpr is a CEL expression over self (the dependent) and dep
	// (the dependency) deciding whether the dependency is ready (Flux
	// 2.7): it replaces the Ready check, or with the
	// AdditiveCELDependencyCheck option of release/controller and
	// release/fleet must hold as well.
	ReadyExpr string `json:"readyExpr,omitempty"`
}

// GetKind returns Kind, or dependent (the dependent's own kind) when Kind
// is empty.
func (in DependencyReference) GetKind(dependent string) string {
	if in.Kind == "" {
		return dependent
	}
	return in.Kind
}

// +kubebuilder:object:generate=true

// HelmChartTemplate is the template of the HelmChart a Release takes its
// chart from.
type HelmChartTemplate struct {
	// ObjectMeta holds labels and annotations for the HelmChart.
	ObjectMeta *HelmChartTemplateObjectMeta `json:"metadata,omitempty"`
	// Spec names the chart, its version and its source.
	Spec HelmChartTemplateSpec `json:"spec"`
}

// +kubebuilder:object:generate=true

// HelmChartTemplateObjectMeta is the metadata template of a HelmChart.
type HelmChartTemplateObjectMeta struct {
	// Labels of the HelmChart.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations of the HelmChart.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// +kubebuilder:object:generate=true

// HelmChartTemplateSpec names a chart in a source.
type HelmChartTemplateSpec struct {
	// Chart is the chart's name (or path, for Git and Bucket sources).
	Chart string `json:"chart"`
	// Version is an exact version or a Masterminds semver constraint;
	// default "*", the latest stable version.
	Version string `json:"version,omitempty"`
	// SourceRef names the HelmRepository, GitRepository or Bucket.
	SourceRef CrossNamespaceObjectReference `json:"sourceRef"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Interval at which to check the source; default spec.interval.
	Interval *metav1.Duration `json:"interval,omitempty"`

	// +kubebuilder:validation:Enum=ChartVersion;Revision

	// ReconcileStrategy is ChartVersion (default) or Revision.
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`
	// ValuesFiles replace the chart's values.yaml (which counts only if
	// listed) and are merged in list order.
	ValuesFiles []string `json:"valuesFiles,omitempty"`
	// IgnoreMissingValuesFiles skips listed files the chart lacks.
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`
	// Verify configures signature verification (OCI sources only).
	Verify *HelmChartTemplateVerification `json:"verify,omitempty"`
}

// +kubebuilder:object:generate=true

// HelmChartTemplateVerification configures signature verification of an
// OCI chart.
type HelmChartTemplateVerification struct {
	// +kubebuilder:validation:Enum=cosign;notation

	// Provider is cosign (default) or notation.
	Provider string `json:"provider"`
	// SecretRef names a Secret with trusted public keys.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// +kubebuilder:object:generate=true

// CrossNamespaceObjectReference names the source of a chart template.
type CrossNamespaceObjectReference struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`

	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket

	// Kind is HelmRepository, GitRepository or Bucket.
	Kind string `json:"kind"`
	// Name of the referent.
	Name string `json:"name"`
	// Namespace of the referent; default the Release's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// +kubebuilder:object:generate=true

// CrossNamespaceSourceReference names an OCIRepository or HelmChart a
// Release takes its chart from (spec.chartRef).
type CrossNamespaceSourceReference struct {
	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`

	// +kubebuilder:validation:Enum=OCIRepository;HelmChart;ExternalArtifact

	// Kind is OCIRepository, HelmChart or ExternalArtifact (Flux 2.9;
	// decoded, refused by Validate until helmfleet serves the kind).
	Kind string `json:"kind"`
	// Name of the referent.
	Name string `json:"name"`
	// Namespace of the referent; default the Release's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// Source kinds a chart template or chart reference may name.
const (
	// SourceKindHelmRepository is a Helm chart repository.
	SourceKindHelmRepository = "HelmRepository"
	// SourceKindGitRepository is a Git repository holding chart sources.
	SourceKindGitRepository = "GitRepository"
	// SourceKindBucket is an object storage bucket holding chart sources.
	SourceKindBucket = "Bucket"
	// SourceKindOCIRepository is an OCI artifact holding a chart.
	SourceKindOCIRepository = "OCIRepository"
	// SourceKindHelmChart is a HelmChart object.
	SourceKindHelmChart = "HelmChart"
)

// Reconcile strategies of a chart template.
const (
	// ReconcileStrategyChartVersion rebuilds the chart when its version
	// changes.
	ReconcileStrategyChartVersion = "ChartVersion"
	// ReconcileStrategyRevision rebuilds the chart when the source
	// revision changes.
	ReconcileStrategyRevision = "Revision"
)

// DriftDetectionMode says how differences between the stored manifest and
// the live objects are handled.
type DriftDetectionMode string

// Drift detection modes.
const (
	// DriftDetectionEnabled detects and corrects drift.
	DriftDetectionEnabled DriftDetectionMode = "enabled"
	// DriftDetectionWarn detects and reports drift without correcting it.
	DriftDetectionWarn DriftDetectionMode = "warn"
	// DriftDetectionDisabled skips detection; the default.
	DriftDetectionDisabled DriftDetectionMode = "disabled"
)

// DriftDetectionMetadataKey is the label or annotation by which one object
// opts out of drift detection with the value DriftDetectionDisabledValue.
const DriftDetectionMetadataKey = Group + "/driftDetection"

// DriftDetectionDisabledValue disables drift detection of an object.
const DriftDetectionDisabledValue = "disabled"

// +kubebuilder:object:generate=true

// DriftDetection configures drift detection.
type DriftDetection struct {
	// +kubebuilder:validation:Enum=enabled;warn;disabled

	// Mode is enabled, warn or disabled (default).
	Mode DriftDetectionMode `json:"mode,omitempty"`
	// Ignore lists changes to ignore; rules matching one object are
	// unioned.
	Ignore []IgnoreRule `json:"ignore,omitempty"`
}

// GetMode returns Mode, or DriftDetectionDisabled when unset.
func (d DriftDetection) GetMode() DriftDetectionMode {
	if d.Mode == "" {
		return DriftDetectionDisabled
	}
	return d.Mode
}

// MustDetectChanges reports whether drift is detected (enabled or warn).
func (d DriftDetection) MustDetectChanges() bool {
	m := d.GetMode()
	return m == DriftDetectionEnabled || m == DriftDetectionWarn
}

// +kubebuilder:object:generate=true

// IgnoreRule ignores some paths of some objects during drift detection.
type IgnoreRule struct {
	// Paths are RFC 6901 JSON pointers; "" ignores the whole object.
	Paths []string `json:"paths"`
	// Target selects the objects the rule applies to; nil means all.
	Target *Selector `json:"target,omitempty"`
}

// +kubebuilder:object:generate=true

// Selector selects Kubernetes objects (Flux's kustomize.Selector). Group,
// Version, Kind, Name and Namespace are regular expressions anchored at
// both ends; the selectors use Kubernetes label selector syntax.
type Selector struct {
	// Group of the objects.
	Group string `json:"group,omitempty"`
	// Version of the objects.
	Version string `json:"version,omitempty"`
	// Kind of the objects.
	Kind string `json:"kind,omitempty"`
	// Namespace of the objects.
	Namespace string `json:"namespace,omitempty"`
	// Name of the objects.
	Name string `json:"name,omitempty"`
	// AnnotationSelector selects by annotations, in label selector syntax.
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	// LabelSelector selects by labels.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CRDsPolicy says what an install or upgrade does with the chart's crds/
// directory.
type CRDsPolicy string

// CRD policies.
const (
	// Skip neither creates nor replaces CRDs.
	Skip CRDsPolicy = "Skip"
	// Create creates missing CRDs and leaves existing ones alone.
	Create CRDsPolicy = "Create"
	// CreateReplace creates missing CRDs and replaces existing ones.
	CreateReplace CRDsPolicy = "CreateReplace"
)

// +kubebuilder:object:generate=true

// Install configures Helm install actions.
type Install struct {
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each operation; default spec.timeout.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Remediation configures what happens when an install fails.
	Remediation *InstallRemediation `json:"remediation,omitempty"`
	// Strategy is RemediateOnFailure (default) or RetryOnFailure.
	Strategy *InstallStrategy `json:"strategy,omitempty"`
	// DisableWait skips waiting for resources to be ready.
	DisableWait bool `json:"disableWait,omitempty"`
	// DisableWaitForJobs skips waiting for Jobs to complete.
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`
	// DisableHooks skips hooks.
	DisableHooks bool `json:"disableHooks,omitempty"`
	// DisableOpenAPIValidation skips OpenAPI validation of the manifests.
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`
	// DisableSchemaValidation skips the chart's values.schema.json.
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`
	// DisableTakeOwnership refuses to adopt existing objects.
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`
	// Replace reuses the name of a deleted release kept in history.
	Replace bool `json:"replace,omitempty"`
	// SkipCRDs skips CRDs. Deprecated: use CRDs: Skip.
	SkipCRDs bool `json:"skipCRDs,omitempty"`

	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace

	// CRDs is Skip, Create (default) or CreateReplace.
	CRDs CRDsPolicy `json:"crds,omitempty"`
	// CreateNamespace creates the target namespace if absent.
	CreateNamespace bool `json:"createNamespace,omitempty"`
	// ServerSideApply applies objects server-side (Flux 2.8, Helm 4);
	// the default depends on the controller.
	ServerSideApply *bool `json:"serverSideApply,omitempty"`
}

// GetTimeout returns Timeout, or def when unset.
func (in Install) GetTimeout(def metav1.Duration) metav1.Duration { return durationOr(in.Timeout, def) }

// GetRemediation returns the remediation configuration, never nil.
func (in Install) GetRemediation() Remediation {
	if in.Remediation == nil {
		return InstallRemediation{}
	}
	return *in.Remediation
}

// GetStrategy returns the install strategy, RemediateOnFailure when unset.
func (in Install) GetStrategy() ActionStrategy { return strategyOr(in.Strategy) }

// GetCRDsPolicy returns the CRD policy of an install: CRDs, or Skip when
// the deprecated SkipCRDs is set, or Create.
func (in Install) GetCRDsPolicy() CRDsPolicy {
	switch {
	case in.CRDs != "":
		return in.CRDs
	case in.SkipCRDs:
		return Skip
	default:
		return Create
	}
}

// Action strategy names (spec.install.strategy.name,
// spec.upgrade.strategy.name).
const (
	// ActionStrategyRemediateOnFailure remediates a failed action per the
	// remediation configuration; the default.
	ActionStrategyRemediateOnFailure = "RemediateOnFailure"
	// ActionStrategyRetryOnFailure retries the failed action after
	// RetryInterval without remediating.
	ActionStrategyRetryOnFailure = "RetryOnFailure"
)

// +kubebuilder:object:generate=true

// ActionStrategy says what follows a failed install or upgrade.
type ActionStrategy struct {
	// +kubebuilder:validation:Enum=RemediateOnFailure;RetryOnFailure

	// Name is RemediateOnFailure or RetryOnFailure.
	Name string `json:"name"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// RetryInterval between RetryOnFailure attempts; default 5m.
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}

// InstallStrategy is spec.install.strategy (Flux's name).
type InstallStrategy = ActionStrategy

// UpgradeStrategy is spec.upgrade.strategy (Flux's name).
type UpgradeStrategy = ActionStrategy

// strategyOr returns *s, or RemediateOnFailure when s is nil.
func strategyOr(s *ActionStrategy) ActionStrategy {
	if s == nil {
		return ActionStrategy{Name: ActionStrategyRemediateOnFailure}
	}
	return *s
}

func durationOr(d *metav1.Duration, def metav1.Duration) metav1.Duration {
	if d == nil {
		return def
	}
	return *d
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

// exhausted reports whether failures used up retries (negative: never).
func exhausted(retries int, failures int64) bool {
	return retries >= 0 && failures > int64(retries)
}

// Remediation is what install and upgrade remediation have in common.
type Remediation interface {
	// GetRetries returns the number of retries; negative is unlimited.
	GetRetries() int
	// MustIgnoreTestFailures returns IgnoreTestFailures, or def if unset.
	MustIgnoreTestFailures(def bool) bool
	// MustRemediateLastFailure says whether the last failure is
	// remediated when no retries remain.
	MustRemediateLastFailure() bool
	// GetStrategy returns how a failure is remediated.
	GetStrategy() RemediationStrategy
	// GetFailureCount returns the failures counted in st for this action.
	GetFailureCount(st *Status) int64
	// IncrementFailureCount counts one more failure in st.
	IncrementFailureCount(st *Status)
	// RetriesExhausted says whether the failures in st used up the retries.
	RetriesExhausted(st *Status) bool
}

// +kubebuilder:object:generate=true

// InstallRemediation configures remediation of a failed install.
type InstallRemediation struct {
	// Retries before giving up; default 0, negative is unlimited. An
	// uninstall runs between attempts.
	Retries int `json:"retries,omitempty"`
	// IgnoreTestFailures skips remediation when tests fail after an
	// install; default spec.test.ignoreFailures.
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`
	// RemediateLastFailure remediates the last failure when no retries
	// remain; default false.
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
}

// GetRetries returns Retries; negative is unlimited.
func (in InstallRemediation) GetRetries() int { return in.Retries }

// MustIgnoreTestFailures returns IgnoreTestFailures, or def when unset.
func (in InstallRemediation) MustIgnoreTestFailures(def bool) bool {
	return boolOr(in.IgnoreTestFailures, def)
}

// MustRemediateLastFailure returns RemediateLastFailure, default false.
func (in InstallRemediation) MustRemediateLastFailure() bool {
	return boolOr(in.RemediateLastFailure, false)
}

// GetStrategy returns UninstallRemediationStrategy: a failed install is
// always remediated by uninstalling it.
func (in InstallRemediation) GetStrategy() RemediationStrategy {
	return UninstallRemediationStrategy
}

// GetFailureCount returns st.InstallFailures.
func (in InstallRemediation) GetFailureCount(st *Status) int64 { return st.InstallFailures }

// IncrementFailureCount increments st.InstallFailures.
func (in InstallRemediation) IncrementFailureCount(st *Status) { st.InstallFailures++ }

// RetriesExhausted reports whether more installs failed than Retries
// allows; never with negative (unlimited) Retries.
func (in InstallRemediation) RetriesExhausted(st *Status) bool {
	return exhausted(in.Retries, st.InstallFailures)
}

// RemediationStrategy is how a failed upgrade is remediated.
type RemediationStrategy string

// Remediation strategies.
const (
	// RollbackRemediationStrategy rolls back to the previous revision;
	// the default for upgrades.
	RollbackRemediationStrategy RemediationStrategy = "rollback"
	// UninstallRemediationStrategy uninstalls the release.
	UninstallRemediationStrategy RemediationStrategy = "uninstall"
)

// ChartNameChangeStrategy says what an upgrade does when the chart's name
// changes.
type ChartNameChangeStrategy string

// Chart name change strategies.
const (
	// ChartNameChangeReinstall uninstalls and reinstalls; the default.
	ChartNameChangeReinstall ChartNameChangeStrategy = "Reinstall"
	// ChartNameChangeInPlaceUpdate upgrades the release in place.
	ChartNameChangeInPlaceUpdate ChartNameChangeStrategy = "InPlaceUpdate"
)

// +kubebuilder:object:generate=true

// Upgrade configures Helm upgrade actions.
type Upgrade struct {
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each operation; default spec.timeout.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// Remediation configures what happens when an upgrade fails.
	Remediation *UpgradeRemediation `json:"remediation,omitempty"`
	// Strategy is RemediateOnFailure (default) or RetryOnFailure.
	Strategy *UpgradeStrategy `json:"strategy,omitempty"`
	// DisableWait skips waiting for resources to be ready.
	DisableWait bool `json:"disableWait,omitempty"`
	// DisableWaitForJobs skips waiting for Jobs to complete.
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`
	// DisableHooks skips hooks.
	DisableHooks bool `json:"disableHooks,omitempty"`
	// DisableOpenAPIValidation skips OpenAPI validation of the manifests.
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`
	// DisableSchemaValidation skips the chart's values.schema.json.
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`
	// DisableTakeOwnership refuses to adopt existing objects.
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`
	// Force replaces objects that cannot be patched.
	Force bool `json:"force,omitempty"`
	// PreserveValues reuses the last release's values (non-declarative).
	PreserveValues bool `json:"preserveValues,omitempty"`
	// CleanupOnFail deletes objects created by a failed upgrade.
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`

	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace

	// CRDs is Skip, Create or CreateReplace; helmfleet defaults to Create
	// as Flux's code does.
	CRDs CRDsPolicy `json:"crds,omitempty"`

	// +kubebuilder:validation:Enum=InPlaceUpdate;Reinstall

	// ChartNameChangeStrategy is Reinstall (default) or InPlaceUpdate.
	ChartNameChangeStrategy ChartNameChangeStrategy `json:"chartNameChangeStrategy,omitempty"`

	// +kubebuilder:validation:Enum=enabled;disabled;auto

	// ServerSideApply is enabled, disabled or auto (default).
	ServerSideApply ServerSideApplyMode `json:"serverSideApply,omitempty"`
}

// GetTimeout returns Timeout, or def when unset.
func (in Upgrade) GetTimeout(def metav1.Duration) metav1.Duration { return durationOr(in.Timeout, def) }

// GetRemediation returns the remediation configuration, never nil.
func (in Upgrade) GetRemediation() Remediation {
	if in.Remediation == nil {
		return UpgradeRemediation{}
	}
	return *in.Remediation
}

// GetStrategy returns the upgrade strategy, RemediateOnFailure when unset.
func (in Upgrade) GetStrategy() ActionStrategy { return strategyOr(in.Strategy) }

// GetCRDsPolicy returns CRDs, or Create when unset.
func (in Upgrade) GetCRDsPolicy() CRDsPolicy {
	if in.CRDs == "" {
		return Create
	}
	return in.CRDs
}

// GetChartNameChangeStrategy returns ChartNameChangeStrategy, or Reinstall.
func (in Upgrade) GetChartNameChangeStrategy() ChartNameChangeStrategy {
	if in.ChartNameChangeStrategy == "" {
		return ChartNameChangeReinstall
	}
	return in.ChartNameChangeStrategy
}

// +kubebuilder:object:generate=true

// UpgradeRemediation configures remediation of a failed upgrade.
type UpgradeRemediation struct {
	// Retries before giving up; default 0, negative is unlimited.
	Retries int `json:"retries,omitempty"`
	// IgnoreTestFailures skips remediation when tests fail after an
	// upgrade; default spec.test.ignoreFailures.
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`
	// RemediateLastFailure remediates the last failure when no retries
	// remain; default Retries > 0.
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`

	// +kubebuilder:validation:Enum=rollback;uninstall

	// Strategy is rollback (default) or uninstall.
	Strategy *RemediationStrategy `json:"strategy,omitempty"`
}

// GetRetries returns Retries; negative is unlimited.
func (in UpgradeRemediation) GetRetries() int { return in.Retries }

// MustIgnoreTestFailures returns IgnoreTestFailures, or def when unset.
func (in UpgradeRemediation) MustIgnoreTestFailures(def bool) bool {
	return boolOr(in.IgnoreTestFailures, def)
}

// MustRemediateLastFailure returns RemediateLastFailure, default
// Retries > 0.
func (in UpgradeRemediation) MustRemediateLastFailure() bool {
	return boolOr(in.RemediateLastFailure, in.Retries > 0)
}

// GetStrategy returns Strategy, default rollback.
func (in UpgradeRemediation) GetStrategy() RemediationStrategy {
	if in.Strategy == nil {
		return RollbackRemediationStrategy
	}
	return *in.Strategy
}

// GetFailureCount returns st.UpgradeFailures.
func (in UpgradeRemediation) GetFailureCount(st *Status) int64 { return st.UpgradeFailures }

// IncrementFailureCount increments st.UpgradeFailures.
func (in UpgradeRemediation) IncrementFailureCount(st *Status) { st.UpgradeFailures++ }

// RetriesExhausted reports whether more upgrades failed than Retries
// allows; never with negative (unlimited) Retries.
func (in UpgradeRemediation) RetriesExhausted(st *Status) bool {
	return exhausted(in.Retries, st.UpgradeFailures)
}

// +kubebuilder:object:generate=true

// Test configures Helm test actions.
type Test struct {
	// Enable runs the chart's tests after each install and upgrade.
	Enable bool `json:"enable,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each operation; default spec.timeout.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// IgnoreFailures skips remediation when tests fail.
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`
	// Filters select the tests to run or exclude.
	Filters []Filter `json:"filters,omitempty"`
}

// GetTimeout returns Timeout, or def when unset.
func (in Test) GetTimeout(def metav1.Duration) metav1.Duration { return durationOr(in.Timeout, def) }

// +kubebuilder:object:generate=true

// Filter includes or excludes one test by name.
type Filter struct {
	// Name of the test.
	Name string `json:"name"`
	// Exclude excludes the test instead of selecting it.
	Exclude bool `json:"exclude,omitempty"`
}

// +kubebuilder:object:generate=true

// Rollback configures Helm rollback actions.
type Rollback struct {
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each operation; default spec.timeout.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DisableWait skips waiting for resources to be ready.
	DisableWait bool `json:"disableWait,omitempty"`
	// DisableWaitForJobs skips waiting for Jobs to complete.
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`
	// DisableHooks skips hooks.
	DisableHooks bool `json:"disableHooks,omitempty"`
	// Recreate restarts pods.
	Recreate bool `json:"recreate,omitempty"`
	// Force replaces objects that cannot be patched.
	Force bool `json:"force,omitempty"`
	// CleanupOnFail deletes objects created by a failed rollback.
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`

	// +kubebuilder:validation:Enum=enabled;disabled;auto

	// ServerSideApply is enabled, disabled or auto (default).
	ServerSideApply ServerSideApplyMode `json:"serverSideApply,omitempty"`
}

// GetTimeout returns Timeout, or def when unset.
func (in Rollback) GetTimeout(def metav1.Duration) metav1.Duration {
	return durationOr(in.Timeout, def)
}

// +kubebuilder:object:generate=true

// Uninstall configures Helm uninstall actions.
type Uninstall struct {
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"

	// Timeout of each operation; default spec.timeout.
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// DisableHooks skips hooks.
	DisableHooks bool `json:"disableHooks,omitempty"`
	// KeepHistory marks the release uninstalled but keeps its history.
	KeepHistory bool `json:"keepHistory,omitempty"`
	// DisableWait skips waiting for objects to be deleted.
	DisableWait bool `json:"disableWait,omitempty"`

	// +kubebuilder:validation:Enum=background;foreground;orphan

	// DeletionPropagation is background (default), foreground or orphan.
	DeletionPropagation *string `json:"deletionPropagation,omitempty"`
}

// GetTimeout returns Timeout, or def when unset.
func (in Uninstall) GetTimeout(def metav1.Duration) metav1.Duration {
	return durationOr(in.Timeout, def)
}

// GetDeletionPropagation returns DeletionPropagation, default background.
func (in Uninstall) GetDeletionPropagation() string {
	if in.DeletionPropagation == nil {
		return DefaultDeletionPropagation
	}
	return *in.DeletionPropagation
}

// +kubebuilder:object:generate=true

// ValuesReference names a ConfigMap or Secret key holding values.
type ValuesReference struct {
	// +kubebuilder:validation:Enum=Secret;ConfigMap

	// Kind is ConfigMap or Secret.
	Kind string `json:"kind"`
	// Name of the object, in the Release's namespace.
	Name string `json:"name"`
	// ValuesKey is the key holding the values; default values.yaml.
	ValuesKey string `json:"valuesKey,omitempty"`
	// TargetPath puts the key's text at this path (Helm --set syntax)
	// instead of merging it as YAML.
	TargetPath string `json:"targetPath,omitempty"`
	// Optional skips a missing object or key instead of failing.
	Optional bool `json:"optional,omitempty"`
	// Literal sets the key's text at TargetPath verbatim, as helm
	// --set-literal does (no type inference; commas and braces kept);
	// it requires TargetPath, whose \. escapes keep their meaning.
	Literal bool `json:"literal,omitempty"`
}

// DefaultValuesKey is the key read when ValuesReference.ValuesKey is empty.
const DefaultValuesKey = "values.yaml"

// GetValuesKey returns ValuesKey, or values.yaml when unset.
func (in ValuesReference) GetValuesKey() string {
	if in.ValuesKey == "" {
		return DefaultValuesKey
	}
	return in.ValuesKey
}

// +kubebuilder:object:generate=true

// PostRenderer is one post-renderer of the rendered manifests.
type PostRenderer struct {
	// Kustomize patches the manifests.
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// +kubebuilder:object:generate=true

// Kustomize is a kustomize post-renderer.
type Kustomize struct {
	// Patches are strategic merge or JSON 6902 patches with optional
	// targets, applied in order.
	Patches []Patch `json:"patches,omitempty"`
	// Images change image names, tags or digests.
	Images []Image `json:"images,omitempty"`
}

// +kubebuilder:object:generate=true

// Patch is one kustomize patch (Flux's kustomize.Patch).
type Patch struct {
	// Patch is a strategic merge patch or a JSON 6902 patch, as YAML.
	Patch string `json:"patch"`
	// Target selects the objects to patch.
	Target *Selector `json:"target,omitempty"`
}

// +kubebuilder:object:generate=true

// Image changes one image (Flux's kustomize.Image).
type Image struct {
	// Name of the image to change.
	Name string `json:"name"`
	// NewName replaces the name.
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the tag.
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the tag with a digest.
	Digest string `json:"digest,omitempty"`
}

// +kubebuilder:object:generate=true

// CommonMetadata is added to every rendered object.
type CommonMetadata struct {
	// Labels added to every object.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations added to every object.
	Annotations map[string]string `json:"annotations,omitempty"`
}
