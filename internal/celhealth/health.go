package celhealth

import (
	"context"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Status is an object's health, with kstatus' names.
type Status string

// The statuses a health check gives.
const (
	// Current: the object is ready.
	Current Status = "Current"
	// InProgress: the object is getting there.
	InProgress Status = "InProgress"
	// Failed: the object will not get there without a change.
	Failed Status = "Failed"
)

// Result is the health of one object and why.
type Result struct {
	// Status is Current, InProgress or Failed.
	Status Status
	// Message names the expression that decided, or the generation the
	// object's controller has not observed yet.
	Message string
}

// Check is one health check as written: Flux's CustomHealthCheck.
type Check struct {
	// APIVersion of the objects; its group is matched.
	APIVersion string `json:"apiVersion,omitempty"`
	// Kind of the objects; empty for every kind of the group.
	Kind string `json:"kind,omitempty"`
	// Current is true when the object is ready; required.
	Current string `json:"current,omitempty"`
	// InProgress is true while the object progresses; optional.
	InProgress string `json:"inProgress,omitempty"`
	// Failed is true when the object failed; optional.
	Failed string `json:"failed,omitempty"`
}

// Evaluator judges objects with the expressions of one Check.
type Evaluator struct {
	inProgress, failed, current *expression
}

// NewEvaluator compiles check, written at path (such as
// "spec.healthCheckExprs[0]"); an error is an *InvalidError naming each
// bad field.
func NewEvaluator(path string, check Check, opts ...Option) (*Evaluator, error) {
	ev, problems := newEvaluator(path, check, newConfig(opts))
	if len(problems) > 0 {
		return nil, &InvalidError{Problems: problems}
	}
	return ev, nil
}

func newEvaluator(path string, check Check, c config) (*Evaluator, []*FieldError) {
	var problems []*FieldError
	if check.Current == "" {
		problems = append(problems, &FieldError{Field: path + ".current", Reason: "is required"})
	}
	env, err := newEnv()
	if err != nil {
		return nil, append(problems, &FieldError{Field: path, Reason: "CEL environment: " + err.Error()})
	}
	ev := &Evaluator{}
	for _, f := range []struct {
		name, src string
		dst       **expression
	}{{"inProgress", check.InProgress, &ev.inProgress}, {"failed", check.Failed, &ev.failed}, {"current", check.Current, &ev.current}} {
		if f.src == "" {
			continue
		}
		e, err := parse(env, path+"."+f.name, f.src, c)
		if err != nil {
			problems = append(problems, err.(*FieldError))
			continue
		}
		*f.dst = e
	}
	return ev, problems
}

// Status judges obj: InProgress while its controller has not observed
// its generation, else by the first of inProgress, failed and current
// that is true, else InProgress. An expression that cannot be evaluated
// over obj is an *EvalError.
func (e *Evaluator) Status(ctx context.Context, obj *unstructured.Unstructured) (Result, error) {
	content := obj.UnstructuredContent()
	// Only integer generations are compared; a CRD that types them
	// otherwise is left to its expressions.
	if observed, ok, err := unstructured.NestedInt64(content, "status", "observedGeneration"); err == nil && ok {
		if gen, ok, err := unstructured.NestedInt64(content, "metadata", "generation"); err == nil && ok && gen != observed {
			return Result{Status: InProgress, Message: fmt.Sprintf("generation %d not observed yet (status.observedGeneration is %d)", gen, observed)}, nil
		}
	}
	for _, s := range []struct {
		expr   *expression
		status Status
	}{{e.inProgress, InProgress}, {e.failed, Failed}, {e.current, Current}} {
		if s.expr == nil {
			continue
		}
		ok, err := s.expr.bool(ctx, content)
		if err != nil {
			return Result{}, err
		}
		if ok {
			return Result{Status: s.status, Message: s.expr.field + " is true"}, nil
		}
	}
	return Result{Status: InProgress, Message: e.current.field + " is not true yet"}, nil
}

// Set holds the health checks of one object (a Kustomization's or a
// HelmRelease's) by group and kind.
type Set struct {
	byGK map[schema.GroupKind]*Evaluator
}

// NewSet compiles checks, written at path (such as
// "spec.healthCheckExprs"); an error is an *InvalidError naming every
// bad field: an apiVersion missing or malformed, a current missing, an
// expression CEL refuses, a second check for a group and kind.
func NewSet(path string, checks []Check, opts ...Option) (*Set, error) {
	c := newConfig(opts)
	s := &Set{byGK: make(map[schema.GroupKind]*Evaluator, len(checks))}
	first := map[schema.GroupKind]int{}
	var problems []*FieldError
	for i, ch := range checks {
		at := fmt.Sprintf("%s[%d]", path, i)
		gv, err := schema.ParseGroupVersion(ch.APIVersion)
		switch {
		case ch.APIVersion == "":
			problems = append(problems, &FieldError{Field: at + ".apiVersion", Reason: "is required"})
		case err != nil:
			problems = append(problems, &FieldError{Field: at + ".apiVersion", Value: ch.APIVersion, Reason: "is not a group/version"})
		}
		ev, bad := newEvaluator(at, ch, c)
		problems = append(problems, bad...)
		if ch.APIVersion == "" || err != nil {
			continue
		}
		gk := schema.GroupKind{Group: gv.Group, Kind: ch.Kind}
		if j, dup := first[gk]; dup {
			problems = append(problems, &FieldError{Field: at, Value: describe(gk), Reason: fmt.Sprintf("checks the same group and kind as %s[%d]", path, j)})
			continue
		}
		first[gk] = i
		s.byGK[gk] = ev
	}
	if len(problems) > 0 {
		sort.SliceStable(problems, func(i, j int) bool { return problems[i].Field < problems[j].Field })
		return nil, &InvalidError{Problems: problems}
	}
	return s, nil
}

// describe names a group and kind as a user wrote them: "Kind.group",
// "*.group" for every kind of the group.
func describe(gk schema.GroupKind) string {
	kind := gk.Kind
	if kind == "" {
		kind = "*"
	}
	if gk.Group == "" {
		return kind
	}
	return kind + "." + gk.Group
}

// For returns the evaluator of objects of gk: the check of that group
// and kind, else the check of the group without a kind; nil when none
// applies (then kstatus judges).
func (s *Set) For(gk schema.GroupKind) *Evaluator {
	if s == nil {
		return nil
	}
	if ev, ok := s.byGK[gk]; ok {
		return ev
	}
	return s.byGK[schema.GroupKind{Group: gk.Group}]
}

// Status judges obj with the check that applies to it; ok is false when
// none does.
func (s *Set) Status(ctx context.Context, obj *unstructured.Unstructured) (res Result, ok bool, err error) {
	ev := s.For(obj.GroupVersionKind().GroupKind())
	if ev == nil {
		return Result{}, false, nil
	}
	res, err = ev.Status(ctx, obj)
	return res, true, err
}
