package postrender

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmpostrender "helm.sh/helm/v3/pkg/postrender"
)

func TestBuildNothingToDo(t *testing.T) {
	tests := []struct {
		name      string
		renderers []Kustomize
		common    *CommonMetadata
	}{
		{name: "nothing"},
		{name: "empty kustomize entries", renderers: []Kustomize{{}, {}}},
		{name: "empty common metadata", common: &CommonMetadata{Labels: map[string]string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, err := Build(tt.renderers, tt.common)
			require.NoError(t, err)
			assert.Nil(t, pr)
		})
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name      string
		renderers []Kustomize
		common    *CommonMetadata
		opts      []Option
		check     func(t *testing.T, out string)
	}{
		{
			name: "renderers run in order",
			renderers: []Kustomize{
				{Patches: []Patch{{Patch: replicas3}}},
				{}, // skipped, keeps its index
				{Patches: []Patch{{
					Patch:  "- op: test\n  path: /spec/replicas\n  value: 3\n- op: replace\n  path: /spec/replicas\n  value: 4\n",
					Target: &Selector{Kind: "Deployment"},
				}}},
			},
			check: func(t *testing.T, out string) {
				assert.EqualValues(t, 4, field(object(t, out, "Deployment", "web"), "spec", "replicas"))
			},
		},
		{
			name: "common metadata after user patches, which cannot remove or change it",
			renderers: []Kustomize{{Patches: []Patch{
				{Patch: "- op: remove\n  path: /metadata/labels\n", Target: &Selector{Kind: "Deployment"}},
				{Patch: "- op: add\n  path: /metadata/labels/env\n  value: from-patch\n", Target: &Selector{Kind: "Service"}},
				{Patch: "- op: add\n  path: /metadata/annotations\n  value: {owner: from-patch}\n", Target: &Selector{Kind: "ConfigMap"}},
			}}},
			common: &CommonMetadata{
				Labels:      map[string]string{"env": "prod"},
				Annotations: map[string]string{"owner": "platform"},
			},
			check: func(t *testing.T, out string) {
				for _, o := range []struct{ kind, name string }{{"ConfigMap", "web-config"}, {"Service", "web"}, {"Deployment", "web"}} {
					obj := object(t, out, o.kind, o.name)
					assert.Equal(t, "prod", field(obj, "metadata", "labels", "env"), o.kind)
					assert.Equal(t, "platform", field(obj, "metadata", "annotations", "owner"), o.kind)
				}
				d := object(t, out, "Deployment", "web")
				assert.Nil(t, field(d, "metadata", "labels", "tier"), "the user patch did run")
				assert.Nil(t, field(d, "spec", "template", "metadata", "labels", "env"), "pod template labels are left alone")
				assert.Nil(t, field(d, "spec", "selector", "matchLabels", "env"), "selectors are left alone")
				assert.Nil(t, field(object(t, out, "Service", "web"), "spec", "selector", "env"), "selectors are left alone")
			},
		},
		{
			name:   "origin labels last",
			common: &CommonMetadata{Labels: map[string]string{"helm.toolkit.fluxcd.io/name": "spoofed"}},
			opts:   []Option{WithOriginLabels("helm.toolkit.fluxcd.io", "apps", "web")},
			check: func(t *testing.T, out string) {
				for _, o := range []struct{ kind, name string }{{"ConfigMap", "web-config"}, {"Service", "web"}, {"Deployment", "web"}} {
					obj := object(t, out, o.kind, o.name)
					assert.Equal(t, "web", field(obj, "metadata", "labels", "helm.toolkit.fluxcd.io/name"), o.kind)
					assert.Equal(t, "apps", field(obj, "metadata", "labels", "helm.toolkit.fluxcd.io/namespace"), o.kind)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr, err := Build(tt.renderers, tt.common, tt.opts...)
			require.NoError(t, err)
			require.NotNil(t, pr)
			out, err := pr.Run(rendered(t))
			require.NoError(t, err)
			tt.check(t, out.String())
			golden(t, "build/"+tt.name, out.String())
		})
	}
}

func TestBuildErrorsNameTheRenderer(t *testing.T) {
	t.Run("invalid at build time", func(t *testing.T) {
		_, err := Build([]Kustomize{
			{Patches: []Patch{{Patch: replicas3}}},
			{Images: []Image{{Name: "x"}}, Patches: []Patch{{Patch: replicas3}, {Patch: "a: [", Target: &Selector{Kind: "Service"}}}},
		}, nil)
		var e *Error
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, "postRenderers[1].kustomize.patches[1]", e.Path)
		assert.Equal(t, &Selector{Kind: "Service"}, e.Target)
		assert.Equal(t, "a: [", e.Value)
	})
	t.Run("failing at run time", func(t *testing.T) {
		pr, err := Build([]Kustomize{
			{Patches: []Patch{{Patch: replicas3}}},
			{Patches: []Patch{{Patch: replicas3}, {Patch: "- op: remove\n  path: /spec/nope\n", Target: &Selector{Kind: "Service", Name: "web"}}}},
		}, &CommonMetadata{Labels: map[string]string{"a": "b"}})
		require.NoError(t, err)
		_, err = pr.Run(rendered(t))
		var e *Error
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, "postRenderers[1].kustomize.patches[1]", e.Path)
		assert.Regexp(t, `^postRenderers\[1\]\.kustomize\.patches\[1\] \(target kind=Service,name=web\) "- op: remove\\n  path: /spec/nope\\n": .*nonexistent key: nope`, err.Error())
	})
	t.Run("common metadata over unreadable manifests", func(t *testing.T) {
		pr, err := Build(nil, &CommonMetadata{Labels: map[string]string{"a": "b"}})
		require.NoError(t, err)
		_, err = pr.Run(bytes.NewBufferString("kind: [\n"))
		var e *Error
		require.True(t, errors.As(err, &e), "%v", err)
		assert.Equal(t, "commonMetadata", e.Path)
	})
}

