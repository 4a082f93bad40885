package policy

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GroupVersion is the API group and version of every policy type in this package.
const GroupVersion = "policy.karmada.io/v1alpha1"

// Kinds of the four policy types.
const (
	KindPropagationPolicy        = "PropagationPolicy"
	KindClusterPropagationPolicy = "ClusterPropagationPolicy"
	KindOverridePolicy           = "OverridePolicy"
	KindClusterOverridePolicy    = "ClusterOverridePolicy"
)

// Binding labels: an object names the policy that must govern it. The values are
// policy names; a namespaced policy is looked up in the object's own namespace.
const (
	// LabelPropagationPolicy binds an object to the PropagationPolicy of that name
	// in the object's namespace.
	LabelPropagationPolicy = "propagationpolicy.karmada.io/name"
	// LabelClusterPropagationPolicy binds an object to the ClusterPropagationPolicy
	// of that name.
	LabelClusterPropagationPolicy = "clusterpropagationpolicy.karmada.io/name"
	// LabelOverridePolicy applies the OverridePolicy of that name in the object's
	// namespace to the object, whatever that policy's resource selectors say.
	LabelOverridePolicy = "overridepolicy.karmada.io/name"
	// LabelClusterOverridePolicy applies the ClusterOverridePolicy of that name to
	// the object, whatever that policy's resource selectors say.
	LabelClusterOverridePolicy = "clusteroverridepolicy.karmada.io/name"
)

// PropagationPolicy places the objects it selects in its own namespace onto member
// clusters.
type PropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the policy.
	Spec PropagationSpec `json:"spec"`
}

// ClusterPropagationPolicy places objects of any namespace, and cluster-scoped
// objects, onto member clusters. A matching PropagationPolicy always beats it.
type ClusterPropagationPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the policy.
	Spec PropagationSpec `json:"spec"`
}

// PropagationSpec is the body shared by both propagation policy kinds.
type PropagationSpec struct {
	// ResourceSelectors select the objects this policy places; they are ORed.
	ResourceSelectors []ResourceSelector `json:"resourceSelectors"`
	// Association is Karmada's deprecated spelling of PropagateDeps; either one
	// turns dependency following on.
	Association bool `json:"association,omitempty"`
	// Priority is the explicit priority (default 0); higher wins.
	Priority *int32 `json:"priority,omitempty"`
	// Preemption is kept for compatibility; helmfleet evaluates from scratch
	// every time, so there is nothing to preempt.
	Preemption string `json:"preemption,omitempty"`
	// PropagateDeps makes the dependencies of a selected workload follow it.
	PropagateDeps bool `json:"propagateDeps,omitempty"`
	// Placement chooses the clusters and divides replicas.
	Placement PlacementSpec `json:"placement,omitempty"`
	// DependentOverrides is kept for compatibility; it has no effect here
	// because all policies are known up front.
	DependentOverrides []string `json:"dependentOverrides,omitempty"`
	// SchedulerName is kept for compatibility.
	SchedulerName string `json:"schedulerName,omitempty"`
	// Failover is kept for compatibility; failover is not modelled.
	Failover *JSON `json:"failover,omitempty"`
	// ConflictResolution says what to do when a member cluster already
	// holds a selected object that something else manages there: Abort
	// (the default when empty) refuses to touch it, Overwrite takes it
	// over. The object's AnnotationConflictResolution beats it; see
	// ObjectPlacement.Conflict.
	ConflictResolution ConflictResolution `json:"conflictResolution,omitempty"`
	// ActivationPreference is kept for compatibility.
	ActivationPreference string `json:"activationPreference,omitempty"`
	// Suspension is kept for compatibility.
	Suspension *JSON `json:"suspension,omitempty"`
	// PreserveResourcesOnDeletion is kept for compatibility.
	PreserveResourcesOnDeletion *bool `json:"preserveResourcesOnDeletion,omitempty"`
	// SchedulePriority is kept for compatibility.
	SchedulePriority *JSON `json:"schedulePriority,omitempty"`
}

// ConflictResolution is Karmada's spec.conflictResolution: what to do with an
// object a member already holds that something else manages there.
type ConflictResolution string

