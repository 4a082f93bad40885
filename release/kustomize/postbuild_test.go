package kustomize_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/values"
)

// fakeVars is a values.Reader over ConfigMaps and Secrets by kind/name.
type fakeVars map[string]map[string]string

func (f fakeVars) Read(_ context.Context, kind values.Kind, _, name string) (map[string][]byte, error) {
	d, ok := f[string(kind)+"/"+name]
	if !ok {
		return nil, values.ErrNotFound
	}
	out := map[string][]byte{}
	for k, v := range d {
		out[k] = []byte(v)
	}
	return out, nil
}

// ks returns a valid, defaulted Kustomization of source
// GitRepository apps/app at path.
func ks(path string, mutate ...func(*release.Kustomization)) *release.Kustomization {
	k := &release.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "apps", Generation: 1},
		Spec: release.KustomizationSpec{
			Interval:  metav1.Duration{Duration: 5 * time.Minute},
			Path:      path,
			SourceRef: release.KustomizationSourceReference{Kind: "GitRepository", Name: "app"},
		},
	}
	for _, m := range mutate {
		m(k)
	}
	k.Default()
	return k
}

func reconciler(t *testing.T, root string, cfg kustomize.ReconcilerConfig) *kustomize.Reconciler {
	t.Helper()
	if cfg.Sources == nil {
		cfg.Sources = kustomize.MapSources{"GitRepository/apps/app": {FS: os.DirFS(root), Revision: "main@sha1:1"}}
	}
	r, err := kustomize.NewReconciler(cfg)
	require.NoError(t, err)
	return r
}

// fluxVars are the variables of Flux's kustomization_varsub.yaml and
// configmap.yaml (testdata/varsub, see its README).
var fluxVars = fakeVars{"ConfigMap/app-vars": {"prometheus_scrape": `"true"`, "prometheus_port": `"9797"`, "image": "nginx:1.21.4"}}

func withFluxPostBuild(k *release.Kustomization) {
	k.Spec.PostBuild = &release.PostBuild{
		Substitute:     map[string]string{"cluster_env": "prod", "cluster_region": "eu-central-1"},
		SubstituteFrom: []release.SubstituteReference{{Kind: "ConfigMap", Name: "app-vars"}},
	}
}

func manifestsYAML(t *testing.T, res *kustomize.Result) string {
	t.Helper()
	var docs []string
	for _, m := range res.Manifests {
		y, err := yaml.Marshal(m.Object)
		require.NoError(t, err)
		docs = append(docs, string(y))
	}
	return strings.Join(docs, "---\n")
}

// TestPostBuildFluxVarsub is Flux's TestKustomization_Varsub
// (fluxcd/pkg kustomize/kustomize_varsub_test.go): a Deployment
// substituted from inline variables and a ConfigMap, a ConfigMap labelled
// substitute: disabled left alone, same expected output.
func TestPostBuildFluxVarsub(t *testing.T) {
	r := reconciler(t, "testdata/varsub", kustomize.ReconcilerConfig{Variables: fluxVars, LenientSubstitution: true})
	res, err := r.Build(t.Context(), ks("resources", withFluxPostBuild))
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/varsub/kustomization_varsub_expected.yaml")
	require.NoError(t, err)
	assert.Equal(t, string(want), manifestsYAML(t, res))
	assert.Equal(t, "main@sha1:1", res.Revision)
}

// TestPostBuildStrict: Flux's strict half of TestKustomization_Varsub
// (varsubstrict/): an unset variable without a default fails, and the
// error names the Kustomization, the file, the object and the variable;
// lenient, it is empty.
func TestPostBuildStrict(t *testing.T) {
	r := reconciler(t, "testdata/varsub", kustomize.ReconcilerConfig{Variables: fluxVars})
	_, err := r.Build(t.Context(), ks("varsubstrict", withFluxPostBuild))
	var se *kustomize.SubstituteError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "apps/app", se.Kustomization)
	require.Len(t, se.Problems, 1)
	p := se.Problems[0]
	assert.Equal(t, "varsubstrict/config.yaml", p.File)
	assert.Equal(t, "ConfigMap apps/app-vars-strict", p.Object())
	assert.Equal(t, "missing", p.Variable)
	assert.EqualError(t, err, `Kustomization apps/app: postBuild substitution: varsubstrict/config.yaml: ConfigMap apps/app-vars-strict: variable "missing" is not set and has no default`)

	lenient := reconciler(t, "testdata/varsub", kustomize.ReconcilerConfig{Variables: fluxVars, LenientSubstitution: true})
	res, err := lenient.Build(t.Context(), ks("varsubstrict", withFluxPostBuild))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"missing": nil}, res.Manifests[0].Object["data"])
	assert.Equal(t, map[string]string{"environment": "prod", "region": "eu-central-1"}, res.Manifests[0].GetLabels())
}

