package release

import (
	"slices"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// API group, version and kind of a Kustomization document: Flux's
// kustomize.toolkit.fluxcd.io/v1 Kustomization, field for field with the
// same JSON names (kustomize-controller v1.6, plus ignoreMissingComponents
// and postBuild.substituteStrategy of later versions), so Flux YAML
// decodes unchanged.
const (
	// KustomizationGroup is the API group of a Kustomization.
	KustomizationGroup = "kustomize.toolkit.fluxcd.io"
	// KustomizationVersion is the API version Kustomization models.
	KustomizationVersion = "v1"
	// KustomizationKind is the kind of a Kustomization document.
	KustomizationKind = "Kustomization"
	// KustomizationAPIVersion is KustomizationGroup/KustomizationVersion.
	KustomizationAPIVersion = KustomizationGroup + "/" + KustomizationVersion
)

// Deletion policies of a Kustomization (spec.deletionPolicy), as Flux's.
const (
	// DeletionPolicyMirrorPrune deletes the inventory when spec.prune is
	// true and orphans it otherwise; the default.
	DeletionPolicyMirrorPrune = "MirrorPrune"
	// DeletionPolicyDelete deletes the inventory.
	DeletionPolicyDelete = "Delete"
	// DeletionPolicyWaitForTermination deletes the inventory and waits
	// until its objects are gone.
	DeletionPolicyWaitForTermination = "WaitForTermination"
	// DeletionPolicyOrphan leaves the inventory in the cluster.
	DeletionPolicyOrphan = "Orphan"
)

// Substitute strategies of a Kustomization's postBuild.
const (
	// SubstituteStrategyWithVariables substitutes only when at least one
	// variable is defined (inline or from a ConfigMap or Secret); the
	// default.
	SubstituteStrategyWithVariables = "WithVariables"
	// SubstituteStrategyAlways substitutes even when no variable is
	// defined, so that ${var:=default} takes its default.
	SubstituteStrategyAlways = "Always"
)

// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=kustomizations,singular=kustomization,shortName=ks,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""

// Kustomization is Flux's Kustomization (kustomize.toolkit.fluxcd.io/v1):
// a directory of a source, built with kustomize, post-processed
// (targetNamespace, patches, substitution, …) and applied server-side to
// one cluster, with its objects kept in an inventory, pruned and waited
// for. Decode it with Decode (or Load, which also defaults and
// validates). It is a runtime.Object registered by AddToScheme.
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state.
	Spec KustomizationSpec `json:"spec,omitempty"`
	// Status is the observed state, as the reconciler records it.
	Status KustomizationStatus `json:"status,omitempty"`
}

// +kubebuilder:object:generate=true
// +kubebuilder:object:root=true

// KustomizationList is a list of Kustomizations, as the API server
// returns it.
type KustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Kustomizations.
	Items []Kustomization `json:"items"`
}

// +kubebuilder:object:generate=true