// Conflict resolutions.
const (
	// ConflictAbort refuses to touch the member's object and reports a
	// conflict; it is what an empty spec.conflictResolution means.
	ConflictAbort ConflictResolution = "Abort"
	// ConflictOverwrite takes the member's object over.
	ConflictOverwrite ConflictResolution = "Overwrite"
)

// AnnotationConflictResolution on an object (Karmada's resource template
// annotation) sets its conflict resolution whatever its propagation policy
// says. Karmada reads exactly the values AnnotationOverwrite and
// AnnotationAbort and ignores any other; so does helmfleet, with a
// WarnConflictAnnotationInvalid warning.
const AnnotationConflictResolution = "work.karmada.io/conflict-resolution"

// Values of AnnotationConflictResolution.
const (
	AnnotationOverwrite = "overwrite"
	AnnotationAbort     = "abort"
)

// WarnConflictAnnotationInvalid: an object's AnnotationConflictResolution
// is neither "overwrite" nor "abort"; it is ignored, as Karmada ignores it.
const WarnConflictAnnotationInvalid WarningCode = "ConflictAnnotationInvalid"

// ConflictSource says which setting decided an object's conflict resolution.
type ConflictSource string

// Conflict sources.
const (
	// ConflictFromAnnotation: the object's AnnotationConflictResolution.
	ConflictFromAnnotation ConflictSource = "annotation"
	// ConflictFromPolicy: spec.conflictResolution of Conflict.Policy.
	ConflictFromPolicy ConflictSource = "policy"
	// ConflictFromDefault: neither is set, so Abort.
	ConflictFromDefault ConflictSource = "default"
)

// Conflict is the effective conflict resolution of one placed object.
type Conflict struct {
	// Resolution is ConflictAbort or ConflictOverwrite, never empty.
	Resolution ConflictResolution
	// Source says what decided Resolution.
	Source ConflictSource
	// Policy is the propagation policy whose spec.conflictResolution
	// applies: the object's own winning policy or, for an object that only
	// follows workloads, the policy of a workload it follows (one with
	// Overwrite if any, as Karmada aggregates a dependency's bindings).
	// Empty when no policy governs the object.
	Policy Ref
}

