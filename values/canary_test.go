package values_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// canary is planted in Secrets; no output of the package may contain it.
const canary = "c4n4ry-7f3e9a"

func assertNoCanary(t *testing.T, what, out string) {
	t.Helper()
	assert.NotContains(t, out, canary, "%s leaks the Secret canary:\n%s", what, out)
}

func TestSecretCanaryNeverPrinted(t *testing.T) {
	r := valuestest.NewReader().
		Secret(ns, "creds", map[string][]byte{
			"values.yaml": []byte("db:\n  password: " + canary + "\n  tags: [" + canary + ", x]\n"),
			"token":       []byte(canary),
			"list":        []byte("{" + canary + ",b}"),
			"quoted":      []byte(`"` + canary + `"`),
		}).
		ConfigMap(ns, "plain", map[string]string{"values.yaml": "app: {name: demo}\n"})
	req := values.Request{
		Release:   "apps/app",
		Namespace: ns,
		From: []values.Reference{
			{Kind: values.KindConfigMap, Name: "plain"},
			{Kind: values.KindSecret, Name: "creds"},
			{Kind: values.KindSecret, Name: "creds", ValuesKey: "token", TargetPath: "auth.token"},
			{Kind: values.KindSecret, Name: "creds", ValuesKey: "token", TargetPath: "auth.literal", Literal: true},
			{Kind: values.KindSecret, Name: "creds", ValuesKey: "list", TargetPath: "auth.list"},
			{Kind: values.KindSecret, Name: "creds", ValuesKey: "quoted", TargetPath: "auth.quoted"},
		},
		Overrides: []values.Override{{Name: "copy", Patch: []values.PatchOp{
			{Op: "copy", From: "/auth/token", Path: "/copied"},
			{Op: "move", From: "/auth/literal", Path: "/moved"},
		}}},
	}
	res, err := values.Compose(context.Background(), r, req)
	require.NoError(t, err)

	// The canary must be in the values (Helm needs it), or this test proves nothing.
	all, err := yaml.Marshal(res.Values)
	require.NoError(t, err)
	require.Equal(t, 7, strings.Count(string(all), canary), string(all))

	outputs := map[string]string{
		"String":            res.String(),
		"%v":                fmt.Sprintf("%v", res),
		"%+v":               fmt.Sprintf("%+v", res),
		"%#v":               fmt.Sprintf("%#v", res),
		"%s":                fmt.Sprintf("%s", res),
		"%q":                fmt.Sprintf("%q", res),
		"%v of value":       fmt.Sprintf("%v", *res),
		"%+v of value":      fmt.Sprintf("%+v", *res),
		"provenance report": res.Provenance().String(),
		"%+v provenance":    fmt.Sprintf("%+v", res.Provenance()),
		"%#v origins":       fmt.Sprintf("%#v", res.Provenance().Origins()),
		"%#v explain":       fmt.Sprintf("%#v", res.Explain("")),
	}
	red, err := yaml.Marshal(res.Redacted())
	require.NoError(t, err)
	outputs["Redacted"] = string(red)
	for _, o := range res.Provenance().Origins() {
		outputs["origin "+o.Path] = o.String()
	}
	for what, out := range outputs {
		assertNoCanary(t, what, out)
	}
	for _, p := range []string{"db.password", "db.tags[0]", "auth.token", "auth.list[0]", "auth.quoted", "copied", "moved"} {
		o := res.Explain(p)
		require.Len(t, o, 1, p)
		assert.True(t, o[0].Sensitive, p)
		assert.True(t, strings.HasPrefix(o[0].Value, values.RedactedPrefix), p)
	}
	assert.False(t, res.Explain("app.name")[0].Sensitive)
	assert.Contains(t, res.String(), "demo", "non-secret values stay readable")
}