// KustomizationSpec is Flux's KustomizationSpec: which directory of which
// source, how to transform its build, and how to apply, prune and wait.
type KustomizationSpec struct {
	// +required

	// SourceRef names the source holding the directory.
	SourceRef KustomizationSourceReference `json:"sourceRef"`

	// +optional

	// Path of the directory in the source, holding a kustomization.yaml
	// or plain YAML files a kustomization is generated for; default the
	// source's root.
	Path string `json:"path,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required

	// Interval at which to reconcile the Kustomization.
	Interval metav1.Duration `json:"interval"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional

	// RetryInterval after a failed reconcile; default spec.interval.
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional

	// Timeout of apply and health checking; default spec.interval less
	// 30s, at least 30s.
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// +optional

	// DependsOn lists Kustomizations (or, with kind, HelmReleases) that
	// must be ready first.
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`

	// +required

	// Prune deletes the objects that left the build since the last
	// apply.
	Prune bool `json:"prune"`

	// +kubebuilder:validation:Enum=MirrorPrune;Delete;WaitForTermination;Orphan
	// +optional

	// DeletionPolicy says what deleting the Kustomization does to its
	// objects: MirrorPrune (the default), Delete, WaitForTermination or
	// Orphan.
	DeletionPolicy string `json:"deletionPolicy,omitempty"`

	// +optional

	// Wait checks the health of every applied object; healthChecks are
	// then ignored.
	Wait bool `json:"wait,omitempty"`

	// +optional

	// HealthChecks lists objects whose health is checked after apply.
	HealthChecks []NamespacedObjectKindReference `json:"healthChecks,omitempty"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional

	// TargetNamespace sets or overrides the namespace of every
	// namespaced object.
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +optional

	// NamePrefix is prepended to every object's name.
	NamePrefix string `json:"namePrefix,omitempty"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +optional

	// NameSuffix is appended to every object's name.
	NameSuffix string `json:"nameSuffix,omitempty"`

	// +optional

	// CommonMetadata labels and annotations are set on every object,
	// overriding any of the same key.
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// +optional

	// Patches are strategic merge or JSON 6902 patches, with optional
	// targets.
	Patches []Patch `json:"patches,omitempty"`

	// +optional

	// Images change image names, tags or digests.
	Images []Image `json:"images,omitempty"`

	// +optional

	// Components are paths, relative to spec.path, of kustomize
	// components to add.
	Components []string `json:"components,omitempty"`

	// +optional

	// IgnoreMissingComponents drops the components that do not exist
	// instead of failing.
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`

	// +optional

	// Suspend skips reconciliation.
	Suspend bool `json:"suspend,omitempty"`

	// +optional

	// PostBuild substitutes variables in the built objects.
	PostBuild *PostBuild `json:"postBuild,omitempty"`

	// +optional

	// Force recreates objects whose update fails on an immutable field.
	Force bool `json:"force,omitempty"`

	// +optional

	// KubeConfig names a kubeconfig of a remote cluster. Not supported:
	// helmfleet reaches clusters through the caller's cluster backends;
	// Validate rejects it.
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`

	// +optional

	// ServiceAccountName, of the Kustomization's namespace, to act as:
	// release/kustomize plans, applies, prunes and checks health through
	// the cluster's release.Impersonator role, and fails the
	// Kustomization on a cluster without it.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// +optional

	// Decryption of SOPS-encrypted Secrets. Not supported; Validate
	// rejects it.
	Decryption *Decryption `json:"decryption,omitempty"`

	// +optional

	// HealthCheckExprs are CEL health checks of custom resources: an
	// applied object of their group (and kind, when given) is judged by
	// them, not by kstatus, when the Kustomization waits for it.
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// +optional

	// BuildMetadata asks kustomize to annotate the built objects with
	// their origin (originAnnotations) or the transformers that made them
	// (transformerAnnotations) (Flux 2.9). Not supported; Validate
	// rejects it.
	BuildMetadata []string `json:"buildMetadata,omitempty"`

	// +optional

	// Ignore lists JSON pointers that drift detection and apply leave
	// alone (Flux 2.9). Not supported; Validate rejects it.
	Ignore []KustomizationIgnoreRule `json:"ignore,omitempty"`
}

// +kubebuilder:object:generate=true

// KustomizationIgnoreRule is Flux's kustomize v1 IgnoreRule: JSON
// pointers (RFC 6901) of the objects Target selects (every object when
// nil) that drift detection and apply leave alone.
type KustomizationIgnoreRule struct {
	// Paths are JSON pointers.
	Paths []string `json:"paths"`

	// +optional

	// Target selects the objects; nil selects all.
	Target *Selector `json:"target,omitempty"`
}

// +kubebuilder:object:generate=true

// KustomizationSnapshot is one entry of a Kustomization's
// .status.history (Flux's meta.Snapshot): a revision reconciled, with
// when and how it went.
type KustomizationSnapshot struct {
	// Digest is the checksum, <algo>:<hex>, of the resources.
	Digest string `json:"digest"`
	// FirstReconciled is when this digest was first reconciled.
	FirstReconciled metav1.Time `json:"firstReconciled"`
	// LastReconciled is when it was last reconciled.
	LastReconciled metav1.Time `json:"lastReconciled"`
	// LastReconciledDuration is how long the last reconcile took.
	LastReconciledDuration metav1.Duration `json:"lastReconciledDuration"`
	// LastReconciledStatus is the outcome of the last reconcile.
	LastReconciledStatus string `json:"lastReconciledStatus"`
	// TotalReconciliations counts the reconciles of this digest.
	TotalReconciliations int64 `json:"totalReconciliations"`

	// +optional

	// Metadata holds more about the snapshot (Flux: the revision).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// +kubebuilder:object:generate=true

// KustomizationSourceReference names the source of a Kustomization
// (Flux's kustomize v1 CrossNamespaceSourceReference).
type KustomizationSourceReference struct {
	// +optional

	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`

	// +kubebuilder:validation:Enum=OCIRepository;GitRepository;Bucket;ExternalArtifact
	// +required

	// Kind is OCIRepository, GitRepository, Bucket or ExternalArtifact.
	Kind string `json:"kind"`

	// +required

	// Name of the referent.
	Name string `json:"name"`

	// +optional

	// Namespace of the referent; default the Kustomization's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// Source kinds a Kustomization may take its directory from.
const (
	// SourceKindExternalArtifact is a Flux ExternalArtifact.
	SourceKindExternalArtifact = "ExternalArtifact"
)

// +kubebuilder:object:generate=true

// NamespacedObjectKindReference names one object by API version, kind,
// name and namespace (Flux's meta.NamespacedObjectKindReference).
type NamespacedObjectKindReference struct {
	// +optional

	// APIVersion of the referent.
	APIVersion string `json:"apiVersion,omitempty"`

	// +required

	// Kind of the referent.
	Kind string `json:"kind"`

	// +required

	// Name of the referent.
	Name string `json:"name"`

	// +optional

	// Namespace of the referent; default the Kustomization's namespace.
	Namespace string `json:"namespace,omitempty"`
}

// +kubebuilder:object:generate=true

// PostBuild says which variables to substitute in the built objects.
type PostBuild struct {
	// +kubebuilder:validation:Enum=WithVariables;Always
	// +optional

	// SubstituteStrategy is WithVariables (the default: substitute only
	// when a variable is defined) or Always.
	SubstituteStrategy string `json:"substituteStrategy,omitempty"`

	// +optional

	// Substitute maps variable names to values; it takes precedence over
	// substituteFrom.
	Substitute map[string]string `json:"substitute,omitempty"`

	// +optional

	// SubstituteFrom names ConfigMaps and Secrets whose data are
	// variables, read in order, a later one overriding an earlier one.
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
}

// +kubebuilder:object:generate=true

// SubstituteReference names a ConfigMap or Secret of variables in the
// Kustomization's namespace.
type SubstituteReference struct {
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required

	// Kind is ConfigMap or Secret.
	Kind string `json:"kind"`

	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required

	// Name of the referent.
	Name string `json:"name"`

	// +optional

	// Optional tolerates an absent referent, as if it were empty.
	Optional bool `json:"optional,omitempty"`
}

// +kubebuilder:object:generate=true

// Decryption is Flux's SOPS decryption setting; helmfleet does not
// decrypt.
type Decryption struct {
	// +kubebuilder:validation:Enum=sops
	// +required

	// Provider is sops.
	Provider string `json:"provider"`

	// +optional

	// ServiceAccountName for KMS authentication.
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// +optional

	// SecretRef names a Secret of decryption keys.
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
}

// +kubebuilder:object:generate=true

// KustomizationStatus is Flux's KustomizationStatus.
type KustomizationStatus struct {
	// +optional

	// LastHandledReconcileAt is the last reconcile request handled.
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// +optional

	// ObservedGeneration is the last generation reconciled.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// +optional

	// Conditions: Ready, Reconciling, Stalled, Healthy.
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// +optional

	// LastAppliedRevision is the source revision last applied
	// successfully.
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// +optional

	// LastAppliedOriginRevision is the origin revision of the source
	// last applied successfully.
	LastAppliedOriginRevision string `json:"lastAppliedOriginRevision,omitempty"`

	// +optional

	// LastAttemptedRevision is the source revision of the last attempt.
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// +optional

	// Inventory lists the objects applied, as
	// <namespace>_<name>_<group>_<kind> with their API version.
	Inventory *ResourceInventory `json:"inventory,omitempty"`

	// +optional

	// History of the last reconciles, newest first (Flux 2.9):
	// release/kustomize records each reconcile that built its objects
	// (RecordHistory).
	History []KustomizationSnapshot `json:"history,omitempty"`
}

// Condition types a Kustomization carries besides Ready, Reconciling and
// Stalled, as Flux sets them.
const (
	// ConditionHealthy is True when the health checks passed.
	ConditionHealthy = "Healthy"
)

// Condition reasons of a Kustomization that a Release does not use, as
// Flux's kustomize-controller sets them (it shares ReasonProgressing,
// ReasonReconciliationSucceeded, ReasonReconciliationFailed,
// ReasonDependencyNotReady and ReasonArtifactFailed with a Release).
const (
	// ReasonHealthCheckFailed: an object is not healthy within the
	// timeout.
	ReasonHealthCheckFailed = "HealthCheckFailed"
	// ReasonBuildFailed: kustomize build or substitution failed.
	ReasonBuildFailed = "BuildFailed"
	// ReasonPruneFailed: garbage collection failed.
	ReasonPruneFailed = "PruneFailed"
	// ReasonSucceeded: the health checks passed.
	ReasonSucceeded = "Succeeded"
	// ReasonInvalidSpec: the spec fails Validate; a helmfleet reason
	// (Flux's API server refuses such a spec before the controller).
	ReasonInvalidSpec = "InvalidSpec"
)

// GetTimeout returns spec.timeout, else spec.interval less 30s, and at
// least 30s, as Flux does.
func (in *Kustomization) GetTimeout() time.Duration {
	d := in.Spec.Interval.Duration - 30*time.Second
	if in.Spec.Timeout != nil {
		d = in.Spec.Timeout.Duration
	}
	return max(d, 30*time.Second)
}

// GetRetryInterval returns spec.retryInterval, else spec.interval.
func (in *Kustomization) GetRetryInterval() time.Duration {
	if in.Spec.RetryInterval != nil {
		return in.Spec.RetryInterval.Duration
	}
	return in.Spec.Interval.Duration
}

// GetRequeueAfter returns spec.interval.
func (in *Kustomization) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetDeletionPolicy returns spec.deletionPolicy, default MirrorPrune.
func (in *Kustomization) GetDeletionPolicy() string {
	if in.Spec.DeletionPolicy == "" {
		return DeletionPolicyMirrorPrune
	}
	return in.Spec.DeletionPolicy
}

// DeletesInventory reports whether deleting the Kustomization deletes
// its objects: Delete and WaitForTermination always, MirrorPrune when
// spec.prune is true, Orphan never.
func (in *Kustomization) DeletesInventory() bool {
	switch in.GetDeletionPolicy() {
	case DeletionPolicyDelete, DeletionPolicyWaitForTermination:
		return true
	case DeletionPolicyMirrorPrune:
		return in.Spec.Prune
	}
	return false
}

// GetSubstituteStrategy returns spec.postBuild.substituteStrategy,
// default WithVariables.
func (in *Kustomization) GetSubstituteStrategy() string {
	if in.Spec.PostBuild == nil || in.Spec.PostBuild.SubstituteStrategy == "" {
		return SubstituteStrategyWithVariables
	}
	return in.Spec.PostBuild.SubstituteStrategy
}

// GetDependsOn returns spec.dependsOn.
func (in *Kustomization) GetDependsOn() []DependencyReference { return in.Spec.DependsOn }

// IsReady reports whether the Kustomization is ready in Flux's dependsOn
// sense: Ready is True and status.observedGeneration equals
// metadata.generation.
func (in *Kustomization) IsReady() bool {
	return in.Status.IsConditionTrue(ConditionReady) && in.Status.ObservedGeneration == in.Generation
}

// SetCondition adds or updates the condition of c.Type; its
// LastTransitionTime changes only when its status does.
func (in *KustomizationStatus) SetCondition(c metav1.Condition) {
	apimeta.SetStatusCondition(&in.Conditions, c)
}

// GetCondition returns the condition of type t, or nil.
func (in *KustomizationStatus) GetCondition(t string) *metav1.Condition {
	return apimeta.FindStatusCondition(in.Conditions, t)
}

// RemoveCondition removes the condition of type t.
func (in *KustomizationStatus) RemoveCondition(t string) {
	apimeta.RemoveStatusCondition(&in.Conditions, t)
}

// IsConditionTrue reports whether the condition of type t is True.
func (in *KustomizationStatus) IsConditionTrue(t string) bool {
	return apimeta.IsStatusConditionTrue(in.Conditions, t)
}

// Default fills in, in place, what Flux's API server and controller
// default: metadata.namespace "default" when empty (as for a Release),
// apiVersion and kind, spec.sourceRef.namespace and
// spec.dependsOn[].namespace the Kustomization's namespace. It is
// idempotent.
func (in *Kustomization) Default() {
	if in.Namespace == "" {
		in.Namespace = metav1.NamespaceDefault
	}
	if in.APIVersion == "" && in.Kind == "" {
		in.APIVersion, in.Kind = KustomizationAPIVersion, KustomizationKind
	}
	setString(&in.Spec.SourceRef.Namespace, in.Namespace)
	for i := range in.Spec.DependsOn {
		setString(&in.Spec.DependsOn[i].Namespace, in.Namespace)
	}
}

// MaxKustomizationHistory is how many snapshots .status.history keeps
// (Flux's meta.HistoryMaxSize).
const MaxKustomizationHistory = 5

// RecordHistory records a reconcile of the resources of digest, ended at
// at after took, with outcome status (the Ready reason), in
// .status.history as Flux does: a snapshot of the same digest and status
// is updated (times, duration, metadata, one more reconcile) and moved
// to the front; otherwise a new one goes to the front, and the history
// is cut to MaxKustomizationHistory.
func (in *KustomizationStatus) RecordHistory(digest string, at time.Time, took time.Duration, status string, metadata map[string]string) {
	now, d := metav1.NewTime(at), metav1.Duration{Duration: took}
	snap := KustomizationSnapshot{Digest: digest, FirstReconciled: now, LastReconciledStatus: status}
	if i := slices.IndexFunc(in.History, func(s KustomizationSnapshot) bool {
		return s.Digest == digest && s.LastReconciledStatus == status
	}); i >= 0 {
		snap = in.History[i]
		in.History = slices.Delete(in.History, i, i+1)
	}
	snap.LastReconciled, snap.LastReconciledDuration, snap.Metadata = now, d, metadata
	snap.TotalReconciliations++
	in.History = slices.Insert(in.History, 0, snap)
	if len(in.History) > MaxKustomizationHistory {
		in.History = in.History[:MaxKustomizationHistory]
	}
}
