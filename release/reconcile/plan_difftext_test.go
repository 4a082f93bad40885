package reconcile

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

// referenceDiff is the diff of the objects a and b as Plan has always
// written it: every object through sigs.k8s.io/yaml, then difflib, per
// key in order, objects of equal text left out.
func referenceDiff(t *testing.T, a, b []*unstructured.Unstructured) string {
	t.Helper()
	text := func(objs []*unstructured.Unstructured) map[string]string {
		out := map[string]string{}
		for _, o := range objs {
			data, err := yaml.Marshal(maskSecret(o).Object)
			require.NoError(t, err)
			out[objectKey(o)] = string(data)
		}
		return out
	}
	ta, tb := text(a), text(b)
	keys := []string{}
	for k := range ta {
		keys = append(keys, k)
	}
	for k := range tb {
		if _, ok := ta[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		if ta[k] == tb[k] {
			continue
		}
		from, to := k, k
		if _, ok := ta[k]; !ok {
			from = "/dev/null"
		}
		if _, ok := tb[k]; !ok {
			to = "/dev/null"
		}
		d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(ta[k]), B: difflib.SplitLines(tb[k]), FromFile: from, ToFile: to, Context: 3})
		require.NoError(t, err)
		sb.WriteString(d)
	}
	return sb.String()
}

// The diff writes objects without sigs.k8s.io/yaml's JSON round trip and
// added or removed objects without difflib: the text must stay exactly
// theirs, for the objects that take the short ways and those that do not.
func TestDiffTextIsSigsYAMLAndDifflib(t *testing.T) {
	objs := []map[string]any{
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "plain", "namespace": "apps"},
			"data": map[string]any{"a10": "x", "a9": "true", "b": "123", "c": "line 1\nline 2\n", "d": "", "e": "2021-01-01", "f": "~", "g": "- x", "h": "ünïcödé"}},
		{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "blank-lines"},
			"data": map[string]any{"script": "#!/bin/sh\n\necho hi\n\n\nexit 0\n"}},
		{"kind": "Numbers", "metadata": map[string]any{"name": "n"}, "spec": map[string]any{"i": int64(3), "big": int64(math.MaxInt64), "neg": int64(-7), "int": 5, "f": 0.5, "whole": 3.0, "negzero": math.Copysign(0, -1), "tiny": 1.5e-7, "huge": 1e21}},
		{"kind": "Nils", "metadata": map[string]any{"name": "n"}, "spec": map[string]any{"null": nil, "nilList": []any(nil), "nilMap": map[string]any(nil), "empty": []any{}, "emptyMap": map[string]any{}, "bool": false}},
		{"kind": "Bytes", "metadata": map[string]any{"name": "b"}, "spec": map[string]any{"bad": "a\xffb", "bad\xfekey": "v"}},
		{"kind": "Lists", "metadata": map[string]any{"name": "l"}, "spec": map[string]any{"args": []any{"--a", int64(1), true, nil, map[string]any{"k": []any{"x"}}}}},
		{"kind": "OneLine", "metadata": map[string]any{}},
	}
	for _, m := range objs {
		o := &unstructured.Unstructured{Object: m}
		want, err := yaml.Marshal(o.Object)
		require.NoError(t, err)
		got, err := yamlOf(o)
		require.NoError(t, err)
		require.Equal(t, string(want), got, "%s", o.GetKind())
		for _, pair := range [][2]string{{"", got}, {got, ""}, {got, got + "extra: 1\n"}, {"x\n\ny\n", ""}, {"", "no newline"}} {
			wantDiff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(pair[0]), B: difflib.SplitLines(pair[1]), FromFile: "a", ToFile: "b", Context: 3})
			require.NoError(t, err)
			var sb strings.Builder
			require.NoError(t, writeUnifiedDiff(&sb, pair[0], pair[1], "a", "b"))
			assert.Equal(t, wantDiff, sb.String(), "%s: %q -> %q", o.GetKind(), pair[0], pair[1])
		}
	}
}

