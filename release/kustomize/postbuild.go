package kustomize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

// SubstituteKey is the label or annotation that, set to "disabled" on an
// object, leaves the object out of post-build substitution, as in Flux.
const SubstituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// Variables are the post-build variables of one Kustomization, with the
// values that came from Secrets, for masking.
type Variables struct {
	// Values by name.
	Values map[string]string
	// Secret lists the values read from Secrets.
	Secret []string

	secretVars map[string]bool // the variables whose value is a Secret's
}

// VariablesError says why a Kustomization's variables could not be
// read: a substituteFrom object that is absent (and not optional) or
// unreadable, or a variable name Flux refuses.
type VariablesError struct {
	// Kustomization is namespace/name.
	Kustomization string
	// Source is the substituteFrom object, Kind/name, or
	// "spec.postBuild.substitute".
	Source string
	// Variable is the name at fault, if one is.
	Variable string
	// Err says what is wrong.
	Err error
}

func (e *VariablesError) Error() string {
	msg := fmt.Sprintf("Kustomization %s: postBuild: %s", e.Kustomization, e.Source)
	if e.Variable != "" {
		msg += fmt.Sprintf(": variable %q", e.Variable)
	}
	return msg + ": " + e.Err.Error()
}

func (e *VariablesError) Unwrap() error { return e.Err }

