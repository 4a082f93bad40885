package policy

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
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
	return ObjectKey{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
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
	fields  []corev1.NodeSelectorRequirement
	names   []string
	exclude []string
}

// compileAffinity parses a validated affinity; a nil affinity selects all.
func compileAffinity(a *ClusterAffinity) *compiledAffinity {
	if a == nil {
		return nil
	}
	c := &compiledAffinity{src: a, names: a.ClusterNames, exclude: a.ExcludeClusters}
	if a.LabelSelector != nil {
		// Validate has already rejected selectors that do not parse.
		c.labels, _ = labelSelector(a.LabelSelector)
	}
	if a.FieldSelector != nil {
		c.fields = a.FieldSelector.MatchExpressions
	}
	return c
}

// matches applies Karmada's rule: exclude first, then every given part ANDed.
func (c *compiledAffinity) matches(cl *Cluster) bool {
	if c == nil {
		return true
	}
	if slices.Contains(c.exclude, cl.Name) {
		return false
	}
	if c.labels != nil && !c.labels.Matches(labels.Set(cl.Labels)) {
		return false
	}
	for i := range c.fields {
		if !fieldMatches(&c.fields[i], cl) {
			return false
		}
	}
	return len(c.names) == 0 || slices.Contains(c.names, cl.Name)
}

// fieldMatches evaluates one In/NotIn requirement on provider, region or zone.
// As in Karmada v1.18 and later, a cluster with several zones matches In when
// any of its zones is listed and NotIn when none is.
func fieldMatches(r *corev1.NodeSelectorRequirement, cl *Cluster) bool {
	var have []string
	switch r.Key {
	case FieldProvider:
		if cl.Provider != "" {
			have = []string{cl.Provider}
		}
	case FieldRegion:
		if cl.Region != "" {
			have = []string{cl.Region}
		}
	case FieldZone:
		have = cl.Zones
	default:
		return true // Karmada ignores other keys; Validate reports them.
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		for _, h := range have {
			if slices.Contains(r.Values, h) {
				return true
			}
		}
		return false
	case corev1.NodeSelectorOpNotIn:
		for _, h := range have {
			if slices.Contains(r.Values, h) {
				return false
			}
		}
		return true
	}
	return false
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
