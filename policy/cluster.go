package policy

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Cluster is what placement knows about one member cluster: plain data the
// caller reports.
type Cluster struct {
	// Name is unique in the fleet.
	Name string
	// Labels are matched by clusterAffinity.labelSelector.
	Labels map[string]string
	// Provider is matched by fieldSelector key "provider" and grouped by
	// spreadByField: provider.
	Provider string
	// Region is matched by fieldSelector key "region" and grouped by
	// spreadByField: region.
	Region string
	// Zones are matched by fieldSelector key "zone" (In: the cluster has at
	// least one listed zone; NotIn: it has none); spreadByField: zone groups
	// by the smallest zone.
	Zones []string
	// Taints keep objects away unless the policy tolerates them; only the
	// NoSchedule and NoExecute effects filter.
	Taints []corev1.Taint
	// AvailableReplicas is how many more replicas of a workload the cluster can
	// take; dynamic weights and Aggregated division use it. Negative means
	// unknown and counts as zero.
	AvailableReplicas int64
}

// ObjectKey identifies an object in errors and results.
type ObjectKey struct {
	// APIVersion of the object, e.g. "apps/v1".
	APIVersion string
	// Kind of the object.
	Kind string
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name of the object.
	Name string
}

// KeyOf returns the key of an object.
func KeyOf(obj *unstructured.Unstructured) ObjectKey {
	// As GetAPIVersion, GetKind, GetNamespace and GetName read them (a
	// field that is not a string reads as ""), without their path walk.
	av, _ := obj.Object["apiVersion"].(string)
	kind, _ := obj.Object["kind"].(string)
	md, _ := obj.Object["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	return ObjectKey{APIVersion: av, Kind: kind, Namespace: ns, Name: name}
}

// String renders "Kind namespace/name" (or "Kind name").
func (k ObjectKey) String() string {
	if k.Namespace == "" {
		return k.Kind + " " + k.Name
	}
	return k.Kind + " " + k.Namespace + "/" + k.Name
}

func (k ObjectKey) less(o ObjectKey) bool {
	if k.Namespace != o.Namespace {
		return k.Namespace < o.Namespace
	}
	if k.Kind != o.Kind {
		return k.Kind < o.Kind
	}
	if k.Name != o.Name {
		return k.Name < o.Name
	}
	return k.APIVersion < o.APIVersion
}

// compiledAffinity is a ClusterAffinity with its selectors parsed once.
type compiledAffinity struct {
	src     *ClusterAffinity
	labels  labels.Selector // nil: no label selector
	zones   []corev1.NodeSelectorRequirement
	fields  []labels.Requirement // the requirements on provider and region
	never   bool                 // a selector does not parse: no cluster matches
	names   []string
	exclude []string
}

// compileAffinity parses an affinity; a nil affinity selects all. A label
// or field selector that does not parse selects no cluster, as in Karmada's
// ClusterMatches; Validate reports such selectors before an Engine uses
// them.
func compileAffinity(a *ClusterAffinity) *compiledAffinity {
	if a == nil {
		return nil
	}
	c := &compiledAffinity{src: a, names: a.ClusterNames, exclude: a.ExcludeClusters}
	if a.LabelSelector != nil {
		sel, err := labelSelector(a.LabelSelector)
		c.labels, c.never = sel, err != nil
	}
	if a.FieldSelector != nil {
		for _, r := range a.FieldSelector.MatchExpressions {
			if r.Key == FieldZone {
				c.zones = append(c.zones, r)
				continue
			}
			req, err := fieldRequirement(&r)
			if err != nil {
				c.never = true
				continue
			}
			c.fields = append(c.fields, *req)
		}
	}
	return c
}

// fieldRequirement reads a provider or region expression as Karmada does:
// a label requirement over the cluster's provider and region, with every
// node selector operator; any other key is absent from a cluster.
func fieldRequirement(r *corev1.NodeSelectorRequirement) (*labels.Requirement, error) {
	var op selection.Operator
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		op = selection.In
	case corev1.NodeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.NodeSelectorOpExists:
		op = selection.Exists
	case corev1.NodeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	case corev1.NodeSelectorOpGt:
		op = selection.GreaterThan
	case corev1.NodeSelectorOpLt:
		op = selection.LessThan
	default:
		return nil, fmt.Errorf("%q is not a valid operator", r.Operator)
	}
	return labels.NewRequirement(r.Key, op, r.Values)
}

// Matches tells whether the affinity selects the cluster, as Karmada's
// ClusterMatches does: an excluded cluster never matches; then the label
// selector, the field selector and the cluster names, where given, must all
// match. A zone expression matches with In when the cluster has any listed
// zone, with NotIn when it has none, with Exists when it has a zone and with
// DoesNotExist when it has none. A selector that does not parse matches no
// cluster (Validate reports it).
func (a ClusterAffinity) Matches(c Cluster) bool {
	return compileAffinity(&a).matches(&c)
}

// matches applies Karmada's rule: exclude first, then every given part ANDed.
func (c *compiledAffinity) matches(cl *Cluster) bool {
	if c == nil {
		return true
	}
	if c.never || slices.Contains(c.exclude, cl.Name) {
		return false
	}
	if c.labels != nil && !c.labels.Matches(labels.Set(cl.Labels)) {
		return false
	}
	for i := range c.zones {
		if !zonesMatch(&c.zones[i], cl.Zones) {
			return false
		}
	}
	for i := range c.fields {
		if !c.fields[i].Matches((*clusterFields)(cl)) {
			return false
		}
	}
	return len(c.names) == 0 || slices.Contains(c.names, cl.Name)
}

// zonesMatch evaluates a zone expression. As in Karmada v1.18 and later, a
// cluster with several zones matches In when any of its zones is listed and
// NotIn when none is.
func zonesMatch(r *corev1.NodeSelectorRequirement, zones []string) bool {
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(r.Values, z) })
	case corev1.NodeSelectorOpNotIn:
		return !slices.ContainsFunc(zones, func(z string) bool { return slices.Contains(r.Values, z) })
	case corev1.NodeSelectorOpExists:
		return len(zones) > 0
	case corev1.NodeSelectorOpDoesNotExist:
		return len(zones) == 0
	}
	return false
}

// clusterFields shows a cluster's provider and region to a label
// requirement, as labels that are absent when empty.
type clusterFields Cluster

// Has implements labels.Labels.
func (f *clusterFields) Has(k string) bool {
	_, ok := f.Lookup(k)
	return ok
}

// Get implements labels.Labels.
func (f *clusterFields) Get(k string) string {
	v, _ := f.Lookup(k)
	return v
}

// Lookup implements labels.Labels.
func (f *clusterFields) Lookup(k string) (string, bool) {
	switch k {
	case FieldProvider:
		return f.Provider, f.Provider != ""
	case FieldRegion:
		return f.Region, f.Region != ""
	}
	return "", false
}

// tolerated reports whether every NoSchedule and NoExecute taint of the
// cluster is tolerated, and if not, the first taint that is not.
func tolerated(tols []corev1.Toleration, cl *Cluster) (bool, *corev1.Taint) {
	for i := range cl.Taints {
		t := &cl.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for j := range tols {
			if toleratesTaint(&tols[j], t) {
				ok = true
				break
			}
		}
		if !ok {
			return false, t
		}
	}
	return true, nil
}

// toleratesTaint follows Kubernetes' rule: an empty effect tolerates every
// effect, an empty key with Exists tolerates every taint, Exists ignores the
// value, Equal (or empty) compares it.
func toleratesTaint(tol *corev1.Toleration, t *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != t.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != t.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Value == t.Value
	}
	return false
}
