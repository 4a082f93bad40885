package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// WarningCode classifies a Warning.
type WarningCode string

// Warning codes.
const (
	// WarnPolicyMatchesNothing: a policy selects none of the objects.
	WarnPolicyMatchesNothing WarningCode = "PolicyMatchesNothing"
	// WarnPolicyNeverWins: a propagation policy matches objects but another
	// policy wins every one of them.
	WarnPolicyNeverWins WarningCode = "PolicyNeverWins"
	// WarnOverridePathAbsent: an overrider targets a path that an object kind
	// the policy selects does not have, so the override fails or does nothing.
	WarnOverridePathAbsent WarningCode = "OverridePathAbsent"
	// WarnDependencyMissing: a followed workload names a dependency that is
	// not among the objects.
	WarnDependencyMissing WarningCode = "DependencyMissing"
	// WarnImageOverrideInvalid: an image overrider would turn an object's
	// image into a reference that is not valid (for example by removing the
	// repository); helmfleet leaves that image unchanged.
	WarnImageOverrideInvalid WarningCode = "ImageOverrideInvalid"
)

// Warning is a likely mistake that is not an error.
type Warning struct {
	// Code classifies the warning.
	Code WarningCode
	// Policy concerned, if any.
	Policy Ref
	// Object concerned (an example for per-kind warnings), if any.
	Object ObjectKey
	// Path is the policy field path or object path concerned.
	Path string
	// Message is a full sentence.
	Message string
}

// String renders the message with its code.
func (w Warning) String() string { return string(w.Code) + ": " + w.Message }

func sortWarnings(ws []Warning) {
	slices.SortFunc(ws, func(a, b Warning) int {
		return cmp.Or(strings.Compare(string(a.Code), string(b.Code)), compareRef(a.Policy, b.Policy),
			compareKeys(a.Object, b.Object), strings.Compare(a.Path, b.Path))
	})
}

// warnings reports unused policies and override paths absent from a
// selected object kind.
func (e *Engine) warnings(p *Placement, matched, won []bool) []Warning {
	var out []Warning
	for _, pp := range e.props {
		switch {
		case !matched[pp.idx]:
			out = append(out, Warning{Code: WarnPolicyMatchesNothing, Policy: pp.ref, Path: "spec.resourceSelectors",
				Message: fmt.Sprintf("%s selects none of the %d objects", pp.ref, len(p.Objects))})
		case !won[pp.idx]:
			out = append(out, Warning{Code: WarnPolicyNeverWins, Policy: pp.ref, Path: "spec.resourceSelectors",
				Message: fmt.Sprintf("%s matches objects but another policy wins each of them", pp.ref)})
		}
	}
	type absentKey struct {
		p    *ovPolicy
		rule int
		path string
		kind string
	}
	seen := map[absentKey]bool{}
	used := map[*ovPolicy]bool{}
	for _, op := range p.Objects {
		for _, m := range op.overrides {
			used[m.p] = true
			for _, rule := range m.p.rules {
				for _, chk := range pathChecks(rule) {
					if chk.ok(op) {
						continue
					}
					k := absentKey{m.p, rule.index, chk.field, op.Object.Kind}
					if seen[k] {
						continue
					}
					seen[k] = true
					out = append(out, Warning{Code: cmp.Or(chk.code, WarnOverridePathAbsent), Policy: m.p.ref, Object: op.Object,
						Path:    rule.rulePath + "." + chk.field,
						Message: fmt.Sprintf("%s %s.%s: %s on kind %s (e.g. %s)", m.p.ref, rule.rulePath, chk.field, chk.what, op.Object.Kind, op.Object)})
				}
			}
		}
	}
	for _, ov := range e.overrides {
		if !used[ov] {
			out = append(out, Warning{Code: WarnPolicyMatchesNothing, Policy: ov.ref, Path: "spec.resourceSelectors",
				Message: fmt.Sprintf("%s selects none of the %d objects", ov.ref, len(p.Objects))})
		}
	}
	return out
}

type pathCheck struct {
	code  WarningCode // "" means WarnOverridePathAbsent
	field string      // overriders.<kind>[i]...
	what  string
	ok    func(op *ObjectPlacement) bool
}

