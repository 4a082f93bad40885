package policy

import (
	"errors"
	"fmt"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
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
// Unknown fields are errors. Decode does not validate; call Validate or
// NewEngine. Errors wrap ErrDecode.
func Decode(doc []byte) (any, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDecode, err)
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
	raw, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %q: %v", ErrDecode, head.Kind, head.Metadata.Name, err)
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
