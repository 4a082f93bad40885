package release

import (
	"encoding/json"
	"slices"
)

// SecretFieldsAnnotation, on a HelmRelease, lists the places in the
// object that hold Secret data, as a JSON array of JSON pointers (RFC
// 6901) into the HelmRelease, e.g. ["/spec/values/db/password",
// "/spec/chart/spec/version"]. It holds paths only, never values.
//
// A Kustomization's build sets it on the HelmReleases it produces when
// spec.postBuild.substituteFrom substituted a Secret's variables into
// them (package release/kustomize). The reconcile.Reconciler then treats the
// inline values at those places (pointers under /spec/values) as
// Secret-sourced, as if they came from a valuesFrom Secret: plans,
// diffs and every printed or encoded form of the values mask them, and
// Helm's error text for the release is withheld (a *WithheldError). A
// pointer elsewhere in the object (the chart version, a valuesFrom
// name) also withholds Helm's error text; those fields are identifiers
// and plans show them as they are.
//
// The annotation can only add marking: a pointer naming nothing marks
// nothing, and a value that is not a JSON array of strings, or a
// pointer that is not valid syntax, marks all of spec.values. Removing
// or changing it never unmarks a value read from a Secret reference.
const SecretFieldsAnnotation = "kustomize.helmfleet.io/secret-fields"

// valuesPointer is the JSON pointer of spec.values in a HelmRelease.
const valuesPointer = "/spec/values"

// MarkSecretFields adds ptrs (JSON pointers into rel) to rel's
// SecretFieldsAnnotation, keeping what it lists already; a value that
// does not read as a JSON array of strings is kept as all of
// spec.values. The list is sorted, without repeats.
func MarkSecretFields(rel *Release, ptrs ...string) {
	if rel == nil || len(ptrs) == 0 {
		return
	}
	all := append(slices.Clone(ptrs), MarkedSecretFields(rel)...)
	slices.Sort(all)
	all = slices.Compact(all)
	text, _ := json.Marshal(all) // strings always encode
	if rel.Annotations == nil {
		rel.Annotations = map[string]string{}
	}
	rel.Annotations[SecretFieldsAnnotation] = string(text)
}

// MarkedSecretFields returns the JSON pointers rel's SecretFieldsAnnotation
// lists: nil when rel has none, and ["/spec/values"] (all of spec.values)
// when its value does not read as a JSON array of strings.
func MarkedSecretFields(rel *Release) []string {
	text, ok := rel.GetAnnotations()[SecretFieldsAnnotation]
	if !ok {
		return nil
	}
	var ptrs []string
	if err := json.Unmarshal([]byte(text), &ptrs); err != nil {
		return []string{valuesPointer}
	}
	return ptrs
}

// KeepSecretFields adds to dst's SecretFieldsAnnotation what src's lists,
// so that a change made to a copy of a HelmRelease (an override policy)
// cannot unmark what the original marked.
func KeepSecretFields(dst, src *Release) {
	if dst == nil || src == nil {
		return
	}
	MarkSecretFields(dst, MarkedSecretFields(src)...)
}