// ResourceSelector selects objects by apiVersion and kind (both required) and
// then by name, or else by labels; with neither it selects every object of the kind.
type ResourceSelector struct {
	// APIVersion of the selected objects, e.g. "apps/v1".
	APIVersion string `json:"apiVersion"`
	// Kind of the selected objects, e.g. "Deployment".
	Kind string `json:"kind"`
	// Namespace restricts the selector to one namespace. In a namespaced policy
	// it is always the policy's own namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name selects one object; LabelSelector is then ignored.
	Name string `json:"name,omitempty"`
	// LabelSelector selects objects by their labels.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// FieldSelector selects clusters by provider, region and zone.
type FieldSelector struct {
	// MatchExpressions are ANDed; keys are provider, region or zone and the
	// operators In or NotIn.
	MatchExpressions []corev1.NodeSelectorRequirement `json:"matchExpressions,omitempty"`
}

// Field selector keys.
const (
	FieldProvider = "provider"
	FieldRegion   = "region"
	FieldZone     = "zone"
)

// PlacementSpec is Karmada's Placement (spec.placement): it chooses target
// clusters and how replicas are spread over them.
type PlacementSpec struct {
	// ClusterAffinity restricts the candidate clusters; nil means all.
	ClusterAffinity *ClusterAffinity `json:"clusterAffinity,omitempty"`
	// ClusterAffinities are ordered fallback groups: the first group that yields
	// a cluster is used. Exclusive with ClusterAffinity.
	ClusterAffinities []ClusterAffinityTerm `json:"clusterAffinities,omitempty"`
	// ClusterTolerations tolerate cluster taints.
	ClusterTolerations []corev1.Toleration `json:"clusterTolerations,omitempty"`
	// SpreadConstraints bound how many clusters or regions are chosen.
	SpreadConstraints []SpreadConstraint `json:"spreadConstraints,omitempty"`
	// ReplicaScheduling divides replicas; nil means Duplicated.
	ReplicaScheduling *ReplicaSchedulingStrategy `json:"replicaScheduling,omitempty"`
	// WorkloadAffinity co-locates or separates workloads by the value of a
	// label, among the objects of one Place call.
	WorkloadAffinity *WorkloadAffinity `json:"workloadAffinity,omitempty"`
}

// WorkloadAffinity is Karmada's inter-workload affinity and anti-affinity
// (spec.placement.workloadAffinity).
type WorkloadAffinity struct {
	// Affinity places workloads that share the value of a label on the
	// same clusters.
	Affinity *WorkloadAffinityTerm `json:"affinity,omitempty"`
	// AntiAffinity keeps workloads that share the value of a label off
	// each other's clusters.
	AntiAffinity *WorkloadAffinityTerm `json:"antiAffinity,omitempty"`
}

// WorkloadAffinityTerm names the label whose value groups workloads.
type WorkloadAffinityTerm struct {
	// GroupByLabelKey is the label key on the workload whose value names
	// its group; groups are scoped to a namespace.
	GroupByLabelKey string `json:"groupByLabelKey"`
}

// SpreadFieldValue names a cluster field that clusters are grouped by.
type SpreadFieldValue string

// Spread fields.
const (
	SpreadByFieldCluster  SpreadFieldValue = "cluster"
	SpreadByFieldRegion   SpreadFieldValue = "region"
	SpreadByFieldZone     SpreadFieldValue = "zone"
	SpreadByFieldProvider SpreadFieldValue = "provider"
)

// SpreadConstraint bounds the number of groups (clusters, regions, …) chosen.
type SpreadConstraint struct {
	// SpreadByField groups clusters by a field; empty with an empty
	// SpreadByLabel means "cluster".
	SpreadByField SpreadFieldValue `json:"spreadByField,omitempty"`
	// SpreadByLabel groups clusters by the value of a label.
	SpreadByLabel string `json:"spreadByLabel,omitempty"`
	// MaxGroups is the most groups chosen; 0 means no limit.
	MaxGroups int `json:"maxGroups,omitempty"`
	// MinGroups is the fewest groups chosen; fewer feasible groups is an error.
	MinGroups int `json:"minGroups,omitempty"`
}

// ClusterAffinity selects clusters: Exclude first, then every given part ANDed.
type ClusterAffinity struct {
	// LabelSelector selects clusters by labels.
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
	// FieldSelector selects clusters by provider, region and zone.
	FieldSelector *FieldSelector `json:"fieldSelector,omitempty"`
	// ClusterNames lists the clusters to select.
	ClusterNames []string `json:"clusterNames,omitempty"`
	// ExcludeClusters lists clusters never selected.
	ExcludeClusters []string `json:"exclude,omitempty"`
}

// ClusterAffinityTerm is one named fallback group of Placement.ClusterAffinities.
type ClusterAffinityTerm struct {
	// AffinityName names the group.
	AffinityName    string `json:"affinityName"`
	ClusterAffinity `json:",inline"`
	// OverflowAffinities are further groups, in order, whose clusters
	// take the replicas of a workload that this group's clusters have no
	// room for (with dynamic weights or Aggregated division only).
	OverflowAffinities []OverflowClusterAffinity `json:"overflowAffinities,omitempty"`
}

// OverflowClusterAffinity is one named overflow group of a
// ClusterAffinityTerm.
type OverflowClusterAffinity struct {
	// AffinityName names the group.
	AffinityName    string `json:"affinityName"`
	ClusterAffinity `json:",inline"`
}

// ReplicaSchedulingType is Duplicated or Divided.
type ReplicaSchedulingType string

// Replica scheduling types.
const (
	ReplicaSchedulingTypeDuplicated ReplicaSchedulingType = "Duplicated"
	ReplicaSchedulingTypeDivided    ReplicaSchedulingType = "Divided"
)

// ReplicaDivisionPreference is Aggregated or Weighted.
type ReplicaDivisionPreference string

// Replica division preferences.
const (
	ReplicaDivisionPreferenceAggregated ReplicaDivisionPreference = "Aggregated"
	ReplicaDivisionPreferenceWeighted   ReplicaDivisionPreference = "Weighted"
)

// ReplicaSchedulingStrategy says how replicas are handed to clusters.
type ReplicaSchedulingStrategy struct {
	// ReplicaSchedulingType is Duplicated or Divided; empty means Divided,
	// Karmada's CRD default.
	ReplicaSchedulingType ReplicaSchedulingType `json:"replicaSchedulingType,omitempty"`
	// ReplicaDivisionPreference is Aggregated or Weighted; empty with Divided
	// means Weighted.
	ReplicaDivisionPreference ReplicaDivisionPreference `json:"replicaDivisionPreference,omitempty"`
	// WeightPreference gives static or dynamic weights; nil weighs all clusters
	// the same.
	WeightPreference *ClusterPreferences `json:"weightPreference,omitempty"`
}

// ClusterPreferences holds static weights or a dynamic weight factor.
type ClusterPreferences struct {
	// StaticWeightList gives weights to the clusters each rule selects.
	StaticWeightList []StaticClusterWeight `json:"staticWeightList,omitempty"`
	// DynamicWeight, when set, replaces StaticWeightList.
	DynamicWeight DynamicWeightFactor `json:"dynamicWeight,omitempty"`
}

// StaticClusterWeight gives a weight to the clusters TargetCluster selects.
type StaticClusterWeight struct {
	// TargetCluster selects the clusters.
	TargetCluster ClusterAffinity `json:"targetCluster"`
	// Weight of those clusters; a cluster takes the largest weight of the rules
	// that select it.
	Weight int64 `json:"weight"`
}

// DynamicWeightFactor names what dynamic weights come from.
type DynamicWeightFactor string

// DynamicWeightByAvailableReplicas weighs clusters by Cluster.AvailableReplicas.
const DynamicWeightByAvailableReplicas DynamicWeightFactor = "AvailableReplicas"

// OverridePolicy changes, per cluster, the objects it selects in its namespace.
type OverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the policy.
	Spec OverrideSpec `json:"spec"`
}