// A plan's diff is the text of what changed and nothing else: an install
// shows every object added, an upgrade that changes one value shows only
// the objects it changes, and a plan of what runs shows nothing.
func TestPlanDiffShowsOnlyWhatChanged(t *testing.T) {
	ctx := t.Context()
	ch := testchart.Grown(3)
	rec, err := New(Config{Charts: ChartGetterFunc(func(context.Context, *release.Release) (*Chart, error) {
		return &Chart{Chart: ch}, nil
	}), PollInterval: time.Millisecond})
	require.NoError(t, err)
	rel := &release.Release{
		TypeMeta:   metav1.TypeMeta{APIVersion: release.APIVersion, Kind: release.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "apps", Generation: 1},
		Spec: release.Spec{Interval: metav1.Duration{Duration: 10 * time.Minute},
			Chart: &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{Chart: "podinfo", Version: "6.5.0",
				SourceRef: release.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"}}},
			Values: map[string]any{"replicaCount": 2}},
	}
	c := memory.New("m1", memory.WithPollInterval(time.Millisecond))

	install := rec.Plan(ctx, c, rel)
	require.NoError(t, install.Err)
	require.Equal(t, ActionInstall, install.Action)
	require.NotEmpty(t, install.Diff)
	assert.Equal(t, referenceDiff(t, nil, install.Objects), install.Diff)
	_, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	same := rec.Plan(ctx, c, rel)
	require.NoError(t, same.Err)
	assert.Empty(t, same.Diff, "nothing changed")

	up := rel.DeepCopy()
	up.Spec.Values = map[string]any{"replicaCount": 3}
	up.Generation++
	changed := rec.Plan(ctx, c, up)
	require.NoError(t, changed.Err)
	assert.Contains(t, changed.Diff, "-  replicas: 2\n+  replicas: 3\n")
	assert.Equal(t, referenceDiff(t, install.Objects, changed.Objects), changed.Diff)
	assert.Equal(t, 1, strings.Count(changed.Diff, "\n+++ "), "only the Deployment changed:\n%s", changed.Diff)
}

// planObjects reads a manifest's custom resources whether or not the
// cluster serves their kinds yet, in the manifest's order, each in the
// namespace its CRD's scope gives it, and names a kind nobody defines.
func TestPlanObjectsCustomKinds(t *testing.T) {
	ctx := t.Context()
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.io}
spec:
  group: example.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	manifest := "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n" +
		"---\napiVersion: example.io/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 1}\n" +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n" +
		"---\n{\"apiVersion\": \"example.io/v1\", \"kind\": \"Widget\", \"metadata\": {\"name\": \"w2\", \"namespace\": \"other\"}}\n" +
		"---\napiVersion: \"example.io/v1\"\nkind: Widget\nmetadata: {name: w3}\n"
	facts := decodeCRDFacts([][]byte{[]byte(crd)})
	want := []string{"ConfigMap/apps/a", "Widget/apps/w1", "ConfigMap/apps/b", "Widget/other/w2", "Widget/apps/w3"}
	keys := func(objs []*unstructured.Unstructured) []string {
		out := []string{}
		for _, o := range objs {
			out = append(out, objectKey(o))
		}
		return out
	}
	c := memory.New("m1")
	cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)

	objs, err := planObjects(cfg.KubeClient, manifest, "apps", facts)
	require.NoError(t, err, "the cluster does not serve Widget yet")
	assert.Equal(t, want, keys(objs))

	_, err = planObjects(cfg.KubeClient, manifest+"---\napiVersion: example.io/v1\nkind: Gadget\nmetadata: {name: g}\n", "apps", facts)
	require.ErrorContains(t, err, "neither the cluster nor the chart's CRDs define example.io/v1, Kind=Gadget")

	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(crd), &u.Object))
	_, err = c.Apply(ctx, u, release.ApplyOptions{FieldManager: "helm", Force: true})
	require.NoError(t, err)
	objs, err = planObjects(cfg.KubeClient, manifest, "apps", facts)
	require.NoError(t, err, "the cluster serves Widget")
	assert.Equal(t, want, keys(objs))
}