// LoadVariables reads the variables of k's postBuild as Flux does: the
// data of each substituteFrom ConfigMap and Secret in order, a later one
// overriding an earlier one, then spec.postBuild.substitute over them
// all; newlines are removed from every value. An optional object that is
// absent counts as empty; any other read error, or a name that is not a
// variable name (release.VariableNameRe), is a *VariablesError. A nil
// reader is an error only when substituteFrom names something. The
// variables of spec.postBuild.substitute that SecretSubstitutesAnnotation
// lists count as a Secret's, as those of substituteFrom Secrets do.
func LoadVariables(ctx context.Context, reader values.Reader, k *release.Kustomization) (*Variables, error) {
	vars := &Variables{Values: map[string]string{}, secretVars: map[string]bool{}}
	pb := k.Spec.PostBuild
	if pb == nil {
		return vars, nil
	}
	name := k.Namespace + "/" + k.Name
	for _, ref := range pb.SubstituteFrom {
		src := ref.Kind + "/" + ref.Name
		if reader == nil {
			return nil, &VariablesError{Kustomization: name, Source: src, Err: errors.New("no reader of ConfigMaps and Secrets is configured")}
		}
		data, err := reader.Read(ctx, values.Kind(ref.Kind), k.Namespace, ref.Name)
		if err != nil {
			if ref.Optional && (errors.Is(err, values.ErrNotFound) || errors.Is(err, release.ErrNotFound)) {
				continue
			}
			return nil, &VariablesError{Kustomization: name, Source: src, Err: err}
		}
		for _, key := range slices.Sorted(maps.Keys(data)) {
			if !release.VariableNameRe.MatchString(key) {
				return nil, &VariablesError{Kustomization: name, Source: src, Variable: key, Err: fmt.Errorf("invalid variable name: must match %s", release.VariableNameRe)}
			}
			v := strings.ReplaceAll(string(data[key]), "\n", "")
			vars.Values[key] = v
			delete(vars.secretVars, key)
			if ref.Kind == string(values.KindSecret) {
				vars.secretVars[key] = true
				if v != "" {
					vars.Secret = append(vars.Secret, v)
				}
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(pb.Substitute)) {
		if !release.VariableNameRe.MatchString(key) {
			return nil, &VariablesError{Kustomization: name, Source: "spec.postBuild.substitute", Variable: key, Err: fmt.Errorf("invalid variable name: must match %s", release.VariableNameRe)}
		}
		vars.Values[key] = strings.ReplaceAll(pb.Substitute[key], "\n", "")
		delete(vars.secretVars, key)
	}
	for name := range strings.SplitSeq(k.Annotations[SecretSubstitutesAnnotation], ",") {
		if v, ok := pb.Substitute[name]; ok {
			vars.secretVars[name] = true
			if v = strings.ReplaceAll(v, "\n", ""); v != "" {
				vars.Secret = append(vars.Secret, v)
			}
		}
	}
	return vars, nil
}

// SubstituteProblem is one object whose substitution failed.
type SubstituteProblem struct {
	// File the object came from, if kustomize knows it.
	File string
	// Kind, Namespace and Name of the object.
	Kind, Namespace, Name string
	// Variable is the unset variable, if that is the problem.
	Variable string
	// Err says what is wrong.
	Err error
}

// Object returns "Kind namespace/name".
func (p SubstituteProblem) Object() string {
	if p.Namespace == "" {
		return p.Kind + " " + p.Name
	}
	return p.Kind + " " + p.Namespace + "/" + p.Name
}

func (p SubstituteProblem) String() string {
	if _, ok := errors.AsType[*release.WithheldError](p.Err); ok {
		return p.Err.Error() // it names the file and the object
	}
	where := p.Object()
	if p.File != "" {
		where = p.File + ": " + where
	}
	return where + ": " + p.Err.Error()
}

// SubstituteError reports every object of a Kustomization's build whose
// post-build substitution failed: an unset variable without a default
// (an *UnsetError), or an expression that does not parse.
type SubstituteError struct {
	// Kustomization is namespace/name.
	Kustomization string
	// Problems, in output order.
	Problems []SubstituteProblem
}

func (e *SubstituteError) Error() string {
	if len(e.Problems) == 1 {
		return fmt.Sprintf("Kustomization %s: postBuild substitution: %s", e.Kustomization, e.Problems[0])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Kustomization %s: postBuild substitution: %d problems:", e.Kustomization, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns the problems' errors, for errors.Is and errors.As.
func (e *SubstituteError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p.Err
	}
	return out
}

// substituteAll is the post hook of a Kustomization's build: it
// substitutes vars in every object but those labelled or annotated
// SubstituteKey: disabled, as Flux does (the object's YAML text, then
// read back). With no variables, it substitutes only when always is set
// (postBuild.substituteStrategy Always). strict makes an unset variable
// without a default an error, as Flux's StrictPostBuildSubstitutions
// (the default since kustomize-controller v1.9); otherwise it is empty.
//
// An object that uses a Secret's variable is substituted twice more,
// with placeholders for those variables, and whatever differs is marked
// in marks (secretLeaves); an error about such an object once the
// values are in (the text no longer reads as YAML or as an object) is
// withheld.
func substituteAll(k *release.Kustomization, vars *Variables, always, strict bool, marks *secretMarks) func(resmap.ResMap, []string) error {
	return func(m resmap.ResMap, files []string) error {
		if len(vars.Values) == 0 && !always {
			return nil
		}
		used := false
		lookup := func(name string) (string, bool) {
			used = used || vars.secretVars[name]
			v, ok := vars.Values[name]
			return v, ok || !strict
		}
		serr := &SubstituteError{Kustomization: k.Namespace + "/" + k.Name}
		for i, r := range m.Resources() {
			if r.GetLabels()[SubstituteKey] == "disabled" || r.GetAnnotations()[SubstituteKey] == "disabled" {
				continue
			}
			p := SubstituteProblem{Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName()}
			if files != nil {
				p.File = files[i]
			}
			fail := func(err error) {
				p.Err = err
				if ue, ok := errors.AsType[*UnsetError](err); ok {
					p.Variable = ue.Variable
				}
				serr.Problems = append(serr.Problems, p)
			}
			// withhold replaces an error about the substituted text
			// when that text holds a Secret's value.
			withhold := func(err error) error {
				if !used {
					return err
				}
				origin := p.Object()
				if p.File != "" {
					origin = p.File + ", " + origin
				}
				return withheld(k, err, "substitute", origin)
			}
			y, err := r.AsYAML()
			if err != nil {
				fail(err)
				continue
			}
			used = false
			out, err := substitute(string(y), lookup)
			if err != nil {
				fail(err) // an unset variable or a syntax error: no value in it
				continue
			}
			j, err := yaml.YAMLToJSON([]byte(out))
			if err != nil {
				fail(withhold(fmt.Errorf("the substituted object is no YAML: %w", err)))
				continue
			}
			if err := r.UnmarshalJSON(j); err != nil {
				fail(withhold(fmt.Errorf("the substituted object is no object: %w", err)))
				continue
			}
			if used && marks != nil {
				var real any
				if err := json.Unmarshal(j, &real); err != nil {
					fail(withhold(fmt.Errorf("the substituted object is no object: %w", err)))
					continue
				}
				a, b := placeholders(vars.secretVars, lookup)
				n := secretLeaves(real, treeOf(string(y), a), treeOf(string(y), b))
				if n != nil {
					key := objectKey(r.GetGvk().Group, r.GetKind(), r.GetNamespace(), r.GetName())
					marks.objects[key] = marks.objects[key].merge(n)
				}
			}
		}
		if len(serr.Problems) > 0 {
			return serr
		}
		return nil
	}
}
