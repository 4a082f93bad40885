package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kjson "sigs.k8s.io/json"

	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// IsPolicyKind reports whether apiVersion and kind name one of the four policy
// types, so a multi-document decoder can hand the document to Decode.
func IsPolicyKind(apiVersion, kind string) bool {
	if apiVersion != GroupVersion {
		return false
	}
	switch kind {
	case KindPropagationPolicy, KindClusterPropagationPolicy, KindOverridePolicy, KindClusterOverridePolicy:
		return true
	}
	return false
}

// Decode strictly decodes one YAML or JSON document holding a policy and
// returns a pointer to its typed value (*PropagationPolicy,
// *ClusterPropagationPolicy, *OverridePolicy or *ClusterOverridePolicy).
// Unknown fields, duplicate keys, a second document ("---") and anything
// after a JSON object are errors. Decode does not validate; call Validate
// or NewEngine. Errors wrap ErrDecode.
func Decode(doc []byte) (any, error) {
	docs := strictyaml.Split(doc)
	if len(docs) != 1 {
		if len(docs) == 0 {
			return nil, fmt.Errorf("%w: no document", ErrDecode)
		}
		return nil, fmt.Errorf("%w: %d documents; Decode takes one", ErrDecode, len(docs))
	}
	raw, problems, isJSON := strictyaml.CheckJSON(docs[0])
	if !isJSON {
		var err error
		if raw, err = strictyaml.ToJSON(docs[0]); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrDecode, err)
		}
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &head); err != nil && len(problems) == 0 {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
	}
	if len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = p.FieldError.Error()
		}
		return nil, fmt.Errorf("%w: %s %q: %s", ErrDecode, head.Kind, head.Metadata.Name, strings.Join(msgs, "; "))
	}
	if !IsPolicyKind(head.APIVersion, head.Kind) {
		return nil, fmt.Errorf("%w: apiVersion %q kind %q is not a %s policy", ErrDecode, head.APIVersion, head.Kind, GroupVersion)
	}
	var out any
	switch head.Kind {
	case KindPropagationPolicy:
		out = &PropagationPolicy{}
	case KindClusterPropagationPolicy:
		out = &ClusterPropagationPolicy{}
	case KindOverridePolicy:
		out = &OverridePolicy{}
	default:
		out = &ClusterOverridePolicy{}
	}
	strict, err := kjson.UnmarshalStrict(raw, out, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err == nil && len(strict) > 0 {
		err = errors.Join(strict...)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: %s", ErrDecode, head.Kind, head.Metadata.Name, strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return out, nil
}

// FromObjects separates the policies among rendered objects (a chart
// that ships its own PropagationPolicy and OverridePolicy templates) from
// the objects to place. Policies are decoded strictly; a namespaced policy without a namespace gets defaultNamespace
// (the release's target namespace), as kubectl or Helm would when applying.
// The returned objects keep their order. All decoding problems are returned
// joined, each wrapping ErrDecode.
func FromObjects(objs []*unstructured.Unstructured, defaultNamespace string) (Set, []*unstructured.Unstructured, error) {
	var set Set
	var rest []*unstructured.Unstructured
	var errs []error
	for _, o := range objs {
		if o == nil || !IsPolicyKind(o.GetAPIVersion(), o.GetKind()) {
			rest = append(rest, o)
			continue
		}
		raw, err := o.MarshalJSON()
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %v", ErrDecode, KeyOf(o), err))
			continue
		}
		p, err := Decode(raw)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		_ = set.Add(p, WithDefaultNamespace(defaultNamespace)) // Decode returns only policy types; nothing is enforced
	}
	return set, rest, errors.Join(errs...)
}
