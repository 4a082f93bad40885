package release

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/policy"
)

// nsStream holds one object of every namespaced kind Decode reads without
// a namespace, one written in "other", and the cluster-scoped kinds.
const nsStream = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web}
spec:
  interval: 5m
  chart: {spec: {chart: podinfo, sourceRef: {kind: HelmRepository, name: podinfo}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo}
spec: {url: "https://stefanprodan.github.io/podinfo", interval: 5m}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web}
spec:
  resourceSelectors: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: web}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: web}
spec:
  overrideRules: [{overriders: {labelsOverrider: [{operator: add, value: {tier: web}}]}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everywhere}
spec:
  resourceSelectors: [{apiVersion: v1, kind: Namespace}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-values}
data: {values.yaml: "replicaCount: 2"}
---
apiVersion: v1
kind: Namespace
metadata: {name: apps}
`

// namespaces returns "Kind name=namespace" for every object.
func namespaces(o *Objects) []string {
	var out []string
	add := func(kind, name, ns string) { out = append(out, fmt.Sprintf("%s %s=%s", kind, name, ns)) }
	for _, r := range o.Releases {
		add("HelmRelease", r.Name, r.Namespace)
	}
	for _, r := range o.HelmRepositories {
		add("HelmRepository", r.Name, r.Namespace)
	}
	for _, p := range o.Policies.Propagation {
		add("PropagationPolicy", p.Name, p.Namespace)
	}
	for _, p := range o.Policies.Override {
		add("OverridePolicy", p.Name, p.Namespace)
	}
	for _, p := range o.Policies.ClusterPropagation {
		add("ClusterPropagationPolicy", p.Name, p.Namespace)
	}
	for _, u := range o.Plain {
		add(u.GetKind(), u.GetName(), u.GetNamespace())
	}
	return out
}

// TestDefaultNamespaceAsKubectl: every namespaced kind without a namespace
// gets the default namespace, every cluster-scoped kind none; Load without
// the option uses "default" for all of them alike, so a PropagationPolicy
// beside a HelmRelease is not refused.
func TestDefaultNamespaceAsKubectl(t *testing.T) {
	want := func(ns string) []string {
		return []string{"HelmRelease web=" + ns, "HelmRepository podinfo=" + ns, "PropagationPolicy web=" + ns, "OverridePolicy web=" + ns,
			"ClusterPropagationPolicy everywhere=", "ConfigMap web-values=" + ns, "Namespace apps="}
	}
	t.Run("Decode with the option", func(t *testing.T) {
		objs, err := Decode(strings.NewReader(nsStream), WithDefaultNamespace("shop"))
		require.NoError(t, err)
		assert.Equal(t, want("shop"), namespaces(objs))
	})
	t.Run("Decode without it leaves them as written", func(t *testing.T) {
		objs, err := Decode(strings.NewReader(nsStream))
		require.NoError(t, err)
		assert.Equal(t, want(""), namespaces(objs))
	})
	t.Run("Load with the option", func(t *testing.T) {
		objs, err := Load(strings.NewReader(nsStream), WithDefaultNamespace("shop"))
		require.NoError(t, err)
		assert.Equal(t, want("shop"), namespaces(objs))
		assert.Equal(t, "shop", objs.Releases[0].Spec.TargetNamespace)
	})
	t.Run("Load without it uses default for every kind", func(t *testing.T) {
		objs, err := Load(strings.NewReader(nsStream))
		require.NoError(t, err)
		assert.Equal(t, want("default"), namespaces(objs))
	})
	t.Run("a written namespace is kept", func(t *testing.T) {
		objs, err := Load(strings.NewReader(strings.Replace(nsStream, "metadata: {name: web}\nspec:\n  interval", "metadata: {name: web, namespace: other}\nspec:\n  interval", 1)), WithDefaultNamespace("shop"))
		require.NoError(t, err)
		assert.Equal(t, "other", objs.Releases[0].Namespace)
	})
}

// TestEnforceNamespaceRefusesAnotherNamespace: as kubectl with an explicit
// --namespace, an object in another namespace is refused, naming the
// object and its namespace; cluster-scoped objects are not concerned.
func TestEnforceNamespaceRefusesAnotherNamespace(t *testing.T) {
	stream := nsStream + "---\napiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: elsewhere, namespace: other}\nspec:\n  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]\n"
	objs, err := Load(strings.NewReader(stream), WithEnforceNamespace("shop"))
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	require.Len(t, de.Problems, 1)
	p := de.Problems[0]
	assert.Equal(t, "PropagationPolicy other/elsewhere", p.Object())
	assert.Equal(t, "metadata.namespace", p.Path)
	assert.Equal(t, "other", p.Value)
	assert.Contains(t, p.Error(), `does not match the namespace "shop"`)
	assert.Equal(t, []string{"HelmRelease web=shop", "HelmRepository podinfo=shop", "PropagationPolicy web=shop", "OverridePolicy web=shop",
		"ClusterPropagationPolicy everywhere=", "ConfigMap web-values=shop", "Namespace apps="}, namespaces(objs))
}

// TestSetAddNamespaceOptions: policy.Set.Add fills and enforces the
// namespace of namespaced policies as Decode does.
func TestSetAddNamespaceOptions(t *testing.T) {
	var s policy.Set
	pp := &policy.PropagationPolicy{}
	pp.Name = "web"
	require.NoError(t, s.Add(pp, policy.WithDefaultNamespace("shop")))
	require.NoError(t, s.Add(&policy.ClusterPropagationPolicy{}, policy.WithDefaultNamespace("shop")))
	assert.Equal(t, "shop", s.Propagation[0].Namespace)
	assert.Empty(t, pp.Namespace, "the caller's value is not changed")
	assert.Empty(t, s.ClusterPropagation[0].Namespace)

	op := policy.OverridePolicy{}
	op.Name, op.Namespace = "tune", "other"
	err := s.Add(op, policy.WithEnforceNamespace("shop"))
	var ve *policy.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "OverridePolicy other/tune", ve.Policy.String())
	assert.Equal(t, "metadata.namespace", ve.Problems[0].Path)
	assert.Equal(t, "other", ve.Problems[0].Value)
	assert.Empty(t, s.Override)
}

// TestCoreKindsDecodeAsPlainObjects: ConfigMaps, Secrets and Namespaces of
// a Flux directory decode as plain objects, checked against their types.
func TestCoreKindsDecodeAsPlainObjects(t *testing.T) {
	objs, err := Load(strings.NewReader("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: apps}\ntype: Opaque\nstringData: {password: hunter2}\ndata: {token: aGVsbG8=}\n---\n" + nsStream))
	require.NoError(t, err)
	require.Len(t, objs.Plain, 3)
	assert.Equal(t, "Secret", objs.Plain[0].GetKind())
	assert.Equal(t, "apps", objs.Plain[0].GetNamespace())
	assert.Equal(t, map[string]any{"token": "aGVsbG8="}, objs.Plain[0].Object["data"])
	assert.Equal(t, "ConfigMap", objs.Plain[1].GetKind())
	assert.Equal(t, "Namespace", objs.Plain[2].GetKind())

	_, err = Decode(strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndta: {a: b}\n"))
	assert.ErrorContains(t, err, "ConfigMap x, line 4): dta: unknown field")
}

// TestSecretValuesNeverInDecodeErrors: a Secret whose data is refused is
// named with the path of the bad value, never the value.
func TestSecretValuesNeverInDecodeErrors(t *testing.T) {
	const secret = "SUPERSECRET"
	head := "apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: apps}\n"
	tests := []struct{ name, body, path string }{
		{"data not base64", "data: {password: \"" + secret + "!!\"}\n", "data.password"},
		{"data value a list", "data: {password: [\"" + secret + "\"]}\n", "data.password"},
		{"stringData value a map", "stringData: {password: {v: \"" + secret + "\"}}\n", "stringData.password"},
		{"stringData a string", "stringData: \"" + secret + "\"\n", "stringData"},
		{"data a number", "data: {password: 123" + "4567}\n", "data.password"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(head + tt.body))
			require.Error(t, err)
			msg := fmt.Sprintf("%v %+v %q", err, err, err)
			assert.NotContains(t, msg, secret)
			assert.NotContains(t, msg, "1234567")
			assert.Contains(t, msg, "Secret apps/creds")
			assert.Contains(t, msg, tt.path)
		})
	}
}
