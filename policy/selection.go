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
	// RunnerUp is the best policy that lost, nil when only one matched.
	RunnerUp *Candidate
	// Matches is how many policies matched; Engine.Candidates lists them.
	Matches int
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
	return e.selectFrom(cands, nil)
}

// selectFrom finds the winner and the runner-up in one pass; sc, when not
// nil, keeps the reasons already written.
func (e *Engine) selectFrom(cands []scored, sc *scratch) (*propPolicy, *Selection, error) {
	if len(cands) == 0 {
		return nil, nil, nil
	}
	w, r := 0, -1
	for i := 1; i < len(cands); i++ {
		switch {
		case better(cands[i], cands[w]):
			w, r = i, w
		case r < 0 || better(cands[i], cands[r]):
			r = i
		}
	}
	win := cands[w]
	var runnerUp *scored
	var sel *Selection
	if r >= 0 {
		runnerUp = &cands[r]
		both := &struct { // one allocation for the two
			s Selection
			c Candidate
		}{c: Candidate{Policy: runnerUp.p.ref, Level: runnerUp.level, Priority: runnerUp.p.priority}}
		sel = &both.s
		sel.RunnerUp = &both.c
	} else {
		sel = &Selection{}
	}
	sel.Policy, sel.Level, sel.Priority, sel.Matches = win.p.ref, win.level, win.p.priority, len(cands)
	if sc == nil {
		sel.Reason = reason(win, runnerUp)
		return win.p, sel, nil
	}
	rk := reasonKey{win: win}
	if runnerUp != nil {
		rk.runnerUp = *runnerUp
	}
	s, ok := sc.reasons[rk]
	if !ok {
		s = reason(win, runnerUp)
		if sc.reasons == nil {
			sc.reasons = map[reasonKey]string{}
		}
		sc.reasons[rk] = s
	}
	sel.Reason = s
	return win.p, sel, nil
}

// Candidates lists every propagation policy that matches obj, in precedence
// order (the winner first).
func (e *Engine) Candidates(obj *unstructured.Unstructured) ([]Candidate, error) {
	cands, err := e.matchPropagation(obj)
	if err != nil {
		return nil, err
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
	out := make([]Candidate, len(cands))
	for i, c := range cands {
		out[i] = Candidate{Policy: c.p.ref, Level: c.level, Priority: c.p.priority}
	}
	return out, nil
}

// matchPropagation returns every matching propagation policy with its level;
// a binding label adds (or upgrades) the named policy at MatchBinding.
func (e *Engine) matchPropagation(obj *unstructured.Unstructured) ([]scored, error) {
	return e.matchProp(obj, KeyOf(obj), nil)
}

// scratch is working memory reused across the objects of one Place call:
// pos[i] is 1 + the position of policy i in the current result, so merging
// the levels of a policy's several selectors costs O(1).
type scratch struct {
	pos     []int32
	buf     []scored // matchProp's result, valid until its next call
	reasons map[reasonKey]string
}

// reasonKey is what reason depends on: the winner and the runner-up (zero
// when none).
type reasonKey struct{ win, runnerUp scored }

func (e *Engine) matchProp(obj *unstructured.Unstructured, key ObjectKey, sc *scratch) ([]scored, error) {
	var out []scored
	if sc != nil {
		out = sc.buf[:0]
	}
	put := func(p *propPolicy, lv MatchLevel) {
		if sc != nil {
			if j := sc.pos[p.idx]; j > 0 {
				out[j-1].level = max(out[j-1].level, lv)
				return
			}
			out = append(out, scored{p, lv})
			sc.pos[p.idx] = int32(len(out))
			return
		}
		for i := range out {
			if out[i].p == p {
				out[i].level = max(out[i].level, lv)
				return
			}
		}
		out = append(out, scored{p, lv})
	}
	lbls := objectLabels(obj)
	bound, err := e.boundPropagation(obj, key.Namespace, lbls)
	if err != nil {
		return nil, err
	}
	if bound != nil {
		put(bound, MatchBinding)
	}
	if k := e.propIndex[typeKey{key.APIVersion, key.Kind}]; k != nil {
		k.candidates(key.Namespace, key.Name, lbls, func(en entry) {
			if lv := en.sel.level(key.APIVersion, key.Kind, key.Namespace, key.Name, lbls); lv != MatchNone {
				put(e.props[en.policy], lv)
			}
		})
	}
	if sc != nil {
		for _, c := range out {
			sc.pos[c.p.idx] = 0
		}
		sc.buf = out
	}
	return out, nil
}

func (e *Engine) boundPropagation(obj *unstructured.Unstructured, ns string, lbls rawLabels) (*propPolicy, error) {
	if lbls.Has(LabelPropagationPolicy) {
		name := lbls.Get(LabelPropagationPolicy)
		ref := Ref{Kind: KindPropagationPolicy, Namespace: ns, Name: name}
		if p := e.propByRef[ref]; p != nil && ns != "" {
			return p, nil
		}
		return nil, &BindingError{Object: KeyOf(obj), Label: LabelPropagationPolicy, Policy: ref}
	}
	if lbls.Has(LabelClusterPropagationPolicy) {
		name := lbls.Get(LabelClusterPropagationPolicy)
		ref := Ref{Kind: KindClusterPropagationPolicy, Name: name}
		if p := e.propByRef[ref]; p != nil {
			return p, nil
		}
		return nil, &BindingError{Object: KeyOf(obj), Label: LabelClusterPropagationPolicy, Policy: ref}
	}
	return nil, nil
}

// reason explains why w beat the runner-up r (nil when w matched alone).
func reason(w scored, r *scored) string {
	if w.level == MatchBinding {
		label := LabelPropagationPolicy
		if !w.p.namespaced {
			label = LabelClusterPropagationPolicy
		}
		return fmt.Sprintf("the object names it with label %s", label)
	}
	if r == nil {
		return fmt.Sprintf("only matching policy (matched by %s)", w.level)
	}
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