// ClusterOverridePolicy changes, per cluster, objects of any namespace.
type ClusterOverridePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired behaviour of the policy.
	Spec OverrideSpec `json:"spec"`
}

// OverrideSpec is the body shared by both override policy kinds.
type OverrideSpec struct {
	// ResourceSelectors select the objects; empty selects all (in the policy's
	// namespace for an OverridePolicy).
	ResourceSelectors []ResourceSelector `json:"resourceSelectors,omitempty"`
	// OverrideRules apply in list order.
	OverrideRules []RuleWithCluster `json:"overrideRules,omitempty"`
	// TargetCluster is Karmada's deprecated single-rule form; it is used only
	// when OverrideRules is empty.
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`
	// Overriders is Karmada's deprecated single-rule form; it is used only when
	// OverrideRules is empty.
	Overriders Overriders `json:"overriders,omitempty"`
}

// RuleWithCluster applies Overriders on the clusters TargetCluster selects.
type RuleWithCluster struct {
	// TargetCluster selects clusters; nil means all.
	TargetCluster *ClusterAffinity `json:"targetCluster,omitempty"`
	// Overriders to apply, in the fixed order image, command, args, labels,
	// annotations, field, plaintext, values.
	Overriders Overriders `json:"overriders"`
}

// Overriders are the changes one rule makes.
type Overriders struct {
	// Plaintext are RFC 6902 operations on the object.
	Plaintext []PlaintextOverrider `json:"plaintext,omitempty"`
	// ImageOverrider changes parts of container images.
	ImageOverrider []ImageOverrider `json:"imageOverrider,omitempty"`
	// CommandOverrider changes container commands.
	CommandOverrider []CommandArgsOverrider `json:"commandOverrider,omitempty"`
	// ArgsOverrider changes container args.
	ArgsOverrider []CommandArgsOverrider `json:"argsOverrider,omitempty"`
	// LabelsOverrider changes the object's labels.
	LabelsOverrider []LabelAnnotationOverrider `json:"labelsOverrider,omitempty"`
	// AnnotationsOverrider changes the object's annotations.
	AnnotationsOverrider []LabelAnnotationOverrider `json:"annotationsOverrider,omitempty"`
	// FieldOverrider changes JSON or YAML held in a string field.
	FieldOverrider []FieldOverrider `json:"fieldOverrider,omitempty"`
	// ValuesOverrider (helmfleet) changes a Release's Helm values at
	// /spec/values; it applies after every Karmada overrider.
	ValuesOverrider []ValuesOverrider `json:"valuesOverrider,omitempty"`
}

// OverriderOperator is add, remove or replace.
type OverriderOperator string

// Overrider operators.
const (
	OverriderOpAdd     OverriderOperator = "add"
	OverriderOpRemove  OverriderOperator = "remove"
	OverriderOpReplace OverriderOperator = "replace"
)

// PlaintextOverrider is one RFC 6902 operation.
type PlaintextOverrider struct {
	// Path is an RFC 6901 JSON pointer.
	Path string `json:"path"`
	// Operator is add, remove or replace.
	Operator OverriderOperator `json:"operator"`
	// Value for add and replace.
	Value JSON `json:"value,omitempty"`
}

// ImageComponent is a part of an image reference.
type ImageComponent string

// Image components.
const (
	ImageRegistry   ImageComponent = "Registry"
	ImageRepository ImageComponent = "Repository"
	ImageTag        ImageComponent = "Tag"
)

// ImageOverrider changes one component of container images.
type ImageOverrider struct {
	// Predicate points at one image field; nil means every containers[*].image
	// of a Pod, ReplicaSet, Deployment, DaemonSet, StatefulSet or Job.
	Predicate *ImagePredicate `json:"predicate,omitempty"`
	// Component to change.
	Component ImageComponent `json:"component"`
	// Operator: add appends Value to the component, remove clears it, replace
	// sets it.
	Operator OverriderOperator `json:"operator"`
	// Value for add and replace.
	Value string `json:"value,omitempty"`
}

// ImagePredicate points at an image field.
type ImagePredicate struct {
	// Path is an RFC 6901 JSON pointer to a string image field.
	Path string `json:"path"`
}

// CommandArgsOverrider appends to or removes from a container's command or
// args: the containers of a Pod, of the pod template of a ReplicaSet,
// Deployment, DaemonSet, StatefulSet or Job, and (helmfleet) of a CronJob's
// jobTemplate.
type CommandArgsOverrider struct {
	// ContainerName selects the container.
	ContainerName string `json:"containerName"`
	// Operator: add appends Value, remove drops the exact values in Value.
	Operator OverriderOperator `json:"operator"`
	// Value to add or remove.
	Value []string `json:"value,omitempty"`
}

// LabelAnnotationOverrider changes the object's own labels or annotations.
type LabelAnnotationOverrider struct {
	// Operator: add sets keys, remove deletes existing keys, replace changes
	// existing keys only.
	Operator OverriderOperator `json:"operator"`
	// Value maps keys to values.
	Value map[string]string `json:"value,omitempty"`
}

// FieldOverrider patches a JSON or YAML document held in a string field.
type FieldOverrider struct {
	// FieldPath is an RFC 6901 pointer to the string field.
	FieldPath string `json:"fieldPath"`
	// JSON operations, when the field holds JSON.
	JSON []JSONPatchOperation `json:"json,omitempty"`
	// YAML operations, when the field holds YAML.
	YAML []YAMLPatchOperation `json:"yaml,omitempty"`
}

// JSONPatchOperation is one operation inside a JSON document.
type JSONPatchOperation struct {
	// SubPath is an RFC 6901 pointer inside the document.
	SubPath string `json:"subPath"`
	// Operator is add, remove or replace.
	Operator OverriderOperator `json:"operator"`
	// Value for add and replace.
	Value JSON `json:"value,omitempty"`
}

// YAMLPatchOperation is one operation inside a YAML document.
type YAMLPatchOperation struct {
	// SubPath is an RFC 6901 pointer inside the document.
	SubPath string `json:"subPath"`
	// Operator is add, remove or replace.
	Operator OverriderOperator `json:"operator"`
	// Value for add and replace.
	Value JSON `json:"value,omitempty"`
}

// ValuesOverrider (helmfleet) changes the Helm values of a Release for the
// clusters its rule targets. Each entry is exactly one of:
//
//	valuesOverrider:
//	  - merge:                 # RFC 7386 merge patch: maps merge, lists and
//	      replicaCount: 3      # scalars replace, null deletes a key
//	  - path: /image/tag       # RFC 6902 operation; the pointer is relative
//	    operator: replace      # to the values (/spec/values of the object)
//	    value: "6.5.0"
type ValuesOverrider struct {
	// Merge is an RFC 7386 merge patch of the values.
	Merge *JSON `json:"merge,omitempty"`
	// Path is an RFC 6901 pointer into the values.
	Path string `json:"path,omitempty"`
	// Operator is add, remove or replace (with Path).
	Operator OverriderOperator `json:"operator,omitempty"`
	// Value for add and replace.
	Value JSON `json:"value,omitempty"`
}

// ValuesPath is where a Release object holds its Helm values; the values
// overrider patches the document there.
const ValuesPath = "/spec/values"

// JSON holds an arbitrary JSON value verbatim, like apiextensions' JSON.
type JSON struct {
	// Raw is the JSON text; empty means no value.
	Raw []byte `json:"-"`
}

// MarshalJSON implements json.Marshaler.
func (j JSON) MarshalJSON() ([]byte, error) {
	if len(j.Raw) == 0 {
		return []byte("null"), nil
	}
	return j.Raw, nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (j *JSON) UnmarshalJSON(data []byte) error {
	if !json.Valid(data) {
		return fmt.Errorf("policy: invalid JSON value %q", data)
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		j.Raw = nil
		return nil
	}
	j.Raw = append(j.Raw[:0], data...)
	return nil
}

// Value decodes the JSON into plain Go values (maps, slices, float64/int64, …);
// an empty JSON yields nil.
func (j JSON) Value() (any, error) {
	if len(j.Raw) == 0 {
		return nil, nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(j.Raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return normalizeNumbers(v), nil
}

// normalizeNumbers turns json.Number into int64 or float64, as unstructured
// objects hold them.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
	}
	return v
}

// ref identifies the policy in errors and explanations.
func (p *PropagationPolicy) ref() Ref {
	return Ref{Kind: KindPropagationPolicy, Namespace: p.Namespace, Name: p.Name}
}

func (p *ClusterPropagationPolicy) ref() Ref {
	return Ref{Kind: KindClusterPropagationPolicy, Name: p.Name}
}

func (p *OverridePolicy) ref() Ref {
	return Ref{Kind: KindOverridePolicy, Namespace: p.Namespace, Name: p.Name}
}

func (p *ClusterOverridePolicy) ref() Ref {
	return Ref{Kind: KindClusterOverridePolicy, Name: p.Name}
}

// Ref identifies a policy.
type Ref struct {
	// Kind is one of the four policy kinds.
	Kind string
	// Namespace is empty for the cluster-scoped kinds.
	Namespace string
	// Name of the policy.
	Name string
}

// String renders "Kind namespace/name" or "Kind name".
func (r Ref) String() string {
	if r.Kind == "" && r.Name == "" {
		return ""
	}
	if r.Namespace == "" {
		return r.Kind + " " + r.Name
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name
}

// rules returns the effective override rules, turning Karmada's deprecated
// single-rule form into one rule when OverrideRules is empty.
func (s *OverrideSpec) rules() []RuleWithCluster {
	if len(s.OverrideRules) > 0 {
		return s.OverrideRules
	}
	if s.TargetCluster == nil && s.Overriders.empty() {
		return nil
	}
	return []RuleWithCluster{{TargetCluster: s.TargetCluster, Overriders: s.Overriders}}
}

func (o *Overriders) empty() bool {
	return len(o.Plaintext) == 0 && len(o.ImageOverrider) == 0 && len(o.CommandOverrider) == 0 &&
		len(o.ArgsOverrider) == 0 && len(o.LabelsOverrider) == 0 && len(o.AnnotationsOverrider) == 0 &&
		len(o.FieldOverrider) == 0 && len(o.ValuesOverrider) == 0
}
