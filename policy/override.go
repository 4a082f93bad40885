package policy

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ovMatch is an override policy that applies to an object.
type ovMatch struct {
	p     *ovPolicy
	level MatchLevel
}

// Applied records one overrider that changed (or was applied to) an object
// on one cluster, in application order.
type Applied struct {
	// Policy is the override policy.
	Policy Ref
	// Level is how the policy matched the object.
	Level MatchLevel
	// Rule is the index in spec.overrideRules (0 for the deprecated form).
	Rule int
	// Overrider is the overrider's path in the rule, e.g.
	// "overriders.imageOverrider[0]".
	Overrider string
	// Targets are the JSON pointers in the object it wrote.
	Targets []string
}

// matchOverrides returns the override policies for obj in Karmada's order:
// cluster-scoped policies first, then namespaced ones in the object's
// namespace; within each, ascending match level and then name, so the most
// specific applies last. Binding labels add the named policy at MatchBinding.
func (e *Engine) matchOverrides(obj *unstructured.Unstructured) ([]ovMatch, error) {
	ns := obj.GetNamespace()
	var out []ovMatch
	put := func(p *ovPolicy, lv MatchLevel) {
		for i := range out {
			if out[i].p == p {
				out[i].level = max(out[i].level, lv)
				return
			}
		}
		out = append(out, ovMatch{p, lv})
	}
	lbls := objectLabels(obj)
	for _, b := range []struct{ label, kind, ns string }{
		{LabelClusterOverridePolicy, KindClusterOverridePolicy, ""},
		{LabelOverridePolicy, KindOverridePolicy, ns},
	} {
		if !lbls.Has(b.label) {
			continue
		}
		name := lbls.Get(b.label)
		ref := Ref{Kind: b.kind, Namespace: b.ns, Name: name}
		p := e.ovByRef[ref]
		if p == nil || (b.kind == KindOverridePolicy && ns == "") {
			return nil, &BindingError{Object: KeyOf(obj), Label: b.label, Policy: ref}
		}
		put(p, MatchBinding)
	}
	for _, p := range e.ovAll {
		if !p.namespaced || p.ref.Namespace == ns {
			put(p, MatchAll)
		}
	}
	if k := e.ovIndex[typeKey{obj.GetAPIVersion(), obj.GetKind()}]; k != nil {
		av, kind, name := obj.GetAPIVersion(), obj.GetKind(), obj.GetName()
		k.candidates(ns, name, lbls, func(en entry) {
			if lv := en.sel.level(av, kind, ns, name, lbls); lv != MatchNone {
				put(e.overrides[en.policy], lv)
			}
		})
	}
	slices.SortFunc(out, func(a, b ovMatch) int {
		if a.p.namespaced != b.p.namespaced {
			if a.p.namespaced {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.level, b.level), strings.Compare(a.p.ref.Name, b.p.ref.Name))
	})
	return out, nil
}

// Override returns a copy of obj as it must be on cluster, with every
// matching override rule applied in Karmada's order, and the list of what
// was applied. The first failing overrider fails this object on this cluster
// only, with an *OverrideError naming the policy, rule, cluster and path.
// Override does not change replicas; Materialize sets them first.
func (e *Engine) Override(obj *unstructured.Unstructured, cluster Cluster) (*unstructured.Unstructured, []Applied, error) {
	ovs, err := e.matchOverrides(obj)
	if err != nil {
		return nil, nil, err
	}
	return applyOverrides(obj.DeepCopy(), ovs, &cluster)
}

func applyOverrides(obj *unstructured.Unstructured, ovs []ovMatch, cluster *Cluster) (*unstructured.Unstructured, []Applied, error) {
	var applied []Applied
	key := KeyOf(obj)
	for _, m := range ovs {
		for ri := range m.p.rules {
			rule := &m.p.rules[ri]
			if !rule.target.matches(cluster) {
				continue
			}
			steps := overriderSteps(&rule.rule.Overriders)
			for _, s := range steps {
				targets, err := s.apply(obj)
				if err != nil {
					return nil, applied, &OverrideError{Object: key, Cluster: cluster.Name, Policy: m.p.ref, Rule: rule.index,
						Path: s.path, Target: s.target, Err: err}
				}
				applied = append(applied, Applied{Policy: m.p.ref, Level: m.level, Rule: rule.index, Overrider: s.path, Targets: targets})
			}
		}
	}
	return obj, applied, nil
}

// step is one overrider entry ready to apply.
type step struct {
	path   string // overriders.<kind>[i]
	target string // the pointer it addresses, for errors
	apply  func(obj *unstructured.Unstructured) ([]string, error)
}