// TestPostBuildAlways is Flux's TestKustomization_Varsub_Always
// (varsubalways/): with no variables, WithVariables substitutes nothing
// and Always takes the defaults.
func TestPostBuildAlways(t *testing.T) {
	r := reconciler(t, "testdata/varsub", kustomize.ReconcilerConfig{})
	res, err := r.Build(t.Context(), ks("varsubalways", func(k *release.Kustomization) { k.Spec.PostBuild = &release.PostBuild{} }))
	require.NoError(t, err)
	out := manifestsYAML(t, res)
	assert.Contains(t, out, "${cluster_env:=dev}")
	assert.Contains(t, out, "${cluster_region:=eu-central-1}")

	res, err = r.Build(t.Context(), ks("varsubalways", func(k *release.Kustomization) {
		k.Spec.PostBuild = &release.PostBuild{SubstituteStrategy: release.SubstituteStrategyAlways}
	}))
	require.NoError(t, err)
	out = manifestsYAML(t, res)
	assert.NotContains(t, out, "${")
	assert.Contains(t, out, "environment: dev")
	assert.Contains(t, out, "region: eu-central-1")
}

// TestPostBuildStrictEmptyValues is Flux's
// TestKustomization_Varsub_StrictEmptyValues (varsubstrictempty/): a
// variable set to "" (inline, ConfigMap, Secret) is set, not missing.
func TestPostBuildStrictEmptyValues(t *testing.T) {
	vars := fakeVars{"ConfigMap/app-vars-empty": {"empty_cm": ""}, "Secret/app-vars-empty": {"empty_secret": ""}}
	r := reconciler(t, "testdata/varsub", kustomize.ReconcilerConfig{Variables: vars})
	res, err := r.Build(t.Context(), ks("varsubstrictempty", func(k *release.Kustomization) {
		k.Spec.PostBuild = &release.PostBuild{
			Substitute:     map[string]string{"empty_inline": ""},
			SubstituteFrom: []release.SubstituteReference{{Kind: "ConfigMap", Name: "app-vars-empty"}, {Kind: "Secret", Name: "app-vars-empty"}},
		}
	}))
	require.NoError(t, err)
	out := manifestsYAML(t, res)
	assert.NotContains(t, out, "${")
	for _, l := range []string{"from-inline: null", "from-configmap: null", "from-secret: null"} {
		assert.Contains(t, out, l)
	}
}

// TestPostBuildPrecedence: substituteFrom in order, a later source
// overriding an earlier one, substitute over them all; an optional
// source that is absent is empty, a required one an error naming it.
func TestPostBuildPrecedence(t *testing.T) {
	vars := fakeVars{
		"ConfigMap/first":  {"a": "first", "b": "first", "c": "first"},
		"Secret/second":    {"b": "second", "c": "second"},
		"ConfigMap/broken": {"not-a-name": "x"},
	}
	tree := "testdata/varsub/precedence"
	r := reconciler(t, tree, kustomize.ReconcilerConfig{Variables: vars})
	k := ks(".", func(k *release.Kustomization) {
		k.Spec.PostBuild = &release.PostBuild{
			Substitute: map[string]string{"c": "inline"},
			SubstituteFrom: []release.SubstituteReference{
				{Kind: "ConfigMap", Name: "first"}, {Kind: "Secret", Name: "second"}, {Kind: "ConfigMap", Name: "absent", Optional: true},
			},
		}
	})
	res, err := r.Build(t.Context(), k)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": "first", "b": "second", "c": "inline"}, res.Manifests[0].Object["data"])

	k.Spec.PostBuild.SubstituteFrom[2].Optional = false
	_, err = r.Build(t.Context(), k)
	var ve *kustomize.VariablesError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "ConfigMap/absent", ve.Source)
	assert.ErrorIs(t, err, values.ErrNotFound)
	assert.Contains(t, err.Error(), "Kustomization apps/app: postBuild: ConfigMap/absent")

	k.Spec.PostBuild.SubstituteFrom = []release.SubstituteReference{{Kind: "ConfigMap", Name: "broken"}}
	_, err = r.Build(t.Context(), k)
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "not-a-name", ve.Variable)

	// Without a reader, substituteFrom cannot be read.
	_, err = reconciler(t, tree, kustomize.ReconcilerConfig{}).Build(t.Context(), k)
	require.ErrorAs(t, err, &ve)
	assert.False(t, errors.Is(err, values.ErrNotFound))
}
