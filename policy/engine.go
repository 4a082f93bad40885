package policy

import (
	"cmp"
	"errors"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Set is the policies an Engine evaluates.
type Set struct {
	// Propagation are namespaced propagation policies.
	Propagation []PropagationPolicy
	// ClusterPropagation are cluster-scoped propagation policies.
	ClusterPropagation []ClusterPropagationPolicy
	// Override are namespaced override policies.
	Override []OverridePolicy
	// ClusterOverride are cluster-scoped override policies.
	ClusterOverride []ClusterOverridePolicy
}

// Add appends a decoded policy (a value or pointer of one of the four policy
// types) to the set; anything else is an error. With WithDefaultNamespace
// or WithEnforceNamespace, the copy added of a PropagationPolicy or
// OverridePolicy gets the namespace when it has none (the caller's value
// is not changed).
func (s *Set) Add(p any, opts ...AddOption) error {
	var o addOptions
	for _, opt := range opts {
		opt(&o)
	}
	switch t := p.(type) {
	case *PropagationPolicy:
		return s.Add(*t, opts...)
	case PropagationPolicy:
		if err := o.namespaceOf(t.ref(), &t.Namespace); err != nil {
			return err
		}
		s.Propagation = append(s.Propagation, t)
	case *ClusterPropagationPolicy:
		s.ClusterPropagation = append(s.ClusterPropagation, *t)
	case ClusterPropagationPolicy:
		s.ClusterPropagation = append(s.ClusterPropagation, t)
	case *OverridePolicy:
		return s.Add(*t, opts...)
	case OverridePolicy:
		if err := o.namespaceOf(t.ref(), &t.Namespace); err != nil {
			return err
		}
		s.Override = append(s.Override, t)
	case *ClusterOverridePolicy:
		s.ClusterOverride = append(s.ClusterOverride, *t)
	case ClusterOverridePolicy:
		s.ClusterOverride = append(s.ClusterOverride, t)
	default:
		return errors.New("policy: Set.Add: not a policy type")
	}
	return nil
}

// Engine evaluates a validated Set. It is immutable after NewEngine and safe
// for concurrent use.
type Engine struct {
	props     []*propPolicy // sorted by Ref
	propByRef map[Ref]*propPolicy
	propIndex map[typeKey]*kindIndex

	overrides []*ovPolicy // sorted by Ref
	ovByRef   map[Ref]*ovPolicy
	ovIndex   map[typeKey]*kindIndex
	ovAll     []*ovPolicy // policies with no resource selector (select all)
}

type typeKey struct{ apiVersion, kind string }

type nameKey struct{ namespace, name string }

// entry is one resource selector of one policy in an index.
type entry struct {
	policy int // index into Engine.props or Engine.overrides
	sel    *compiledSelector
}

// labelKey is a label pair a label selector requires, in a namespace.
type labelKey struct{ namespace, key, value string }

// kindIndex holds the selectors of one apiVersion/kind: by name when they
// name an object; by a label pair they require when their label selector
// requires one (key=value, or key in (value)); else by namespace ("" = any
// namespace).
type kindIndex struct {
	byName  map[nameKey][]entry
	byLabel map[labelKey][]entry
	keys    []string // the label keys of byLabel, sorted, distinct
	byNS    map[string][]entry
}

func (k *kindIndex) add(e entry) {
	if e.sel.name != "" {
		nk := nameKey{e.sel.namespace, e.sel.name}
		k.byName[nk] = append(k.byName[nk], e)
		return
	}
	if key, value, ok := requiredPair(e.sel.labels); ok {
		lk := labelKey{e.sel.namespace, key, value}
		k.byLabel[lk] = append(k.byLabel[lk], e)
		if i, found := slices.BinarySearch(k.keys, key); !found {
			k.keys = slices.Insert(k.keys, i, key)
		}
		return
	}
	k.byNS[e.sel.namespace] = append(k.byNS[e.sel.namespace], e)
}

// requiredPair returns a label pair every object the selector selects
// carries: its first requirement that is key=value, key==value or key in
// (value).
func requiredPair(s labels.Selector) (key, value string, ok bool) {
	if s == nil {
		return "", "", false
	}
	reqs, selectable := s.Requirements()
	if !selectable {
		return "", "", false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if vs := r.Values(); vs.Len() == 1 {
				return r.Key(), vs.UnsortedList()[0], true
			}
		}
	}
	return "", "", false
}

