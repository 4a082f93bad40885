package cli

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// secretMask is what build writes in place of a value that contains a
// value substituted from a Secret.
const secretMask = "(secret value)"

// secretVariables returns the values k's post-build substitution takes
// from Secrets on the member: every value of each Secret of
// spec.postBuild.substituteFrom, and the spec.postBuild.substitute
// entries kustomize.SecretSubstitutesAnnotation marks as a Secret's.
// Empty values are left out.
func secretVariables(ctx context.Context, c objectGetter, k *release.Kustomization) ([]string, error) {
	pb := k.Spec.PostBuild
	if pb == nil {
		return nil, nil
	}
	var out []string
	for _, ref := range pb.SubstituteFrom {
		if ref.Kind != "Secret" {
			continue
		}
		u, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespace: k.Namespace, Name: ref.Name})
		if errors.Is(err, release.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("Kustomization %s/%s: spec.postBuild.substituteFrom Secret %s: %w", k.Namespace, k.Name, ref.Name, err)
		}
		data, _, _ := unstructured.NestedStringMap(u.Object, "data")
		for _, v := range data {
			if b, err := base64.StdEncoding.DecodeString(v); err == nil && len(b) > 0 {
				out = append(out, string(b))
			}
		}
		str, _, _ := unstructured.NestedStringMap(u.Object, "stringData")
		for _, v := range str {
			if v != "" {
				out = append(out, v)
			}
		}
	}
	for name := range strings.SplitSeq(k.Annotations[kustomize.SecretSubstitutesAnnotation], ",") {
		if v := pb.Substitute[strings.TrimSpace(name)]; v != "" {
			out = append(out, v)
		}
	}
	return out, nil
}

// maskSecretValues replaces in u every string, and every map key, that
// contains one of secrets with secretMask. It masks more than what was
// substituted (a short secret value masks every string containing it):
// no Secret text is written.
func maskSecretValues(u *unstructured.Unstructured, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	u.Object = maskValue(u.Object, secrets).(map[string]any)
}

// maskValue is maskSecretValues over one value.
func maskValue(v any, secrets []string) any {
	switch t := v.(type) {
	case string:
		if containsAny(t, secrets) {
			return secretMask
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if containsAny(k, secrets) {
				k = secretMask
			}
			out[k] = maskValue(e, secrets)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = maskValue(e, secrets)
		}
		return out
	}
	return v
}

// containsAny reports whether s contains one of subs.
func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