// overriderSteps lists a rule's overriders in Karmada's fixed order (image,
// command, args, labels, annotations, field, plaintext) and then helmfleet's
// values overrider.
func overriderSteps(o *Overriders) []step {
	var out []step
	for i := range o.ImageOverrider {
		im := &o.ImageOverrider[i]
		t := ""
		if im.Predicate != nil {
			t = im.Predicate.Path
		}
		out = append(out, step{path: fmt.Sprintf("overriders.imageOverrider[%d]", i), target: t, apply: func(obj *unstructured.Unstructured) ([]string, error) {
			return applyImage(obj, im)
		}})
	}
	for i := range o.CommandOverrider {
		c := &o.CommandOverrider[i]
		out = append(out, step{path: fmt.Sprintf("overriders.commandOverrider[%d]", i), target: c.ContainerName, apply: func(obj *unstructured.Unstructured) ([]string, error) {
			return applyCommandArgs(obj, "command", c), nil
		}})
	}
	for i := range o.ArgsOverrider {
		c := &o.ArgsOverrider[i]
		out = append(out, step{path: fmt.Sprintf("overriders.argsOverrider[%d]", i), target: c.ContainerName, apply: func(obj *unstructured.Unstructured) ([]string, error) {
			return applyCommandArgs(obj, "args", c), nil
		}})
	}
	for i := range o.LabelsOverrider {
		l := &o.LabelsOverrider[i]
		out = append(out, step{path: fmt.Sprintf("overriders.labelsOverrider[%d]", i), target: "/metadata/labels", apply: func(obj *unstructured.Unstructured) ([]string, error) {
			return applyLabelAnnotation(obj, "labels", l), nil
		}})
	}
	for i := range o.AnnotationsOverrider {
		l := &o.AnnotationsOverrider[i]
		out = append(out, step{path: fmt.Sprintf("overriders.annotationsOverrider[%d]", i), target: "/metadata/annotations", apply: func(obj *unstructured.Unstructured) ([]string, error) {
			return applyLabelAnnotation(obj, "annotations", l), nil
		}})
	}
	for i := range o.FieldOverrider {
		f := &o.FieldOverrider[i]
		out = append(out, step{path: fmt.Sprintf("overriders.fieldOverrider[%d]", i), target: f.FieldPath, apply: func(obj *unstructured.Unstructured) ([]string, error) {
			return applyField(obj, f)
		}})
	}
	for i := range o.Plaintext {
		pt := &o.Plaintext[i]
		out = append(out, step{path: fmt.Sprintf("overriders.plaintext[%d]", i), target: pt.Path, apply: func(obj *unstructured.Unstructured) ([]string, error) {
			doc, err := patchDoc(obj.Object, pt.Operator, pt.Path, pt.Value)
			if err != nil {
				return nil, err
			}
			obj.Object = doc.(map[string]any)
			return []string{pt.Path}, nil
		}})
	}
	for i := range o.ValuesOverrider {
		vo := &o.ValuesOverrider[i]
		t := ValuesPath + vo.Path
		out = append(out, step{path: fmt.Sprintf("overriders.valuesOverrider[%d]", i), target: t, apply: func(obj *unstructured.Unstructured) ([]string, error) {
			vals, _, err := unstructured.NestedMap(obj.Object, "spec", "values")
			if err != nil {
				return nil, fmt.Errorf("%s is not a map: %w", ValuesPath, err)
			}
			vals, err = applyValues(vals, vo)
			if err != nil {
				return nil, err
			}
			if err := unstructured.SetNestedMap(obj.Object, vals, "spec", "values"); err != nil {
				return nil, err
			}
			return []string{t}, nil
		}})
	}
	return out
}

// ApplyValues applies values overriders to Helm values and returns the new
// values; the input map is not changed. The release package uses it for a
// typed Release; Override applies the same overriders to /spec/values of an
// object.
func ApplyValues(values map[string]any, overriders []ValuesOverrider) (map[string]any, error) {
	cur := values
	for i := range overriders {
		next, err := applyValues(cur, &overriders[i])
		if err != nil {
			return nil, fmt.Errorf("valuesOverrider[%d]: %w", i, err)
		}
		cur = next
	}
	if cur == nil {
		return map[string]any{}, nil
	}
	return cur, nil
}

func applyValues(values map[string]any, vo *ValuesOverrider) (map[string]any, error) {
	if values == nil {
		values = map[string]any{}
	}
	var doc any
	if vo.Merge != nil {
		raw, err := json.Marshal(values)
		if err != nil {
			return nil, err
		}
		merged, err := jsonpatch.MergePatch(raw, vo.Merge.Raw)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if doc, err = decodeJSON(merged); err != nil {
			return nil, err
		}
	} else {
		var err error
		if doc, err = patchDoc(values, vo.Operator, vo.Path, vo.Value); err != nil {
			return nil, err
		}
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("values became %T, not a map", doc)
	}
	return m, nil
}