func TestCommonMetadataRun(t *testing.T) {
	t.Run("empty is identity", func(t *testing.T) {
		in := rendered(t)
		out, err := CommonMetadata{}.Run(in)
		require.NoError(t, err)
		assert.Same(t, in, out)
	})
	t.Run("labels only, Source lines kept", func(t *testing.T) {
		out, err := CommonMetadata{Labels: map[string]string{"env": "prod"}}.Run(rendered(t))
		require.NoError(t, err)
		assert.Equal(t, "prod", field(object(t, out.String(), "ConfigMap", "web-config"), "metadata", "labels", "env"))
		assert.Nil(t, field(object(t, out.String(), "ConfigMap", "web-config"), "metadata", "annotations"))
		assert.Contains(t, out.String(), "---\n# Source: web/templates/configmap.yaml\napiVersion: v1\n")
	})
}

func TestCombinedRunsInOrderAndStops(t *testing.T) {
	var calls []string
	rec := func(name string, fail bool) recorder {
		return recorder{name: name, fail: fail, calls: &calls}
	}
	c := Combined{rec("a", false), rec("b", true), rec("c", false)}
	_, err := c.Run(bytes.NewBufferString("x"))
	require.EqualError(t, err, "b failed")
	assert.Equal(t, []string{"a:x", "b:x+a"}, calls)

	calls = nil
	out, err := Combined{rec("a", false), rec("c", false)}.Run(bytes.NewBufferString("x"))
	require.NoError(t, err)
	assert.Equal(t, "x+a+c", out.String())
}

type recorder struct {
	name  string
	fail  bool
	calls *[]string
}

func (r recorder) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	*r.calls = append(*r.calls, r.name+":"+in.String())
	if r.fail {
		return nil, errors.New(r.name + " failed")
	}
	return bytes.NewBufferString(in.String() + "+" + r.name), nil
}

func TestRenderersAreHelmPostRenderers(t *testing.T) {
	for _, r := range []helmpostrender.PostRenderer{Kustomize{}, CommonMetadata{}, OriginLabels{}, Combined{}} {
		out, err := r.Run(bytes.NewBufferString(""))
		require.NoError(t, err, "%T", r)
		assert.Empty(t, out.String(), "%T", r)
	}
}