// pathChecks lists, for one rule, the paths its overriders need.
func pathChecks(rule compiledRule) []pathCheck {
	o := &rule.rule.Overriders
	var out []pathCheck
	for i := range o.Plaintext {
		pt, earlier := o.Plaintext[i], o.Plaintext[:i]
		out = append(out, pathCheck{field: fmt.Sprintf("overriders.plaintext[%d].path", i),
			what: fmt.Sprintf("%s %s finds no such path", pt.Operator, pt.Path),
			ok: func(op *ObjectPlacement) bool {
				return pathPresent(op.obj.Object, pt.Path, pt.Operator) ||
					pathPresent(afterPlaintext(op.obj.Object, earlier), pt.Path, pt.Operator)
			}})
	}
	for i := range o.FieldOverrider {
		f := o.FieldOverrider[i]
		out = append(out, pathCheck{field: fmt.Sprintf("overriders.fieldOverrider[%d].fieldPath", i),
			what: fmt.Sprintf("fieldPath %s does not exist", f.FieldPath),
			ok:   func(op *ObjectPlacement) bool { return pathPresent(op.obj.Object, f.FieldPath, OverriderOpReplace) }})
	}
	for i := range o.ImageOverrider {
		im := o.ImageOverrider[i]
		out = append(out, pathCheck{code: WarnImageOverrideInvalid, field: fmt.Sprintf("overriders.imageOverrider[%d]", i),
			what: "it would write an invalid image reference, so the image is left unchanged",
			ok: func(op *ObjectPlacement) bool {
				for _, img := range overriddenImages(op.obj.Object, &im) {
					if rejectedImage(img, &im) != "" {
						return false
					}
				}
				return true
			}})
		if im.Predicate != nil {
			out = append(out, pathCheck{field: fmt.Sprintf("overriders.imageOverrider[%d].predicate.path", i),
				what: fmt.Sprintf("predicate path %s does not exist", im.Predicate.Path),
				ok: func(op *ObjectPlacement) bool {
					return pathPresent(op.obj.Object, im.Predicate.Path, OverriderOpReplace)
				}})
			continue
		}
		out = append(out, pathCheck{field: fmt.Sprintf("overriders.imageOverrider[%d]", i),
			what: "without a predicate it only changes Pods and workloads, so it does nothing",
			ok:   func(op *ObjectPlacement) bool { return containersPath(op.Object.Kind, false) != nil }})
	}
	for _, ca := range []struct {
		name string
		list []CommandArgsOverrider
	}{{"commandOverrider", o.CommandOverrider}, {"argsOverrider", o.ArgsOverrider}} {
		for i := range ca.list {
			c := ca.list[i]
			out = append(out, pathCheck{field: fmt.Sprintf("overriders.%s[%d].containerName", ca.name, i),
				what: fmt.Sprintf("no container named %q", c.ContainerName),
				ok: func(op *ObjectPlacement) bool {
					path := containersPath(op.Object.Kind, true)
					if path == nil {
						return false
					}
					for _, ct := range list(nested(op.obj.Object, path[:len(path)-1]...), path[len(path)-1]) {
						if ct["name"] == c.ContainerName {
							return true
						}
					}
					return false
				}})
		}
	}
	for i := range o.ValuesOverrider {
		vo := o.ValuesOverrider[i]
		if vo.Merge != nil {
			continue
		}
		out = append(out, pathCheck{field: fmt.Sprintf("overriders.valuesOverrider[%d].path", i),
			what: fmt.Sprintf("%s %s%s finds no such path", vo.Operator, ValuesPath, vo.Path),
			ok: func(op *ObjectPlacement) bool {
				vals := nested(op.obj.Object, "spec", "values")
				if vals == nil {
					vals = map[string]any{}
				}
				return pathPresent(vals, vo.Path, vo.Operator)
			}})
	}
	return out
}

// afterPlaintext returns doc as the rule's earlier plaintext operations
// leave it, since each operation sees the results of those before it; an
// operation that fails is skipped (it is reported on its own).
func afterPlaintext(doc map[string]any, ops []PlaintextOverrider) any {
	var cur any = doc
	for _, pt := range ops {
		if next, err := patchDoc(cur, pt.Operator, pt.Path, pt.Value); err == nil {
			cur = next
		}
	}
	return cur
}