func TestSecretCanaryNotInErrors(t *testing.T) {
	secret := func(data string) *valuestest.Reader {
		return valuestest.NewReader().Secret(ns, "s", map[string][]byte{"k": []byte(data)})
	}
	tests := []struct {
		name   string
		reader *valuestest.Reader
		ref    values.Reference
		inline map[string]any
		over   []values.Override
		source string
	}{
		{name: "bad tag", reader: secret("a: !!int " + canary), ref: values.Reference{ValuesKey: "k"}},
		{name: "bad bool", reader: secret("a: !!bool '" + canary + "'"), ref: values.Reference{ValuesKey: "k"}},
		{name: "syntax", reader: secret("a: [" + canary), ref: values.Reference{ValuesKey: "k"}},
		{name: "unknown anchor", reader: secret("a: *" + canary), ref: values.Reference{ValuesKey: "k"}},
		{name: "not a map", reader: secret(canary), ref: values.Reference{ValuesKey: "k"}},
		{name: "tab", reader: secret("a:\n\t" + canary + ": 1"), ref: values.Reference{ValuesKey: "k"}},
		{name: "comma in value", reader: secret("x," + canary), ref: values.Reference{ValuesKey: "k", TargetPath: "a"}},
		{name: "comma and dot", reader: secret("x," + canary + ".y"), ref: values.Reference{ValuesKey: "k", TargetPath: "a"}},
		{name: "index in value", reader: secret("x," + canary + "[0]z=1"), ref: values.Reference{ValuesKey: "k", TargetPath: "a"}},
		{name: "open list", reader: secret("{" + canary), ref: values.Reference{ValuesKey: "k", TargetPath: "a"}},
		{name: "through a scalar", reader: secret(canary), ref: values.Reference{ValuesKey: "k", TargetPath: "a.b"}, inline: map[string]any{"a": "x"}},
		{name: "test op", reader: secret("p: " + canary), ref: values.Reference{ValuesKey: "k"},
			over: []values.Override{{Name: "o", Patch: []values.PatchOp{{Op: "test", Path: "/p", Value: "other"}}}}, source: `override "o"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref := tt.ref
			ref.Kind, ref.Name = values.KindSecret, "s"
			_, err := values.Compose(context.Background(), tt.reader, values.Request{Release: "apps/app", Namespace: ns,
				From: []values.Reference{ref}, Inline: tt.inline, Overrides: tt.over})
			require.Error(t, err)
			assertNoCanary(t, "Error", err.Error())
			assertNoCanary(t, "%+v", fmt.Sprintf("%+v", err))
			assertNoCanary(t, "%#v", fmt.Sprintf("%#v", err))
			if tt.source == "" {
				tt.source = "Secret/s[k]"
			}
			assert.Contains(t, err.Error(), tt.source)
		})
	}
}

func TestRedactionMarkerTracksChanges(t *testing.T) {
	marker := func(secret string, key []byte) string {
		r := valuestest.NewReader().Secret(ns, "s", map[string][]byte{"values.yaml": []byte("p: " + secret)})
		res, err := values.Compose(context.Background(), r, values.Request{Namespace: ns, RedactionKey: key,
			From: []values.Reference{{Kind: values.KindSecret, Name: "s"}}})
		require.NoError(t, err)
		return res.Explain("p")[0].Value
	}
	a, b := marker("one", nil), marker("two", nil)
	assert.NotEqual(t, a, b)
	assert.Equal(t, a, marker("one", nil))
	keyed := marker("one", []byte("k"))
	assert.True(t, strings.HasPrefix(keyed, values.RedactedPrefix+"hmac-sha256:"), keyed)
	assert.NotEqual(t, keyed, marker("one", []byte("other")))
}

// FuzzCompose composes fuzzed documents and --set texts with the word
// CANARY planted in a Secret (in a document and in a text assigned at a
// targetPath, among quotes, backslashes and commas): Compose never panics,
// every leaf has an origin, and the canary appears in no output: errors
// (Error, %v, %+v, %#v, JSON), String, %v/%+v/%#v of the Result, its JSON and
// YAML, Redacted and provenance. Key names of Secret documents are printed
// by design, so an input whose document puts the canary in a key is skipped;
// a targetPath text never may.
func FuzzCompose(f *testing.F) {
	f.Add("a: {b: [1, 2]}", "x: 1", "a.b[1]", "v,", false)
	f.Add("", "a: yes", `k\.x`, "{p,", true)
	f.Add("l: [x]", "", "l[0].z", "x,y=", false)
	f.Add(`a: !!int 'x"CANARY'`, "", "a", `x"CANARY`, false)
	f.Add(`a: "x\"CANARY"`, "a: 1", `a\`, `x\"CANARY`, false)
	f.Add("a: 'CANARY", "", "a[x]", `x\\"CANARY`, false)
	f.Add("a: [CANARY, 'x,y']", "", "x", "a,CANARY=1", false)
	f.Add("p: x", "", "x", "a,CANARY.b=1", true)
	f.Add("p: x", "", "x.y[2]", "'CANARY", false)
	f.Add("p: x", "", "x", `"a,CANARY"`, false)
	f.Add("p: x", "", "x", "{a,CANARY}", false)
	f.Add("p: x", "", "x", "{a}CANARY=1", false)
	f.Add("p: *CANARY", "", "x", "CANARY", false)
	f.Fuzz(func(t *testing.T, secretDoc, cmDoc, targetPath, value string, literal bool) {
		if len(secretDoc)+len(cmDoc)+len(targetPath)+len(value) > 1024 {
			return
		}
		if strings.Contains(cmDoc, hostileCanary) || strings.Contains(targetPath, hostileCanary) {
			return // not Secret text
		}
		if !strings.Contains(secretDoc, hostileCanary) {
			secretDoc += "\nzz: " + hostileCanary + "\n"
		}
		if !strings.Contains(value, hostileCanary) {
			value += hostileCanary
		}
		r := valuestest.NewReader().
			Secret(ns, "s", map[string][]byte{"values.yaml": []byte(secretDoc), "v": []byte(value)}).
			ConfigMap(ns, "cm", map[string]string{"values.yaml": cmDoc})
		req := values.Request{Release: "apps/fuzz", Namespace: ns, Limits: values.Limits{MaxAliasNodes: 1000},
			From: []values.Reference{
				{Kind: values.KindConfigMap, Name: "cm"},
				{Kind: values.KindSecret, Name: "s"},
			}}
		res, err := values.Compose(context.Background(), r, req)
		if err == nil && keyHas(res.Values, hostileCanary) {
			return // the document made the canary a key name, which is printed
		}
		if targetPath != "" {
			req.From = append(req.From, values.Reference{Kind: values.KindSecret, Name: "s", ValuesKey: "v", TargetPath: targetPath, Literal: literal})
			res, err = values.Compose(context.Background(), r, req)
		}
		assertNoWord(t, hostileCanary, outputs(res, err))
		if err != nil {
			return
		}
		for _, o := range res.Provenance().Origins() {
			if o.Source.Kind == "" {
				t.Fatalf("leaf %q has no origin", o.Path)
			}
			assertNoWord(t, hostileCanary, map[string]string{"origin": o.String()})
		}
	})
}

// keyHas reports whether a key anywhere in v contains word.
func keyHas(v any, word string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, word) || keyHas(e, word) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if keyHas(e, word) {
				return true
			}
		}
	}
	return false
}
