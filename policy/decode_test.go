package policy

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeKarmadaDocuments(t *testing.T) {
	raw, err := os.ReadFile("testdata/karmada-policies.yaml")
	require.NoError(t, err)
	set := policySet(t, string(raw))
	require.Len(t, set.Propagation, 1)
	require.Len(t, set.ClusterPropagation, 1)
	require.Len(t, set.Override, 1)
	require.Len(t, set.ClusterOverride, 1)

	pp := set.Propagation[0]
	assert.Equal(t, int32(10), *pp.Spec.Priority)
	assert.True(t, pp.Spec.PropagateDeps)
	assert.Equal(t, "cloud", pp.Spec.Placement.ClusterAffinities[1].AffinityName)
	assert.Equal(t, []string{"member9"}, pp.Spec.Placement.ClusterAffinities[1].ExcludeClusters)
	assert.Equal(t, DynamicWeightByAvailableReplicas, pp.Spec.Placement.ReplicaScheduling.WeightPreference.DynamicWeight)
	assert.NotNil(t, pp.Spec.Failover)

	op := set.Override[0]
	assert.Equal(t, "3", string(op.Spec.OverrideRules[0].Overriders.Plaintext[0].Value.Raw))
	assert.Equal(t, `{"replicaCount":2}`, string(op.Spec.OverrideRules[1].Overriders.ValuesOverrider[0].Merge.Raw))

	cop := set.ClusterOverride[0]
	require.Len(t, cop.Spec.rules(), 1, "the deprecated single-rule form becomes one rule")

	e, err := NewEngine(set)
	require.NoError(t, err)
	assert.Len(t, e.props, 2)
	assert.Len(t, e.overrides, 2)
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n  resourceSelectorz: []\n", `unknown field "spec.resourceSelectorz"`},
		{"unknown nested field", "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: o}\nspec:\n  overrideRules:\n    - overriders:\n        plaintext:\n          - {path: /a, operator: add, valeu: 1}\n", `unknown field "spec.overrideRules[0].overriders.plaintext[0].valeu"`},
		{"not a policy", "apiVersion: apps/v1\nkind: Deployment\n", `apiVersion "apps/v1" kind "Deployment" is not`},
		{"wrong version", "apiVersion: policy.karmada.io/v1beta1\nkind: PropagationPolicy\n", `is not a policy.karmada.io/v1alpha1 policy`},
		{"bad yaml", "a: [", "did not find expected"},
		{"bad type", "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\nspec:\n  priority: high\n", `PropagationPolicy "p"`},
		{"JSON with trailing data", `{"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "p"}} x`, `PropagationPolicy "p": invalid JSON: data after the object (value: x)`},
		{"JSON with a second object", `{"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "p"}}{"spec": {"priority": 1}}`, `PropagationPolicy "p": invalid JSON: a second JSON value after the object`},
		{"JSON with a second document", "{\"apiVersion\": \"policy.karmada.io/v1alpha1\", \"kind\": \"PropagationPolicy\", \"metadata\": {\"name\": \"p\"}}\n---\n{\"kind\": \"x\"}\n", "2 documents; Decode takes one"},
		{"YAML with a second document", "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: p}\n---\nspec: {}\n", "2 documents; Decode takes one"},
		{"JSON duplicate key", `{"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "p"}, "spec": {"priority": 1, "priority": 2}}`, `PropagationPolicy "p": spec.priority: invalid JSON: duplicate key`},
		{"JSON duplicate kind", `{"apiVersion": "policy.karmada.io/v1alpha1", "kind": "Deployment", "kind": "PropagationPolicy", "metadata": {"name": "p"}}`, `kind: invalid JSON: duplicate key`},
		{"empty", "# nothing\n", "no document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.doc))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrDecode))
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestIsPolicyKind(t *testing.T) {
	assert.True(t, IsPolicyKind(GroupVersion, KindClusterOverridePolicy))
	assert.False(t, IsPolicyKind(GroupVersion, "ResourceBinding"))
	assert.False(t, IsPolicyKind("v1", KindPropagationPolicy))
}

func FuzzDecode(f *testing.F) {
	raw, err := os.ReadFile("testdata/karmada-policies.yaml")
	require.NoError(f, err)
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		f.Add(doc)
	}
	f.Add([]byte("apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nspec: {overrideRules: [{overriders: {plaintext: [{path: '~2', operator: add}]}}]}"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := Decode(doc)
		if err != nil {
			require.ErrorIs(t, err, ErrDecode)
			return
		}
		// Whatever decodes must validate without panicking, and a valid
		// policy must build an engine.
		var s Set
		require.NoError(t, s.Add(p))
		verr := p.(interface{ Validate() error }).Validate()
		_, eerr := NewEngine(s)
		if verr == nil {
			require.NoError(t, eerr)
		} else {
			require.ErrorIs(t, eerr, ErrInvalid)
		}
	})
}

func FuzzParseImage(f *testing.F) {
	for _, s := range []string{"nginx", "nginx:1.25", "ghcr.io/stefanprodan/podinfo:6.5.0", "localhost:5000/a/b@sha256:0123456789abcdef0123456789abcdef", "a/b/c:d", ":", "x@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		im, err := ParseImage(s)
		if err != nil {
			return
		}
		again, err := ParseImage(im.String())
		require.NoError(t, err, "re-parse %q from %q", im.String(), s)
		require.Equal(t, im, again)
	})
}

func TestFromObjects(t *testing.T) {
	objs := objects(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {propagationpolicy.karmada.io/name: web}}
spec: {replicas: 2}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: all}
spec: {}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg, namespace: shop}
`)
	set, rest, err := FromObjects(objs, "shop")
	require.NoError(t, err)
	require.Len(t, rest, 2)
	assert.Equal(t, "Deployment", rest[0].GetKind())
	assert.Equal(t, "ConfigMap", rest[1].GetKind())
	require.Len(t, set.Propagation, 1)
	assert.Equal(t, "shop", set.Propagation[0].Namespace, "defaulted to the release namespace")
	require.Len(t, set.ClusterOverride, 1)
	e, err := NewEngine(set)
	require.NoError(t, err)
	sel, err := e.Select(rest[0])
	require.NoError(t, err)
	assert.Equal(t, MatchBinding, sel.Level, "the chart's own policy is bound by label")

	bad := objects(t, "apiVersion: policy.karmada.io/v1alpha1\nkind: OverridePolicy\nmetadata: {name: x}\nspec: {bogus: 1}\n")
	_, _, err = FromObjects(bad, "shop")
	assert.ErrorIs(t, err, ErrDecode)
	assert.ErrorContains(t, err, `unknown field "spec.bogus"`)
}
