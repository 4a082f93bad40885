package values_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// provenanceRequest exercises every kind of source.
func provenanceRequest() (*valuestest.Reader, values.Request) {
	r := valuestest.NewReader().
		ConfigMap(ns, "app-values", map[string]string{"values.yaml": "image:\n  tag: '1.1'\nreplicas: 2\nhosts: [a.example.com]\n"}).
		Secret(ns, "db", map[string][]byte{"password": []byte("hunter2"), "values.yaml": []byte("db:\n  user: app\n  password: s3cret\n")})
	req := values.Request{
		Release:   "apps/podinfo",
		Namespace: ns,
		Files: []values.File{
			{Name: "values.yaml", Data: []byte("image:\n  repository: ghcr.io/podinfo\n  tag: '1.0'\nreplicas: 1\nresources: {}\n")},
		},
		From: []values.Reference{
			{Kind: values.KindConfigMap, Name: "app-values"},
			{Kind: values.KindSecret, Name: "db"},
			{Kind: values.KindSecret, Name: "db", ValuesKey: "password", TargetPath: "db.password"},
		},
		Inline:    map[string]any{"replicas": 3, "db": map[string]any{"password": "inline-default"}},
		Overrides: []values.Override{{Name: "member-1", Merge: map[string]any{"hosts": []any{"eu.example.com"}}}},
	}
	return r, req
}

func TestProvenanceReport(t *testing.T) {
	r, req := provenanceRequest()
	res, err := values.Compose(context.Background(), r, req)
	require.NoError(t, err)
	golden := filepath.Join("testdata", "provenance.golden")
	got := res.Provenance().String()
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}

func TestExplain(t *testing.T) {
	r, req := provenanceRequest()
	res, err := values.Compose(context.Background(), r, req)
	require.NoError(t, err)
	file := values.Source{Kind: values.SourceFile, Name: "values.yaml"}
	cm := values.Source{Kind: values.SourceConfigMap, Name: "app-values", Key: "values.yaml"}
	secret := values.Source{Kind: values.SourceSecret, Name: "db", Key: "values.yaml", Index: 1}
	target := values.Source{Kind: values.SourceSecret, Name: "db", Key: "password", TargetPath: "db.password", Index: 2}
	inline := values.Source{Kind: values.SourceInline}
	tests := []struct {
		name      string
		path      string
		paths     []string
		source    values.Source
		overrode  []values.Source
		sensitive bool
	}{
		{name: "untouched file value", path: "image.repository", paths: []string{"image.repository"}, source: file},
		{name: "config map over file", path: "image.tag", paths: []string{"image.tag"}, source: cm, overrode: []values.Source{file}},
		{name: "inline over config map over file", path: "replicas", paths: []string{"replicas"}, source: inline, overrode: []values.Source{file, cm}},
		{name: "target path over inline over secret", path: "db.password", paths: []string{"db.password"}, source: target, overrode: []values.Source{secret, inline}, sensitive: true},
		{name: "empty map is a leaf", path: "resources", paths: []string{"resources"}, source: file},
		{name: "subtree", path: "db", paths: []string{"db.password", "db.user"}, source: target},
		{name: "list element", path: "hosts[0]", paths: []string{"hosts[0]"}, source: values.Source{Kind: values.SourceOverride, Name: "member-1"}, overrode: []values.Source{cm}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := res.Explain(tt.path)
			require.Len(t, got, len(tt.paths))
			for i, p := range tt.paths {
				assert.Equal(t, p, got[i].Path)
			}
			assert.Equal(t, tt.source, got[0].Source)
			if len(tt.paths) == 1 {
				assert.Equal(t, tt.overrode, got[0].Overrode)
				assert.Equal(t, tt.sensitive, got[0].Sensitive)
			}
		})
	}
	assert.Empty(t, res.Explain("nope"))
	assert.Len(t, res.Explain(""), len(res.Provenance().Origins()))
}

func TestExplainEscapedAndIndexedPaths(t *testing.T) {
	res, err := values.Compose(context.Background(), valuestest.NewReader(), values.Request{
		Inline: map[string]any{"nodeSelector": map[string]any{"kubernetes.io/role": "master"}, "l": []any{[]any{1, 2}}},
	})
	require.NoError(t, err)
	got := res.Explain(`nodeSelector.kubernetes\.io/role`)
	require.Len(t, got, 1)
	assert.Equal(t, `"master"`, got[0].Value)
	got = res.Explain("l[0][1]")
	require.Len(t, got, 1)
	assert.Equal(t, "2", got[0].Value)
	assert.Len(t, res.Explain("l[0]"), 2)
}

func TestProvenanceCoversEveryLeaf(t *testing.T) {
	r, req := provenanceRequest()
	req.Overrides = append(req.Overrides, values.Override{Name: "patch", Patch: []values.PatchOp{
		{Op: "add", Path: "/extra", Value: map[string]any{"a": []any{1, 2}}},
		{Op: "replace", Path: "/image/tag", Value: "9"},
	}})
	res, err := values.Compose(context.Background(), r, req)
	require.NoError(t, err)
	for _, o := range res.Provenance().Origins() {
		assert.NotEmpty(t, o.Source.Kind, "leaf %s has no source", o.Path)
	}
	assert.Equal(t, values.SourceOverride, res.Explain("extra.a[1]")[0].Source.Kind)
	assert.Equal(t, values.SourceFile, res.Explain("image.repository")[0].Source.Kind, "a patch keeps the origin of leaves it did not change")
	assert.Equal(t, 3, res.Values["replicas"], "a patch keeps the type of leaves it did not change")
}

func TestEmptyAndQuotedKeysHaveTheirOwnPaths(t *testing.T) {
	r := valuestest.NewReader().Secret(ns, "s", map[string][]byte{"values.yaml": []byte("'': {x: " + canary + "}\n")})
	res, err := values.Compose(context.Background(), r, values.Request{Namespace: ns,
		From:   []values.Reference{{Kind: values.KindSecret, Name: "s"}},
		Inline: map[string]any{"x": "plain", `""`: "quotes"}})
	require.NoError(t, err)
	secret := res.Explain(`"".x`)
	require.Len(t, secret, 1)
	assert.True(t, secret[0].Sensitive)
	plain := res.Explain("x")
	require.Len(t, plain, 1)
	assert.Equal(t, `"plain"`, plain[0].Value)
	quotes := res.Explain(`\"\"`)
	require.Len(t, quotes, 1)
	assert.Equal(t, `"quotes"`, quotes[0].Value)
	assertNoCanary(t, "String", res.String())
}