// patchDoc applies one RFC 6902 operation with evanphx/json-patch and returns
// the new document.
func patchDoc(doc any, op OverriderOperator, path string, value JSON) (any, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	out, err := patchBytes(raw, op, path, value)
	if err != nil {
		return nil, err
	}
	return decodeJSON(out)
}

func patchBytes(raw []byte, op OverriderOperator, path string, value JSON) ([]byte, error) {
	type operation struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value,omitempty"`
	}
	if op == OverriderOpReplace {
		// RFC 6902: the target of replace must exist. evanphx/json-patch v4
		// adds a missing object key instead, so check first.
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, err
		}
		if !pathPresent(doc, path, op) {
			return nil, fmt.Errorf("replace operation does not apply: no value at %s", path)
		}
	}
	o := operation{Op: string(op), Path: path}
	if op != OverriderOpRemove {
		o.Value = json.RawMessage(value.Raw)
		if len(o.Value) == 0 {
			o.Value = json.RawMessage("null")
		}
	}
	pb, err := json.Marshal([]operation{o})
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch(pb)
	if err != nil {
		return nil, err
	}
	return patch.Apply(raw)
}

func decodeJSON(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return fromJSON(v), nil
}

// fromJSON turns float64 numbers that hold integers into int64, as
// unstructured objects decoded from YAML hold them.
func fromJSON(v any) any {
	switch t := v.(type) {
	case float64:
		if t == float64(int64(t)) {
			return int64(t)
		}
		return t
	case map[string]any:
		for k, e := range t {
			t[k] = fromJSON(e)
		}
	case []any:
		for i, e := range t {
			t[i] = fromJSON(e)
		}
	}
	return v
}

// containersPath is where the image, command and args overriders look for
// containers: a Pod's own, the pod template of a ReplicaSet, Deployment,
// DaemonSet, StatefulSet or Job, and (command and args only, withCronJob)
// the pod template in a CronJob's jobTemplate.
func containersPath(kind string, withCronJob bool) []string {
	switch kind {
	case "Pod":
		return []string{"spec", "containers"}
	case "ReplicaSet", "Deployment", "DaemonSet", "StatefulSet", "Job":
		return []string{"spec", "template", "spec", "containers"}
	case "CronJob":
		if withCronJob {
			return []string{"spec", "jobTemplate", "spec", "template", "spec", "containers"}
		}
	}
	return nil
}

func applyImage(obj *unstructured.Unstructured, im *ImageOverrider) ([]string, error) {
	if im.Predicate != nil {
		tokens, err := parsePointer(im.Predicate.Path)
		if err != nil {
			return nil, err
		}
		v, ok := lookup(obj.Object, tokens)
		if !ok {
			return nil, fmt.Errorf("no image at %s", im.Predicate.Path)
		}
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%s is %T, not a string", im.Predicate.Path, v)
		}
		img, err := overrideImage(s, im)
		if err != nil {
			return nil, err
		}
		if err := setAt(obj.Object, tokens, img); err != nil {
			return nil, err
		}
		return []string{im.Predicate.Path}, nil
	}
	path := containersPath(obj.GetKind(), false)
	if path == nil {
		return nil, nil
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, path...)
	var targets []string
	for i, c := range containers {
		cm, _ := c.(map[string]any)
		s, ok := cm["image"].(string)
		if !ok {
			continue
		}
		img, err := overrideImage(s, im)
		if err != nil {
			return nil, err
		}
		cm["image"] = img
		targets = append(targets, fmt.Sprintf("/%s/%d/image", strings.Join(path, "/"), i))
	}
	if len(targets) > 0 {
		if err := unstructured.SetNestedSlice(obj.Object, containers, path...); err != nil {
			return nil, err
		}
	}
	return targets, nil
}

