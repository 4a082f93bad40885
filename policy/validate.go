package policy

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// validator collects problems for one policy.
type validator struct {
	ref      Ref
	problems []*FieldError
}

func (v *validator) add(path string, value any, format string, args ...any) {
	v.problems = append(v.problems, &FieldError{Policy: v.ref, Path: path, Value: value, Reason: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Policy: v.ref, Problems: v.problems}
}

func (v *validator) meta(apiVersion, kind, wantKind, name, namespace string, namespaced bool) {
	if apiVersion != "" && apiVersion != GroupVersion {
		v.add("apiVersion", apiVersion, "must be %s", GroupVersion)
	}
	if kind != "" && kind != wantKind {
		v.add("kind", kind, "must be %s", wantKind)
	}
	if name == "" {
		v.add("metadata.name", name, "is required")
	}
	if namespaced && namespace == "" {
		v.add("metadata.namespace", namespace, "is required for a namespaced policy")
	}
	if !namespaced && namespace != "" {
		v.add("metadata.namespace", namespace, "must be empty for a cluster-scoped policy")
	}
}

// Validate reports every problem in the policy, each with its field path and
// bad value, as a *ValidationError (nil when valid).
func (p *PropagationPolicy) Validate() error {
	v := &validator{ref: p.ref()}
	v.meta(p.APIVersion, p.Kind, KindPropagationPolicy, p.Name, p.Namespace, true)
	v.valuesPathAnnotation(p.Annotations)
	v.propagationSpec(&p.Spec, p.Namespace)
	return v.err()
}

// Validate reports every problem in the policy, each with its field path and
// bad value, as a *ValidationError (nil when valid).
func (p *ClusterPropagationPolicy) Validate() error {
	v := &validator{ref: p.ref()}
	v.meta(p.APIVersion, p.Kind, KindClusterPropagationPolicy, p.Name, p.Namespace, false)
	v.valuesPathAnnotation(p.Annotations)
	v.propagationSpec(&p.Spec, "")
	return v.err()
}

// Validate reports every problem in the policy, each with its field path and
// bad value, as a *ValidationError (nil when valid).
func (p *OverridePolicy) Validate() error {
	v := &validator{ref: p.ref()}
	v.meta(p.APIVersion, p.Kind, KindOverridePolicy, p.Name, p.Namespace, true)
	v.overrideSpec(&p.Spec, p.Namespace)
	return v.err()
}

// Validate reports every problem in the policy, each with its field path and
// bad value, as a *ValidationError (nil when valid).
func (p *ClusterOverridePolicy) Validate() error {
	v := &validator{ref: p.ref()}
	v.meta(p.APIVersion, p.Kind, KindClusterOverridePolicy, p.Name, p.Namespace, false)
	v.overrideSpec(&p.Spec, "")
	return v.err()
}

func (v *validator) selectors(path string, rs []ResourceSelector, namespace string) {
	for i := range rs {
		s := &rs[i]
		p := fmt.Sprintf("%s[%d]", path, i)
		if s.APIVersion == "" {
			v.add(p+".apiVersion", s.APIVersion, "is required")
		}
		if s.Kind == "" {
			v.add(p+".kind", s.Kind, "is required")
		}
		if namespace != "" && s.Namespace != "" && s.Namespace != namespace {
			v.add(p+".namespace", s.Namespace, "must be the policy's own namespace %q", namespace)
		}
		if s.LabelSelector != nil {
			if _, err := labelSelector(s.LabelSelector); err != nil {
				v.add(p+".labelSelector", s.LabelSelector.String(), "%v", err)
			}
		}
	}
}

func (v *validator) propagationSpec(s *PropagationSpec, namespace string) {
	if len(s.ResourceSelectors) == 0 {
		v.add("spec.resourceSelectors", nil, "at least one selector is required")
	}
	v.selectors("spec.resourceSelectors", s.ResourceSelectors, namespace)
	switch s.ConflictResolution {
	case "", ConflictAbort, ConflictOverwrite:
	default:
		v.add("spec.conflictResolution", string(s.ConflictResolution), "must be Abort or Overwrite")
	}
	pl := &s.Placement
	if pl.ClusterAffinity != nil && len(pl.ClusterAffinities) > 0 {
		v.add("spec.placement.clusterAffinities", len(pl.ClusterAffinities), "cannot be set together with clusterAffinity")
	}
	v.affinity("spec.placement.clusterAffinity", pl.ClusterAffinity)
	seen := map[string]bool{}
	for i := range pl.ClusterAffinities {
		t := &pl.ClusterAffinities[i]
		p := fmt.Sprintf("spec.placement.clusterAffinities[%d]", i)
		if t.AffinityName == "" {
			v.add(p+".affinityName", t.AffinityName, "is required")
		} else if seen[t.AffinityName] {
			v.add(p+".affinityName", t.AffinityName, "is used by an earlier group")
		}
		seen[t.AffinityName] = true
		v.affinity(p, &t.ClusterAffinity)
		v.overflow(p, t, pl.ReplicaScheduling)
	}
	v.workloadAffinity(pl.WorkloadAffinity)
	for i := range pl.ClusterTolerations {
		v.toleration(fmt.Sprintf("spec.placement.clusterTolerations[%d]", i), &pl.ClusterTolerations[i])
	}
	v.spread(pl.SpreadConstraints)
	if rs := pl.ReplicaScheduling; rs != nil {
		p := "spec.placement.replicaScheduling"
		switch rs.ReplicaSchedulingType {
		case "", ReplicaSchedulingTypeDuplicated, ReplicaSchedulingTypeDivided:
		default:
			v.add(p+".replicaSchedulingType", string(rs.ReplicaSchedulingType), "must be Duplicated or Divided")
		}
		switch rs.ReplicaDivisionPreference {
		case "", ReplicaDivisionPreferenceAggregated, ReplicaDivisionPreferenceWeighted:
		default:
			v.add(p+".replicaDivisionPreference", string(rs.ReplicaDivisionPreference), "must be Aggregated or Weighted")
		}
		if wp := rs.WeightPreference; wp != nil {
			if wp.DynamicWeight != "" && wp.DynamicWeight != DynamicWeightByAvailableReplicas {
				v.add(p+".weightPreference.dynamicWeight", string(wp.DynamicWeight), "must be AvailableReplicas")
			}
			for i := range wp.StaticWeightList {
				w := &wp.StaticWeightList[i]
				wpth := fmt.Sprintf("%s.weightPreference.staticWeightList[%d]", p, i)
				if w.Weight < 0 {
					v.add(wpth+".weight", w.Weight, "must not be negative")
				}
				v.affinity(wpth+".targetCluster", &w.TargetCluster)
			}
		}
	}
}

func (v *validator) affinity(path string, a *ClusterAffinity) {
	if a == nil {
		return
	}
	if a.LabelSelector != nil {
		if _, err := labelSelector(a.LabelSelector); err != nil {
			v.add(path+".labelSelector", a.LabelSelector.String(), "%v", err)
		}
	}
	if a.FieldSelector != nil {
		for i := range a.FieldSelector.MatchExpressions {
			r := &a.FieldSelector.MatchExpressions[i]
			p := fmt.Sprintf("%s.fieldSelector.matchExpressions[%d]", path, i)
			switch r.Key {
			case FieldProvider, FieldRegion, FieldZone:
			default:
				v.add(p+".key", r.Key, "must be provider, region or zone")
			}
			switch r.Operator {
			case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
				if len(r.Values) == 0 {
					v.add(p+".values", r.Values, "must not be empty for %s", r.Operator)
					break
				}
				if r.Key != FieldProvider && r.Key != FieldRegion {
					break
				}
				// Karmada admits any value, but a provider or region value
				// that is not a label value makes its expression, and so the
				// affinity, match no cluster.
				if _, err := fieldRequirement(r); err != nil {
					v.add(p+".values", r.Values, "%v", err)
				}
			default:
				v.add(p+".operator", string(r.Operator), "must be In or NotIn")
			}
		}
	}
}

// overflow checks a group's overflowAffinities as Karmada does: only with
// dynamic weights or Aggregated division, only beside the group's own
// affinity, each named once and not by the group's name.
func (v *validator) overflow(path string, t *ClusterAffinityTerm, rs *ReplicaSchedulingStrategy) {
	if len(t.OverflowAffinities) == 0 {
		return
	}
	p := path + ".overflowAffinities"
	if rs == nil || !divided(rs) || (rs.ReplicaDivisionPreference != ReplicaDivisionPreferenceAggregated &&
		(rs.WeightPreference == nil || rs.WeightPreference.DynamicWeight == "")) {
		v.add(p, len(t.OverflowAffinities), "can only be used together with dynamic weight or aggregated scheduling")
	}
	a := &t.ClusterAffinity
	if a.LabelSelector == nil && a.FieldSelector == nil && len(a.ClusterNames) == 0 && len(a.ExcludeClusters) == 0 {
		v.add(p, len(t.OverflowAffinities), "can only be used together with the group's own cluster affinity")
	}
	names := map[string]bool{t.AffinityName: true}
	for i := range t.OverflowAffinities {
		o := &t.OverflowAffinities[i]
		op := fmt.Sprintf("%s[%d]", p, i)
		switch {
		case o.AffinityName == "":
			v.add(op+".affinityName", o.AffinityName, "is required")
		case names[o.AffinityName]:
			v.add(op+".affinityName", o.AffinityName, "must be unique and must not be the group's own affinityName")
		}
		names[o.AffinityName] = true
		v.affinity(op, &o.ClusterAffinity)
	}
}

// workloadAffinity checks what Karmada's admission checks: each
// groupByLabelKey is a label key, and affinity and anti-affinity do not
// group by the same one.
func (v *validator) workloadAffinity(wa *WorkloadAffinity) {
	if wa == nil {
		return
	}
	p := "spec.placement.workloadAffinity"
	for _, t := range []struct {
		name string
		term *WorkloadAffinityTerm
	}{{"affinity", wa.Affinity}, {"antiAffinity", wa.AntiAffinity}} {
		if t.term == nil {
			continue
		}
		if errs := validation.IsQualifiedName(t.term.GroupByLabelKey); len(errs) > 0 {
			v.add(p+"."+t.name+".groupByLabelKey", t.term.GroupByLabelKey, "%s", errs[0])
		}
	}
	if wa.Affinity != nil && wa.AntiAffinity != nil && wa.Affinity.GroupByLabelKey == wa.AntiAffinity.GroupByLabelKey {
		v.add(p, wa.Affinity.GroupByLabelKey, "affinity and antiAffinity must not use the same groupByLabelKey")
	}
}

// toleration refuses what Karmada's admission refuses: the Lt and Gt
// operators. Everything else Karmada admits is admitted: a toleration with
// only an effect (no key, no operator) tolerates every taint of that
// effect, as in Kubernetes.
func (v *validator) toleration(path string, t *corev1.Toleration) {
	if t.Operator == corev1.TolerationOpLt || t.Operator == corev1.TolerationOpGt {
		v.add(path+".operator", string(t.Operator), "must be empty, Exists or Equal (Karmada refuses Lt and Gt for clusters)")
	}
}

func (v *validator) spread(cs []SpreadConstraint) {
	fields := map[SpreadFieldValue]bool{}
	byField := false // a constraint by region, zone or provider
	for i := range cs {
		c := &cs[i]
		p := fmt.Sprintf("spec.placement.spreadConstraints[%d]", i)
		if c.SpreadByField != "" && c.SpreadByLabel != "" {
			v.add(p+".spreadByLabel", c.SpreadByLabel, "cannot be set together with spreadByField")
		}
		switch c.SpreadByField {
		case "", SpreadByFieldCluster, SpreadByFieldRegion, SpreadByFieldZone, SpreadByFieldProvider:
		default:
			v.add(p+".spreadByField", string(c.SpreadByField), "must be cluster, region, zone or provider")
		}
		if c.SpreadByLabel != "" {
			if errs := validation.IsQualifiedName(c.SpreadByLabel); len(errs) > 0 {
				v.add(p+".spreadByLabel", c.SpreadByLabel, "%s", errs[0])
			}
		}
		if c.SpreadByField != "" && c.SpreadByField != SpreadByFieldCluster {
			byField = true
		}
		f := spreadKey(c)
		if fields[f] {
			v.add(p+".spreadByField", string(f), "is constrained twice")
		}
		fields[f] = true
		if c.MinGroups < 0 {
			v.add(p+".minGroups", c.MinGroups, "must not be negative")
		}
		if c.MaxGroups < 0 {
			v.add(p+".maxGroups", c.MaxGroups, "must not be negative")
		}
		if c.MaxGroups > 0 && c.MaxGroups < c.MinGroups {
			v.add(p+".maxGroups", c.MaxGroups, "must not be less than minGroups %d", c.MinGroups)
		}
	}
	groups := 0
	for f := range fields {
		if f != SpreadByFieldCluster {
			groups++
		}
	}
	if byField && !fields[SpreadByFieldCluster] {
		v.add("spec.placement.spreadConstraints", len(cs), "a constraint by cluster is required with one by region, zone or provider")
	}
	if groups > 1 {
		v.add("spec.placement.spreadConstraints", len(cs), "at most one constraint other than by cluster is supported")
	}
}

// spreadKey returns the grouping a constraint uses, with labels as "label:<key>".
func spreadKey(c *SpreadConstraint) SpreadFieldValue {
	if c.SpreadByLabel != "" {
		return SpreadFieldValue("label:" + c.SpreadByLabel)
	}
	if c.SpreadByField == "" {
		return SpreadByFieldCluster
	}
	return c.SpreadByField
}

func (v *validator) overrideSpec(s *OverrideSpec, namespace string) {
	v.selectors("spec.resourceSelectors", s.ResourceSelectors, namespace)
	if len(s.OverrideRules) > 0 && (s.TargetCluster != nil || !s.Overriders.empty()) {
		v.add("spec.overriders", nil, "the deprecated targetCluster/overriders cannot be used with overrideRules")
	}
	if len(s.OverrideRules) == 0 {
		v.affinity("spec.targetCluster", s.TargetCluster)
		v.overriders("spec.overriders", &s.Overriders)
	}
	for i := range s.OverrideRules {
		r := &s.OverrideRules[i]
		p := fmt.Sprintf("spec.overrideRules[%d]", i)
		v.affinity(p+".targetCluster", r.TargetCluster)
		v.overriders(p+".overriders", &r.Overriders)
	}
}

func (v *validator) operator(path string, op OverriderOperator, allowed ...OverriderOperator) {
	if !slices.Contains(allowed, op) {
		v.add(path, string(op), "must be one of %v", allowed)
	}
}

func (v *validator) pointer(path, p string) {
	if _, err := parsePointer(p); err != nil {
		v.add(path, p, "%v", err)
	}
}

var allOps = []OverriderOperator{OverriderOpAdd, OverriderOpRemove, OverriderOpReplace}

func (v *validator) overriders(path string, o *Overriders) {
	for i := range o.ImageOverrider {
		im := &o.ImageOverrider[i]
		p := fmt.Sprintf("%s.imageOverrider[%d]", path, i)
		switch im.Component {
		case ImageRegistry, ImageRepository, ImageTag:
		default:
			v.add(p+".component", string(im.Component), "must be Registry, Repository or Tag")
		}
		v.operator(p+".operator", im.Operator, allOps...)
		if im.Predicate != nil {
			v.pointer(p+".predicate.path", im.Predicate.Path)
		}
		if im.Operator != OverriderOpRemove && im.Value == "" {
			v.add(p+".value", im.Value, "is required for %s", im.Operator)
		}
	}
	for _, ca := range []struct {
		name string
		list []CommandArgsOverrider
	}{{"commandOverrider", o.CommandOverrider}, {"argsOverrider", o.ArgsOverrider}} {
		for i := range ca.list {
			c := &ca.list[i]
			p := fmt.Sprintf("%s.%s[%d]", path, ca.name, i)
			if c.ContainerName == "" {
				v.add(p+".containerName", c.ContainerName, "is required")
			}
			v.operator(p+".operator", c.Operator, OverriderOpAdd, OverriderOpRemove)
		}
	}
	for _, la := range []struct {
		name   string
		list   []LabelAnnotationOverrider
		labels bool
	}{{"labelsOverrider", o.LabelsOverrider, true}, {"annotationsOverrider", o.AnnotationsOverrider, false}} {
		for i := range la.list {
			l := &la.list[i]
			p := fmt.Sprintf("%s.%s[%d]", path, la.name, i)
			v.operator(p+".operator", l.Operator, allOps...)
			for _, k := range sortedKeys(l.Value) {
				if errs := validation.IsQualifiedName(k); len(errs) > 0 {
					v.add(fmt.Sprintf("%s.value[%s]", p, k), k, "%s", errs[0])
				}
				if la.labels {
					if errs := validation.IsValidLabelValue(l.Value[k]); len(errs) > 0 {
						v.add(fmt.Sprintf("%s.value[%s]", p, k), l.Value[k], "%s", errs[0])
					}
				}
			}
		}
	}
	for i := range o.FieldOverrider {
		f := &o.FieldOverrider[i]
		p := fmt.Sprintf("%s.fieldOverrider[%d]", path, i)
		v.pointer(p+".fieldPath", f.FieldPath)
		if (len(f.JSON) == 0) == (len(f.YAML) == 0) {
			v.add(p, f.FieldPath, "exactly one of json and yaml must be set")
		}
		for j := range f.JSON {
			v.pointer(fmt.Sprintf("%s.json[%d].subPath", p, j), f.JSON[j].SubPath)
			v.operator(fmt.Sprintf("%s.json[%d].operator", p, j), f.JSON[j].Operator, allOps...)
		}
		for j := range f.YAML {
			v.pointer(fmt.Sprintf("%s.yaml[%d].subPath", p, j), f.YAML[j].SubPath)
			v.operator(fmt.Sprintf("%s.yaml[%d].operator", p, j), f.YAML[j].Operator, allOps...)
		}
	}
	for i := range o.Plaintext {
		pt := &o.Plaintext[i]
		p := fmt.Sprintf("%s.plaintext[%d]", path, i)
		v.pointer(p+".path", pt.Path)
		v.operator(p+".operator", pt.Operator, allOps...)
	}
	for i := range o.ValuesOverrider {
		vo := &o.ValuesOverrider[i]
		p := fmt.Sprintf("%s.valuesOverrider[%d]", path, i)
		switch {
		case vo.Merge != nil && (vo.Path != "" || vo.Operator != ""):
			v.add(p, vo.Path, "merge cannot be combined with path/operator")
		case vo.Merge != nil:
			var m map[string]any
			if err := json.Unmarshal(vo.Merge.Raw, &m); err != nil || m == nil {
				v.add(p+".merge", string(vo.Merge.Raw), "must be a map")
			}
		default:
			v.pointer(p+".path", vo.Path)
			v.operator(p+".operator", vo.Operator, allOps...)
		}
	}
}

func (v *validator) valuesPathAnnotation(annotations map[string]string) {
	if _, _, err := valuesPathOf(annotations); err != nil {
		v.add("metadata.annotations["+ReplicasValuesPathAnnotation+"]", annotations[ReplicasValuesPathAnnotation], "%v", err)
	}
}