// candidates calls fn for every selector that could select an object with
// this namespace, name and labels; fn computes the actual level.
func (k *kindIndex) candidates(namespace, name string, lbls rawLabels, fn func(entry)) {
	for _, e := range k.byName[nameKey{namespace, name}] {
		fn(e)
	}
	if namespace != "" {
		for _, e := range k.byName[nameKey{"", name}] {
			fn(e)
		}
	}
	for _, key := range k.keys {
		v, ok := lbls.Lookup(key)
		if !ok {
			continue
		}
		for _, e := range k.byLabel[labelKey{namespace, key, v}] {
			fn(e)
		}
		if namespace != "" {
			for _, e := range k.byLabel[labelKey{"", key, v}] {
				fn(e)
			}
		}
	}
	for _, e := range k.byNS[namespace] {
		fn(e)
	}
	if namespace != "" {
		for _, e := range k.byNS[""] {
			fn(e)
		}
	}
}

func indexSelectors(idx map[typeKey]*kindIndex, policy int, sels []compiledSelector) {
	for i := range sels {
		s := &sels[i]
		tk := typeKey{s.apiVersion, s.kind}
		k := idx[tk]
		if k == nil {
			k = &kindIndex{byName: map[nameKey][]entry{}, byLabel: map[labelKey][]entry{}, byNS: map[string][]entry{}}
			idx[tk] = k
		}
		k.add(entry{policy: policy, sel: s})
	}
}

// propPolicy is a propagation policy prepared for evaluation.
type propPolicy struct {
	idx        int // position in Engine.props
	ref        Ref
	namespaced bool
	priority   int32
	spec       *PropagationSpec
	valuesPath []string // ReplicasValuesPathAnnotation's keys, nil if absent
	sels       []compiledSelector
	groups     []affinityGroup // one group unless clusterAffinities is used
	weights    []compiledWeight
}

type affinityGroup struct {
	name     string // affinityName; "" for clusterAffinity
	path     string // field path for errors
	affinity *compiledAffinity
	overflow []*compiledAffinity // overflowAffinities, in order
}

type compiledWeight struct {
	affinity *compiledAffinity
	weight   int64
}

// ovPolicy is an override policy prepared for evaluation.
type ovPolicy struct {
	ref        Ref
	namespaced bool
	sels       []compiledSelector
	rules      []compiledRule
}

type compiledRule struct {
	index    int
	target   *compiledAffinity
	rule     *RuleWithCluster
	rulePath string // "spec.overrideRules[i]" or "spec" for the deprecated form
}