// overriddenImages lists the images an image overrider would change in an
// object: the one at its predicate path, or every container image.
func overriddenImages(obj map[string]any, im *ImageOverrider) []string {
	var out []string
	if im.Predicate != nil {
		if tokens, err := parsePointer(im.Predicate.Path); err == nil {
			if v, ok := lookup(obj, tokens); ok {
				if s, ok := v.(string); ok {
					out = append(out, s)
				}
			}
		}
		return out
	}
	path := containersPath(str(obj, "kind"), false)
	if path == nil {
		return nil
	}
	for _, c := range list(nested(obj, path[:len(path)-1]...), path[len(path)-1]) {
		if s, ok := c["image"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func setAt(doc map[string]any, tokens []string, v any) error {
	parent, ok := lookup(doc, tokens[:len(tokens)-1])
	if !ok {
		return fmt.Errorf("no parent for %q", "/"+strings.Join(tokens, "/"))
	}
	last := tokens[len(tokens)-1]
	switch p := parent.(type) {
	case map[string]any:
		p[last] = v
	case []any:
		var i int
		if _, err := fmt.Sscanf(last, "%d", &i); err != nil || i < 0 || i >= len(p) {
			return fmt.Errorf("bad index %q", last)
		}
		p[i] = v
	default:
		return fmt.Errorf("cannot set inside %T", parent)
	}
	return nil
}

func applyCommandArgs(obj *unstructured.Unstructured, field string, c *CommandArgsOverrider) []string {
	path := containersPath(obj.GetKind(), true)
	if path == nil {
		return nil
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, path...)
	var targets []string
	for i, raw := range containers {
		cm, _ := raw.(map[string]any)
		if cm == nil || cm["name"] != c.ContainerName {
			continue
		}
		var cur []any
		if l, ok := cm[field].([]any); ok {
			cur = l
		}
		var next []any
		switch c.Operator {
		case OverriderOpAdd:
			next = make([]any, 0, len(cur)+len(c.Value))
			next = append(next, cur...)
			for _, v := range c.Value {
				next = append(next, v)
			}
		case OverriderOpRemove:
			next = make([]any, 0, len(cur))
			for _, v := range cur {
				if s, ok := v.(string); ok && slices.Contains(c.Value, s) {
					continue
				}
				next = append(next, v)
			}
		default:
			continue
		}
		cm[field] = next
		targets = append(targets, fmt.Sprintf("/%s/%d/%s", strings.Join(path, "/"), i, field))
	}
	if len(targets) > 0 {
		_ = unstructured.SetNestedSlice(obj.Object, containers, path...)
	}
	return targets
}

// applyLabelAnnotation follows Karmada: add sets keys (creating the map),
// remove and replace touch only keys that exist.
func applyLabelAnnotation(obj *unstructured.Unstructured, field string, l *LabelAnnotationOverrider) []string {
	m, _, _ := unstructured.NestedStringMap(obj.Object, "metadata", field)
	if m == nil {
		m = map[string]string{}
	}
	var targets []string
	for _, k := range sortedKeys(l.Value) {
		_, exists := m[k]
		switch l.Operator {
		case OverriderOpAdd:
			m[k] = l.Value[k]
		case OverriderOpReplace:
			if !exists {
				continue
			}
			m[k] = l.Value[k]
		case OverriderOpRemove:
			if !exists {
				continue
			}
			delete(m, k)
		}
		targets = append(targets, "/metadata/"+field+"/"+escapeToken(k))
	}
	if len(targets) == 0 {
		return nil
	}
	if len(m) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", field)
	} else {
		_ = unstructured.SetNestedStringMap(obj.Object, m, "metadata", field)
	}
	return targets
}

// applyField patches a JSON or YAML document held in a string field and
// writes it back as a string.
func applyField(obj *unstructured.Unstructured, f *FieldOverrider) ([]string, error) {
	tokens, err := parsePointer(f.FieldPath)
	if err != nil {
		return nil, err
	}
	v, ok := lookup(obj.Object, tokens)
	if !ok {
		return nil, fmt.Errorf("no field at %s", f.FieldPath)
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s is %T, not a string", f.FieldPath, v)
	}
	var raw []byte
	if len(f.JSON) > 0 {
		raw = []byte(s)
		if !json.Valid(raw) {
			return nil, fmt.Errorf("%s does not hold JSON", f.FieldPath)
		}
	} else {
		if raw, err = yaml.YAMLToJSON([]byte(s)); err != nil {
			return nil, fmt.Errorf("%s does not hold YAML: %w", f.FieldPath, err)
		}
	}
	ops := make([]JSONPatchOperation, 0, len(f.JSON)+len(f.YAML))
	ops = append(ops, f.JSON...)
	for _, y := range f.YAML {
		ops = append(ops, JSONPatchOperation(y))
	}
	for j, op := range ops {
		if raw, err = patchBytes(raw, op.Operator, op.SubPath, op.Value); err != nil {
			kind := "json"
			if len(f.JSON) == 0 {
				kind = "yaml"
			}
			return nil, fmt.Errorf("%s[%d] at subPath %q: %w", kind, j, op.SubPath, err)
		}
	}
	out := string(raw)
	if len(f.JSON) == 0 {
		y, err := yaml.JSONToYAML(raw)
		if err != nil {
			return nil, err
		}
		out = string(y)
	}
	if err := setAt(obj.Object, tokens, out); err != nil {
		return nil, err
	}
	return []string{f.FieldPath}, nil
}
