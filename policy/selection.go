package policy

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Candidate is one propagation policy that matches an object.
type Candidate struct {
	// Policy is the matching policy.
	Policy Ref
	// Level is its implicit priority for the object.
	Level MatchLevel
	// Priority is its explicit spec.priority.
	Priority int32
}

// Selection says which propagation policy governs an object and why.
type Selection struct {
	// Policy is the winner.
	Policy Ref
	// Level is how the winner matched.
	Level MatchLevel
	// Priority is the winner's explicit priority.
	Priority int32
	// Reason is a sentence saying why the winner won.
	Reason string
	// Candidates are every matching policy, winner first, in precedence order.
	Candidates []Candidate
}

// Select returns the propagation policy that governs obj, or nil when none
// matches. A binding label that names a missing policy is a *BindingError.
//
// Order of precedence: a binding label; then any namespaced policy over every
// cluster policy; then higher spec.priority; then higher match level (name >
// labelSelector > kind); then the smaller name.
func (e *Engine) Select(obj *unstructured.Unstructured) (*Selection, error) {
	p, sel, err := e.selectPolicy(obj)
	if err != nil || p == nil {
		return nil, err
	}
	return sel, nil
}

type scored struct {
	p     *propPolicy
	level MatchLevel
}

func better(a, b scored) bool {
	if (a.level == MatchBinding) != (b.level == MatchBinding) {
		return a.level == MatchBinding
	}
	if a.p.namespaced != b.p.namespaced {
		return a.p.namespaced
	}
	if a.p.priority != b.p.priority {
		return a.p.priority > b.p.priority
	}
	if a.level != b.level {
		return a.level > b.level
	}
	return a.p.ref.Name < b.p.ref.Name
}

func (e *Engine) selectPolicy(obj *unstructured.Unstructured) (*propPolicy, *Selection, error) {
	cands, err := e.matchPropagation(obj)
	if err != nil {
		return nil, nil, err
	}
	return e.selectFrom(cands)
}

// selectFrom orders the candidates and returns the winner.
func (e *Engine) selectFrom(cands []scored) (*propPolicy, *Selection, error) {
	if len(cands) == 0 {
		return nil, nil, nil
	}
	slices.SortFunc(cands, func(a, b scored) int {
		if better(a, b) {
			return -1
		}
		if better(b, a) {
			return 1
		}
		return 0
	})
	w := cands[0]
	sel := &Selection{Policy: w.p.ref, Level: w.level, Priority: w.p.priority}
	for _, c := range cands {
		sel.Candidates = append(sel.Candidates, Candidate{Policy: c.p.ref, Level: c.level, Priority: c.p.priority})
	}
	sel.Reason = reason(cands)
	return w.p, sel, nil
}

// matchPropagation returns every matching propagation policy with its level;
// a binding label adds (or upgrades) the named policy at MatchBinding.
func (e *Engine) matchPropagation(obj *unstructured.Unstructured) ([]scored, error) {
	var out []scored
	ns := obj.GetNamespace()
	lbls := obj.GetLabels()
	if bound, err := e.boundPropagation(obj, ns, lbls); err != nil {
		return nil, err
	} else if bound != nil {
		out = append(out, scored{bound, MatchBinding})
	}
	k := e.propIndex[typeKey{obj.GetAPIVersion(), obj.GetKind()}]
	if k == nil {
		return out, nil
	}
	av, kind, name := obj.GetAPIVersion(), obj.GetKind(), obj.GetName()
	k.candidates(ns, name, func(en entry) {
		lv := en.sel.level(av, kind, ns, name, lbls)
		if lv == MatchNone {
			return
		}
		p := e.props[en.policy]
		for i := range out {
			if out[i].p == p {
				out[i].level = max(out[i].level, lv)
				return
			}
		}
		out = append(out, scored{p, lv})
	})
	return out, nil
}

func (e *Engine) boundPropagation(obj *unstructured.Unstructured, ns string, lbls map[string]string) (*propPolicy, error) {
	if name, ok := lbls[LabelPropagationPolicy]; ok {
		ref := Ref{Kind: KindPropagationPolicy, Namespace: ns, Name: name}
		if p := e.propByRef[ref]; p != nil && ns != "" {
			return p, nil
		}
		return nil, &BindingError{Object: KeyOf(obj), Label: LabelPropagationPolicy, Policy: ref}
	}
	if name, ok := lbls[LabelClusterPropagationPolicy]; ok {
		ref := Ref{Kind: KindClusterPropagationPolicy, Name: name}
		if p := e.propByRef[ref]; p != nil {
			return p, nil
		}
		return nil, &BindingError{Object: KeyOf(obj), Label: LabelClusterPropagationPolicy, Policy: ref}
	}
	return nil, nil
}

// reason explains why cands[0] beat cands[1].
func reason(cands []scored) string {
	w := cands[0]
	if w.level == MatchBinding {
		label := LabelPropagationPolicy
		if !w.p.namespaced {
			label = LabelClusterPropagationPolicy
		}
		return fmt.Sprintf("the object names it with label %s", label)
	}
	if len(cands) == 1 {
		return fmt.Sprintf("only matching policy (matched by %s)", w.level)
	}
	r := cands[1]
	switch {
	case w.p.namespaced != r.p.namespaced:
		return fmt.Sprintf("a namespaced policy beats %s", r.p.ref)
	case w.p.priority != r.p.priority:
		return fmt.Sprintf("priority %d beats %d of %s", w.p.priority, r.p.priority, r.p.ref)
	case w.level != r.level:
		return fmt.Sprintf("match by %s beats match by %s of %s", w.level, r.level, r.p.ref)
	default:
		return fmt.Sprintf("name %q sorts before %q at equal priority and match", w.p.ref.Name, r.p.ref.Name)
	}
}