// NewEngine validates every policy and prepares the set for evaluation. All
// validation problems are returned together (errors.Join of *ValidationError);
// a duplicate policy name is an error too.
func NewEngine(set Set) (*Engine, error) {
	e := &Engine{
		propByRef: map[Ref]*propPolicy{},
		propIndex: map[typeKey]*kindIndex{},
		ovByRef:   map[Ref]*ovPolicy{},
		ovIndex:   map[typeKey]*kindIndex{},
	}
	var errs []error
	for i := range set.Propagation {
		p := &set.Propagation[i]
		register(&errs, e.propByRef, &e.props, p.ref(), p.Validate(), func() *propPolicy { return newPropPolicy(p.ref(), &p.Spec, p.Annotations) })
	}
	for i := range set.ClusterPropagation {
		p := &set.ClusterPropagation[i]
		register(&errs, e.propByRef, &e.props, p.ref(), p.Validate(), func() *propPolicy { return newPropPolicy(p.ref(), &p.Spec, p.Annotations) })
	}
	for i := range set.Override {
		p := &set.Override[i]
		register(&errs, e.ovByRef, &e.overrides, p.ref(), p.Validate(), func() *ovPolicy { return newOvPolicy(p.ref(), &p.Spec) })
	}
	for i := range set.ClusterOverride {
		p := &set.ClusterOverride[i]
		register(&errs, e.ovByRef, &e.overrides, p.ref(), p.Validate(), func() *ovPolicy { return newOvPolicy(p.ref(), &p.Spec) })
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(e.props, func(a, b *propPolicy) int { return compareRef(a.ref, b.ref) })
	slices.SortFunc(e.overrides, func(a, b *ovPolicy) int { return compareRef(a.ref, b.ref) })
	for i, p := range e.props {
		p.idx = i
		indexSelectors(e.propIndex, i, p.sels)
	}
	for i, p := range e.overrides {
		if len(p.sels) == 0 {
			e.ovAll = append(e.ovAll, p)
			continue
		}
		indexSelectors(e.ovIndex, i, p.sels)
	}
	return e, nil
}

// register adds a validated policy, or records why it cannot be added.
func register[P any](errs *[]error, byRef map[Ref]P, list *[]P, ref Ref, invalid error, build func() P) {
	if invalid != nil {
		*errs = append(*errs, invalid)
		return
	}
	if _, dup := byRef[ref]; dup {
		*errs = append(*errs, &ValidationError{Policy: ref, Problems: []*FieldError{{Policy: ref, Path: "metadata.name", Value: ref.Name, Reason: "is used by another policy of the same kind"}}})
		return
	}
	p := build()
	byRef[ref] = p
	*list = append(*list, p)
}

func compareRef(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func newPropPolicy(ref Ref, spec *PropagationSpec, annotations map[string]string) *propPolicy {
	p := &propPolicy{ref: ref, namespaced: ref.Namespace != "", spec: spec, sels: compileSelectors(spec.ResourceSelectors, ref.Namespace)}
	p.valuesPath, _, _ = valuesPathOf(annotations) // Validate refused a bad path
	if spec.Priority != nil {
		p.priority = *spec.Priority
	}
	pl := &spec.Placement
	if len(pl.ClusterAffinities) > 0 {
		for i := range pl.ClusterAffinities {
			t := &pl.ClusterAffinities[i]
			p.groups = append(p.groups, affinityGroup{name: t.AffinityName, path: "spec.placement.clusterAffinities[" + itoa(i) + "]", affinity: compileAffinity(&t.ClusterAffinity), overflow: compileOverflow(t.OverflowAffinities)})
		}
	} else {
		p.groups = []affinityGroup{{path: "spec.placement.clusterAffinity", affinity: compileAffinity(pl.ClusterAffinity)}}
	}
	if rs := pl.ReplicaScheduling; rs != nil && rs.WeightPreference != nil {
		for i := range rs.WeightPreference.StaticWeightList {
			w := &rs.WeightPreference.StaticWeightList[i]
			p.weights = append(p.weights, compiledWeight{affinity: compileAffinity(&w.TargetCluster), weight: w.Weight})
		}
	}
	return p
}

func newOvPolicy(ref Ref, spec *OverrideSpec) *ovPolicy {
	p := &ovPolicy{ref: ref, namespaced: ref.Namespace != "", sels: compileSelectors(spec.ResourceSelectors, ref.Namespace)}
	rules := spec.rules()
	for i := range rules {
		path := "spec.overrideRules[" + itoa(i) + "]"
		if len(spec.OverrideRules) == 0 {
			path = "spec"
		}
		p.rules = append(p.rules, compiledRule{index: i, target: compileAffinity(rules[i].TargetCluster), rule: &rules[i], rulePath: path})
	}
	return p
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	return slices.Sorted(maps.Keys(m))
}

// appendSortedKeys appends m's keys to buf, sorted.
func appendSortedKeys[M ~map[string]V, V any](buf []string, m M) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}
