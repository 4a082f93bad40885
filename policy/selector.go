package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// MatchLevel is how specifically a resource selector matched an object;
// Karmada calls it the implicit priority.
type MatchLevel int

// Match levels, weakest first.
const (
	// MatchNone: the selector does not select the object.
	MatchNone MatchLevel = iota
	// MatchAll: the selector names only apiVersion and kind.
	MatchAll
	// MatchLabels: the selector's label selector matched.
	MatchLabels
	// MatchName: the selector named the object.
	MatchName
	// MatchBinding: the object named the policy with a binding label
	// (helmfleet); stronger than any selector.
	MatchBinding
)

// String renders the level as a word used by Explain.
func (l MatchLevel) String() string {
	switch l {
	case MatchAll:
		return "kind"
	case MatchLabels:
		return "labelSelector"
	case MatchName:
		return "name"
	case MatchBinding:
		return "binding label"
	}
	return "none"
}

// compiledSelector is a ResourceSelector whose label selector is parsed once.
type compiledSelector struct {
	apiVersion, kind, namespace, name string
	labels                            labels.Selector // nil: none given
}

func compileSelectors(rs []ResourceSelector, namespace string) []compiledSelector {
	out := make([]compiledSelector, len(rs))
	for i := range rs {
		s := &rs[i]
		c := compiledSelector{apiVersion: s.APIVersion, kind: s.Kind, namespace: s.Namespace, name: s.Name}
		if namespace != "" {
			// A namespaced policy selects only in its own namespace, as Karmada's
			// webhook enforces by defaulting the selector's namespace.
			c.namespace = namespace
		}
		if s.Name == "" && s.LabelSelector != nil {
			// A label selector that does not parse selects nothing, as in
			// Karmada; Validate reports it before an Engine uses it.
			sel, err := labelSelector(s.LabelSelector)
			if err != nil {
				sel = labels.Nothing()
			}
			c.labels = sel
		}
		out[i] = c
	}
	return out
}

// level is Karmada's ResourceSelectorPriority: apiVersion, kind and namespace
// must agree; a name is compared alone; else the label selector; else all.
func (c *compiledSelector) level(apiVersion, kind, namespace, name string, lbls labels.Labels) MatchLevel {
	if apiVersion != c.apiVersion || kind != c.kind || (c.namespace != "" && namespace != c.namespace) {
		return MatchNone
	}
	if c.name != "" {
		if c.name == name {
			return MatchName
		}
		return MatchNone
	}
	if c.labels == nil {
		return MatchAll
	}
	if c.labels.Matches(lbls) {
		return MatchLabels
	}
	return MatchNone
}

// bestLevel is the policy's implicit priority for the object: the best level
// over its ORed selectors.
func bestLevel(sels []compiledSelector, obj *unstructured.Unstructured) MatchLevel {
	best := MatchNone
	if len(sels) == 0 {
		return best
	}
	av, k, ns, n, l := obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace(), obj.GetName(), objectLabels(obj)
	for i := range sels {
		if lv := sels[i].level(av, k, ns, n, l); lv > best {
			best = lv
			if best == MatchName {
				break
			}
		}
	}
	return best
}

// Match tells how specifically the selector selects the object, as
// Karmada's ResourceSelectorPriority does: apiVersion, kind and (when set)
// namespace must agree; then a name is compared alone (MatchName), else the
// label selector (MatchLabels), else every object of the kind matches
// (MatchAll). A label selector that does not parse selects nothing
// (Validate reports it). A namespaced policy also restricts its selectors to
// its own namespace; Match sees only the selector.
func (s ResourceSelector) Match(obj *unstructured.Unstructured) MatchLevel {
	return MatchObject(obj, s)
}

// MatchObject is the best level at which any of the selectors selects the
// object (they are ORed), as Karmada's ResourceMatchSelectorsPriority: a
// policy's implicit priority for the object. No selectors select nothing.
func MatchObject(obj *unstructured.Unstructured, selectors ...ResourceSelector) MatchLevel {
	return bestLevel(compileSelectors(selectors, ""), obj)
}

func labelSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

// rawLabels reads an unstructured object's labels in place, without the copy
// GetLabels makes; selection reads labels of every object many times.
type rawLabels map[string]any

// Has implements labels.Labels.
func (r rawLabels) Has(k string) bool {
	_, ok := r[k].(string)
	return ok
}

// Get implements labels.Labels.
func (r rawLabels) Get(k string) string {
	s, _ := r[k].(string)
	return s
}

// Lookup implements labels.Labels.
func (r rawLabels) Lookup(k string) (string, bool) {
	s, ok := r[k].(string)
	return s, ok
}

func objectLabels(obj *unstructured.Unstructured) rawLabels {
	md, _ := obj.Object["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return l
}
