package values_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

const ns = "apps"

func yamlMap(t *testing.T, s string) map[string]any {
	t.Helper()
	res, err := values.Compose(context.Background(), valuestest.NewReader(), values.Request{Files: []values.File{{Name: "x", Data: []byte(s)}}})
	require.NoError(t, err)
	return res.Values
}

func TestCompose(t *testing.T) {
	tests := []struct {
		name    string
		reader  *valuestest.Reader
		req     values.Request
		want    string // YAML of the expected values
		wantErr error
		errHas  []string
	}{
		{
			name: "flux merges",
			reader: valuestest.NewReader().
				ConfigMap(ns, "values", map[string]string{"values.yaml": "flat: value\nnested:\n  configuration: value\n"}).
				Secret(ns, "values", map[string][]byte{"values.yaml": []byte("flat:\n  nested: value\nnested: value\n")}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindConfigMap, Name: "values"},
				{Kind: values.KindSecret, Name: "values"},
			}, Inline: map[string]any{"other": "values"}},
			want: "flat: {nested: value}\nnested: value\nother: values\n",
		},
		{
			name:   "flux with target path",
			reader: valuestest.NewReader().Secret(ns, "values", map[string][]byte{"single": []byte("value")}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindSecret, Name: "values", ValuesKey: "single", TargetPath: "merge.at.specific.path"},
			}},
			want: "merge: {at: {specific: {path: value}}}\n",
		},
		{
			name: "flux target path precedence over all",
			reader: valuestest.NewReader().
				ConfigMap(ns, "values", map[string]string{"values.yaml": "flat: value\nnested:\n  configuration:\n  - one\n  - two\n  - three\n"}).
				Secret(ns, "values", map[string][]byte{"key": []byte("value")}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindSecret, Name: "values", ValuesKey: "key", TargetPath: "nested.configuration[0]"},
				{Kind: values.KindConfigMap, Name: "values"},
			}, Inline: map[string]any{"nested": map[string]any{"configuration": []any{"list", "item", "option"}}}},
			want: "flat: value\nnested: {configuration: [value, item, option]}\n",
		},
		{
			name: "flux target path for string type array item",
			reader: valuestest.NewReader().
				ConfigMap(ns, "values", map[string]string{"values.yaml": "flat: value\nnested:\n  configuration:\n  - list\n  - item\n  - option\n"}).
				Secret(ns, "values", map[string][]byte{"values.yaml": []byte("foo")}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindConfigMap, Name: "values"},
				{Kind: values.KindSecret, Name: "values", TargetPath: "nested.configuration[1]"},
			}, Inline: map[string]any{"other": "values"}},
			want: "flat: value\nnested: {configuration: [list, foo, option]}\nother: values\n",
		},
		{
			name:   "target path typed, quoted and escaped",
			reader: valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"bool": "true", "quoted": `"true"`, "role": "master", "list": "{a,b}", "int": "8080"}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "bool", TargetPath: "a.enabled"},
				{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "quoted", TargetPath: "a.text"},
				{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "role", TargetPath: `nodeSelector.kubernetes\.io/role`},
				{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "list", TargetPath: "a.list"},
				{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "int", TargetPath: "a.port"},
			}},
			want: "a: {enabled: true, text: 'true', list: [a, b], port: 8080}\nnodeSelector: {kubernetes.io/role: master}\n",
		},
		{
			name:   "literal keeps commas braces and quotes",
			reader: valuestest.NewReader().Secret(ns, "s", map[string][]byte{"dsn": []byte(`"a,b={c}"`)}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindSecret, Name: "s", ValuesKey: "dsn", TargetPath: "db.dsn", Literal: true},
			}},
			want: "db: {dsn: '\"a,b={c}\"'}\n",
		},
		{
			// Flux's literal reads the path with --set's escapes; helm
			// --set-literal would make the keys `application\` and `yml`.
			name: "literal keeps escaped dots in the target path",
			reader: valuestest.NewReader().
				ConfigMap(ns, "cm", map[string]string{"app": "port: [80,443]"}).
				Secret(ns, "s", map[string][]byte{"conf": []byte(`a = "b,c"`)}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "app", TargetPath: `externalConfig.application\.yml.content`, Literal: true},
				{Kind: values.KindSecret, Name: "s", ValuesKey: "conf", TargetPath: `externalConfig.application\.conf.content`, Literal: true},
			}},
			want: "externalConfig: {application.yml: {content: 'port: [80,443]'}, application.conf: {content: 'a = \"b,c\"'}}\n",
		},
		{
			name: "files replace lists and merge maps in order, inline last",
			req: values.Request{
				Files: []values.File{
					{Name: "values.yaml", Data: []byte("image: {repository: app, tag: '1.0'}\nports: [80, 443]\nkeep: 1\n")},
					{Name: "values-prod.yaml", Data: []byte("image: {tag: '2.0'}\nports: [8080]\n")},
				},
				Inline: map[string]any{"keep": nil, "image": map[string]any{"pullPolicy": "Always"}},
			},
			want: "image: {repository: app, tag: '2.0', pullPolicy: Always}\nports: [8080]\nkeep: null\n",
		},
		{
			name: "optional missing object and key are skipped",
			reader: valuestest.NewReader().
				ConfigMap(ns, "present", map[string]string{"other": "a: 1"}),
			req: values.Request{From: []values.Reference{
				{Kind: values.KindSecret, Name: "missing", Optional: true},
				{Kind: values.KindConfigMap, Name: "present", Optional: true},
				{Kind: values.KindConfigMap, Name: "present", ValuesKey: "other"},
			}},
			want: "a: 1\n",
		},
		{
			name: "overrides merge then patch",
			req: values.Request{
				Inline: map[string]any{"replicas": 1, "image": map[string]any{"tag": "1.0"}, "env": []any{"a"}},
				Overrides: []values.Override{
					{Name: "cluster-a merge", Merge: map[string]any{"replicas": 3}},
					{Name: "cluster-a patch", Patch: []values.PatchOp{
						{Op: "replace", Path: "/image/tag", Value: "1.1"},
						{Op: "add", Path: "/env/-", Value: "b"},
						{Op: "remove", Path: "/replicas"},
						{Op: "add", Path: "/cleared", Value: nil},
					}},
				},
			},
			want: "image: {tag: '1.1'}\nenv: [a, b]\ncleared: null\n",
		},
		{
			name:    "missing secret",
			reader:  valuestest.NewReader(),
			req:     values.Request{From: []values.Reference{{Kind: values.KindSecret, Name: "missing"}}},
			wantErr: values.ErrNotFound,
			errHas:  []string{`release "apps/app"`, "Secret/missing[values.yaml]"},
		},
		{
			name:    "missing config map",
			reader:  valuestest.NewReader(),
			req:     values.Request{From: []values.Reference{{Kind: values.KindConfigMap, Name: "missing"}}},
			wantErr: values.ErrNotFound,
			errHas:  []string{"ConfigMap/missing[values.yaml]"},
		},
		{
			name:    "missing key",
			reader:  valuestest.NewReader().Secret(ns, "s", nil),
			req:     values.Request{From: []values.Reference{{Kind: values.KindSecret, Name: "s", ValuesKey: "nonexisting"}}},
			wantErr: values.ErrKeyNotFound,
			errHas:  []string{"Secret/s[nonexisting]", `no key "nonexisting"`},
		},
		{
			name:    "unsupported kind",
			req:     values.Request{From: []values.Reference{{Kind: "Unsupported", Name: "x"}}},
			wantErr: values.ErrUnsupportedKind,
		},
		{
			name:    "literal needs target path",
			req:     values.Request{From: []values.Reference{{Kind: values.KindConfigMap, Name: "x", Literal: true}}},
			wantErr: values.ErrInvalidReference,
		},
		{
			name:    "invalid values",
			reader:  valuestest.NewReader().ConfigMap(ns, "values", map[string]string{"values.yaml": "\ninvalid"}),
			req:     values.Request{From: []values.Reference{{Kind: values.KindConfigMap, Name: "values"}}},
			wantErr: values.ErrNotMap,
			errHas:  []string{"ConfigMap/values[values.yaml]: line 2"},
		},
		{
			name:    "invalid YAML in a file",
			req:     values.Request{Files: []values.File{{Name: "values-prod.yaml", Data: []byte("a: 1\nb: [\n")}}},
			wantErr: values.ErrInvalidYAML,
			errHas:  []string{`file "values-prod.yaml": line 2`},
		},
		{
			name:    "bad target path",
			reader:  valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"v": "x"}),
			req:     values.Request{From: []values.Reference{{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "v", TargetPath: "a[x]"}}},
			wantErr: values.ErrTargetPath,
			errHas:  []string{"ConfigMap/cm[v] at a[x]"},
		},
		{
			name:    "target path through a scalar",
			reader:  valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"v": "x"}),
			req:     values.Request{Inline: map[string]any{"a": "text"}, From: []values.Reference{{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "v", TargetPath: "a.b"}}},
			wantErr: values.ErrTargetPath,
			errHas:  []string{`key "a" is not a map`},
		},
		{
			name:    "oversize document",
			reader:  valuestest.NewReader().ConfigMap(ns, "big", map[string]string{"values.yaml": "a: 0123456789012345678901234567890123456789"}),
			req:     values.Request{Limits: values.Limits{MaxDocumentBytes: 16}, From: []values.Reference{{Kind: values.KindConfigMap, Name: "big"}}},
			wantErr: values.ErrTooLarge,
		},
		{
			name:    "failing patch",
			req:     values.Request{Overrides: []values.Override{{Name: "o", Patch: []values.PatchOp{{Op: "remove", Path: "/nope"}}}}},
			wantErr: values.ErrPatch,
			errHas:  []string{`override "o"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.reader
			if r == nil {
				r = valuestest.NewReader()
			}
			req := tt.req
			req.Release, req.Namespace = "apps/app", ns
			res, err := values.Compose(context.Background(), r, req)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.ErrorIs(t, err, tt.wantErr)
				var se *values.SourceError
				require.ErrorAs(t, err, &se)
				assert.Equal(t, "apps/app", se.Release)
				for _, s := range tt.errHas {
					assert.Contains(t, err.Error(), s)
				}
				assert.Nil(t, res)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, yamlMap(t, tt.want), jsonNumbers(res.Values))
			assert.Equal(t, values.Digest(res.Values), res.Digest)
			assert.NotEmpty(t, res.Provenance().Origins())
		})
	}
}

// jsonNumbers turns every number into float64, the form YAML decoding gives.
func jsonNumbers(v map[string]any) map[string]any {
	var conv func(any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				out[k] = conv(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = conv(e)
			}
			return out
		case int64:
			return float64(x)
		case int:
			return float64(x)
		}
		return v
	}
	return conv(v).(map[string]any)
}

func TestComposeReadsEachObjectOnce(t *testing.T) {
	r := valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"a": "a: 1", "b": "b: 2"})
	res, err := values.Compose(context.Background(), r, values.Request{Namespace: ns, From: []values.Reference{
		{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "a"},
		{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "b"},
		{Kind: values.KindSecret, Name: "gone", Optional: true},
		{Kind: values.KindSecret, Name: "gone", Optional: true},
	}})
	require.NoError(t, err)
	assert.Equal(t, 2, r.Reads())
	assert.Equal(t, map[string]any{"a": 1.0, "b": 2.0}, res.Values)
}

func TestComposeReaderFailure(t *testing.T) {
	boom := errors.New("apiserver unavailable")
	r := valuestest.NewReader().FailOn(values.KindConfigMap, ns, "cm", boom)
	_, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns,
		From: []values.Reference{{Kind: values.KindConfigMap, Name: "cm", Optional: true}}})
	require.ErrorIs(t, err, boom, "optional skips only a missing object, not a failing read")
	assert.ErrorIs(t, err, values.ErrRead)
	assert.NotErrorIs(t, err, values.ErrNotFound)
}

func TestComposeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := values.Compose(ctx, valuestest.NewReader(), values.Request{Release: "apps/app",
		From: []values.Reference{{Kind: values.KindConfigMap, Name: "cm"}}})
	require.ErrorIs(t, err, context.Canceled)
}

func TestComposeDoesNotModifyRequest(t *testing.T) {
	inline := map[string]any{"nested": map[string]any{"configuration": []any{"list", "item"}}}
	override := map[string]any{"nested": map[string]any{"x": 1}}
	r := valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"v": "changed"})
	res, err := values.Compose(context.Background(), r, values.Request{Namespace: ns, Inline: inline,
		From:      []values.Reference{{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "v", TargetPath: "nested.configuration[0]"}},
		Overrides: []values.Override{{Name: "o", Merge: override}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"nested": map[string]any{"configuration": []any{"list", "item"}}}, inline)
	assert.Equal(t, map[string]any{"nested": map[string]any{"x": 1}}, override)
	assert.Equal(t, []any{"changed", "item"}, res.Values["nested"].(map[string]any)["configuration"])
}
