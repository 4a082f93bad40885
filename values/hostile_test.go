package values_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml3 "go.yaml.in/yaml/v3"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// hostileCanary is the word planted in Secrets by the tests of issue 17;
// the values around it carry quotes, backslashes and commas.
const hostileCanary = "CANARY"

// outputs are every printed form of a composition and its error.
func outputs(res *values.Result, err error) map[string]string {
	out := map[string]string{}
	if err != nil {
		out["Error"] = err.Error()
		out["%v err"] = fmt.Sprintf("%v", err)
		out["%+v err"] = fmt.Sprintf("%+v", err)
		out["%#v err"] = fmt.Sprintf("%#v", err)
		var se *values.SourceError
		if errors.As(err, &se) {
			out["%#v SourceError"] = fmt.Sprintf("%#v", *se)
			if b, jerr := json.Marshal(se); jerr == nil {
				out["JSON err"] = string(b)
			}
		}
	}
	if res != nil {
		out["String"] = res.String()
		out["%v"] = fmt.Sprintf("%v", res)
		out["%+v"] = fmt.Sprintf("%+v", res)
		out["%#v"] = fmt.Sprintf("%#v", res)
		out["%#v value"] = fmt.Sprintf("%#v", *res)
		out["provenance"] = res.Provenance().String()
		out["%#v origins"] = fmt.Sprintf("%#v", res.Provenance().Origins())
		b, jerr := json.Marshal(res)
		if jerr != nil {
			out["JSON"] = jerr.Error()
		} else {
			out["JSON"] = string(b)
		}
		y, yerr := yaml3.Marshal(res)
		if yerr != nil {
			out["YAML"] = yerr.Error()
		} else {
			out["YAML"] = string(y)
		}
		rb, _ := json.Marshal(res.Redacted())
		out["Redacted"] = string(rb)
	}
	return out
}

func assertNoWord(t *testing.T, word string, outs map[string]string) {
	t.Helper()
	for what, out := range outs {
		assert.NotContains(t, out, word, "%s shows Secret text:\n%s", what, out)
	}
}

// TestSecretTextNeverInErrors covers the escapes of issue 17: quotes,
// backslashes and commas in Secret text must not let it into an error.
func TestSecretTextNeverInErrors(t *testing.T) {
	tests := []struct {
		name string
		data string
		ref  values.Reference
		// reason is the sentinel the error matches.
		reason error
	}{
		{name: "escaped quote under a tag", data: `a: !!int 'x"CANARY'`, reason: values.ErrInvalidYAML},
		{name: "double quoted escape under a tag", data: `a: !!bool "x\"CANARY"`, reason: values.ErrInvalidYAML},
		{name: "backslash under a tag", data: `a: !!int x\\"CANARY`, reason: values.ErrInvalidYAML},
		{name: "unknown anchor with quote", data: `a: *x"CANARY`, reason: values.ErrInvalidYAML},
		{name: "unterminated quote", data: `a: "x\"CANARY`, reason: values.ErrInvalidYAML},
		{name: "unterminated single quote", data: `a: 'CANARY`, reason: values.ErrInvalidYAML},
		{name: "flow with quote", data: `a: [x"CANARY`, reason: values.ErrInvalidYAML},
		{name: "escaped quote at a bad targetPath", data: `x"CANARY`, ref: values.Reference{TargetPath: `a\`}, reason: values.ErrTargetPath},
		{name: "backslash quote at a bad targetPath", data: `x\\"CANARY`, ref: values.Reference{TargetPath: `a\`}, reason: values.ErrTargetPath},
		{name: "quote at a bad index", data: `x"CANARY`, ref: values.Reference{TargetPath: `a[x]`}, reason: values.ErrTargetPath},
		{name: "quote at an open index", data: `x"CANARY`, ref: values.Reference{TargetPath: `a[0`}, reason: values.ErrTargetPath},
		{name: "comma makes a key", data: `a,CANARY=1`, ref: values.Reference{TargetPath: `x`}, reason: values.ErrTargetPath},
		{name: "comma makes a nested key", data: `a,CANARY.b=1`, ref: values.Reference{TargetPath: `x`}, reason: values.ErrTargetPath},
		{name: "text after a list", data: `{a}CANARY=1`, ref: values.Reference{TargetPath: `x`}, reason: values.ErrTargetPath},
		{name: "open list", data: `{x"CANARY`, ref: values.Reference{TargetPath: `x`}, reason: values.ErrTargetPath},
		{name: "quoted with a comma", data: `"a,CANARY=1"`, ref: values.Reference{TargetPath: `x`}, reason: values.ErrTargetPath},
		{name: "single quote and comma", data: `'CANARY,b`, ref: values.Reference{TargetPath: `x`}, reason: values.ErrTargetPath},
		{name: "through a scalar", data: `x"CANARY`, ref: values.Reference{TargetPath: `s.b`}, reason: values.ErrTargetPath},
		{name: "targetPath with its own assignment", data: `x"CANARY`, ref: values.Reference{TargetPath: `a=1,b`}, reason: values.ErrTargetPath},
		{name: "literal at a bad targetPath", data: `x"CANARY,`, ref: values.Reference{TargetPath: `a[x]`, Literal: true}, reason: values.ErrTargetPath},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valuestest.NewReader().Secret(ns, "creds", map[string][]byte{"k": []byte(tt.data)})
			ref := tt.ref
			ref.Kind, ref.Name, ref.ValuesKey = values.KindSecret, "creds", "k"
			res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns,
				Inline: map[string]any{"s": "text"}, From: []values.Reference{ref}})
			require.Error(t, err)
			require.Nil(t, res)
			assert.ErrorIs(t, err, tt.reason)
			assertNoWord(t, hostileCanary, outputs(nil, err))
			// The error names the Secret with its namespace and the key.
			assert.Contains(t, err.Error(), "Secret/creds[k]")
			assert.Contains(t, err.Error(), "Secret apps/creds")
			assert.Contains(t, err.Error(), values.RedactedPrefix, "a digest of the text identifies it")
		})
	}
}

// TestSecretAtTargetPath: a Secret value at a targetPath is one --set value
// (typed, quoted, {list} and escapes as Flux); text that --set would read as
// further assignments is refused instead of creating keys from the Secret.
func TestSecretAtTargetPath(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		literal bool
		want    any
	}{
		{name: "plain", data: "s3cret", want: "s3cret"},
		{name: "typed number", data: "8080", want: int64(8080)},
		{name: "typed bool", data: "true", want: true},
		{name: "quoted stays a string", data: `"8080"`, want: "8080"},
		{name: "escaped comma", data: `a\,CANARY`, want: "a,CANARY"},
		{name: "list", data: "{a,b}", want: []any{"a", "b"}},
		{name: "trailing comma as Helm", data: "x,", want: "x"},
		{name: "empty", data: "", want: ""},
		{name: "literal keeps everything", data: `a,CANARY=1,"x"`, literal: true, want: `a,CANARY=1,"x"`},
		{name: "quote and backslash", data: `x\\"y`, want: `x\"y`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := valuestest.NewReader().Secret(ns, "creds", map[string][]byte{"k": []byte(tt.data)})
			res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns,
				Inline: map[string]any{"a": map[string]any{"c": "keep"}},
				From: []values.Reference{{Kind: values.KindSecret, Name: "creds", ValuesKey: "k",
					TargetPath: `a.b[1].x`, Literal: tt.literal}}})
			require.NoError(t, err)
			list := res.Values["a"].(map[string]any)["b"].([]any)
			require.Len(t, list, 2)
			assert.Nil(t, list[0])
			assert.Equal(t, map[string]any{"x": tt.want}, list[1])
			for _, o := range res.Provenance().Origins() {
				if strings.HasPrefix(o.Path, `a.b[1]`) {
					assert.True(t, o.Sensitive, o.Path)
				}
			}
		})
	}
}

func TestComposeNilReader(t *testing.T) {
	var typedNil *valuestest.Reader
	for name, r := range map[string]values.Reader{"nil": nil, "typed nil": typedNil} {
		t.Run(name, func(t *testing.T) {
			_, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns,
				From: []values.Reference{{Kind: values.KindConfigMap, Name: "cm"}}})
			require.ErrorIs(t, err, values.ErrNoReader)
			var se *values.SourceError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, "ConfigMap/cm[values.yaml]", se.Source.String())

			res, err := values.Compose(context.Background(), r, values.Request{Inline: map[string]any{"a": 1}})
			require.NoError(t, err, "no reference, no Reader needed")
			assert.Equal(t, map[string]any{"a": 1}, res.Values)
		})
	}
}

func TestComposeTooManyReferences(t *testing.T) {
	r := valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"values.yaml": "a: 1"})
	from := make([]values.Reference, values.DefaultMaxReferences+1)
	for i := range from {
		from[i] = values.Reference{Kind: values.KindConfigMap, Name: "cm"}
	}
	_, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns, From: from})
	require.ErrorIs(t, err, values.ErrTooManyReferences)
	var te *values.TooManyReferencesError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, values.TooManyReferencesError{Release: "apps/app", Count: values.DefaultMaxReferences + 1, Limit: values.DefaultMaxReferences}, *te)
	assert.Zero(t, r.Reads(), "nothing is read")

	res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns, From: from[:values.DefaultMaxReferences]})
	require.NoError(t, err, "the limit itself is allowed")
	assert.Equal(t, map[string]any{"a": 1.0}, res.Values)

	_, err = values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns, From: from,
		Limits: values.Limits{MaxReferences: len(from)}})
	require.NoError(t, err, "Limits.MaxReferences raises the cap")
}

// TestResultEncodingsRedact: JSON and YAML encoders see the redacted values.
func TestResultEncodingsRedact(t *testing.T) {
	r := valuestest.NewReader().Secret(ns, "s", map[string][]byte{"values.yaml": []byte(`p: 'x"CANARY\'`)})
	res, err := values.Compose(context.Background(), r, values.Request{Namespace: ns,
		From: []values.Reference{{Kind: values.KindSecret, Name: "s"}}, Inline: map[string]any{"q": "plain"}})
	require.NoError(t, err)
	require.Contains(t, res.Values["p"], hostileCanary)
	outs := outputs(res, nil)
	assertNoWord(t, hostileCanary, outs)
	assert.Contains(t, outs["JSON"], `"plain"`)
	assert.Contains(t, outs["JSON"], res.Digest)
	assert.Contains(t, outs["YAML"], "plain")
}

func TestSecretValues(t *testing.T) {
	r := valuestest.NewReader().
		Secret(ns, "s", map[string][]byte{
			"values.yaml": []byte("db:\n  password: hunter2\n  user: app\n  port: 5432\n  pin: 7\n  tls: true\n  empty: ''\n  none: null\n  flag: 'true'\n  hosts: [a.example.com, b]\n  again: hunter2\n"),
			"token":       []byte("tok-123456"),
		}).
		ConfigMap(ns, "cm", map[string]string{"values.yaml": "db: {user: admin}\nplain: not-a-secret\n"})
	res, err := values.Compose(context.Background(), r, values.Request{Namespace: ns,
		From: []values.Reference{
			{Kind: values.KindSecret, Name: "s"},
			{Kind: values.KindConfigMap, Name: "cm"},
			{Kind: values.KindSecret, Name: "s", ValuesKey: "token", TargetPath: "auth.token"},
		},
		Overrides: []values.Override{{Name: "copy", Patch: []values.PatchOp{{Op: "copy", From: "/auth/token", Path: "/copied"}}}},
	})
	require.NoError(t, err)
	// db.user was overridden by the ConfigMap ("admin"); "app" was short
	// anyway. "7", "b", true, "" and null are too short or not text; "true"
	// is a YAML word.
	assert.Equal(t, []string{"5432", "a.example.com", "hunter2", "tok-123456"}, res.SecretValues())
	assert.Nil(t, values.Result{Values: map[string]any{"a": "b"}}.SecretValues(), "no provenance, no secrets known")
}

// FuzzSecretTargetPath checks that a Secret at a targetPath, whose text
// never meets the --set line parser, lands where a ConfigMap with the same
// text lands (Flux's semantics), whenever the Secret's text is accepted.
func FuzzSecretTargetPath(f *testing.F) {
	for _, s := range [][2]string{{"a.b", "v"}, {"a.b[1].c", "8080"}, {`k\.x`, `"q"`}, {"l[0][2]", "{a,b}"}, {"s.x", "1"},
		{"n[0]", "x,"}, {".a", "v"}, {"a.", "v"}, {`a\`, "v"}, {"a=b", "v"}, {"a,b", "v"}, {"m.x[1].y", `a\,b`}, {"a[0", "v"}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	f.Fuzz(func(t *testing.T, targetPath, text string, literal bool) {
		if targetPath == "" || text == "" || len(targetPath)+len(text) > 256 {
			return
		}
		if !literal && strings.Trim(text, `'"`) == "" {
			return // an empty value: Helm leaves a list element unset, see the package doc
		}
		inline := map[string]any{"a": map[string]any{"b": "x"}, "l": []any{[]any{"p"}}, "s": "str", "m": map[string]any{}}
		compose := func(kind values.Kind) (*values.Result, error) {
			r := valuestest.NewReader().
				Secret(ns, "o", map[string][]byte{"k": []byte(text)}).
				ConfigMap(ns, "o", map[string]string{"k": text})
			return values.Compose(context.Background(), r, values.Request{Release: "apps/fuzz", Namespace: ns, Inline: inline,
				From: []values.Reference{{Kind: kind, Name: "o", ValuesKey: "k", TargetPath: targetPath, Literal: literal}}})
		}
		sec, err := compose(values.KindSecret)
		if err != nil {
			return
		}
		cm, cerr := compose(values.KindConfigMap)
		require.NoError(t, cerr, "a ConfigMap fails where the Secret does not")
		require.Equal(t, cm.Values, sec.Values)
		cmOrigins, secOrigins := cm.Provenance().Origins(), sec.Provenance().Origins()
		require.Equal(t, len(cmOrigins), len(secOrigins))
		for i, o := range secOrigins {
			c := cmOrigins[i]
			require.Equal(t, c.Path, o.Path)
			require.Equal(t, c.Source.Kind == values.SourceConfigMap, o.Sensitive, o.Path)
		}
	})
}

// FuzzExplain asks a composed Result about fuzzed paths: no panic, and every
// origin returned is one of the Result's, with a source.
func FuzzExplain(f *testing.F) {
	for _, s := range []string{"", "db", "db.password", "image.tag", "hosts[0]", "hosts[", `a\`, `""`, "x.y.z", "hosts[99]"} {
		f.Add(s)
	}
	r, req := provenanceRequest()
	res, err := values.Compose(context.Background(), r, req)
	require.NoError(f, err)
	all := map[string]values.Origin{}
	for _, o := range res.Provenance().Origins() {
		all[o.Path] = o
	}
	f.Fuzz(func(t *testing.T, path string) {
		for _, o := range res.Explain(path) {
			require.NotEmpty(t, o.Source.Kind, o.Path)
			require.Equal(t, all[o.Path], o)
		}
	})
}

// TestPatchFailureNamesOperation: a failing override patch is reported by
// its operation (index, op, path); the JSON patch library's message, which
// could quote the document, is added only when no value is a Secret's.
func TestPatchFailureNamesOperation(t *testing.T) {
	r := valuestest.NewReader().Secret(ns, "s", map[string][]byte{"values.yaml": []byte(`p: 'x"CANARY'`)})
	over := []values.Override{{Name: "o", Patch: []values.PatchOp{
		{Op: "add", Path: "/q", Value: 1},
		{Op: "test", Path: "/p", Value: "other"},
	}}}
	_, err := values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns,
		From: []values.Reference{{Kind: values.KindSecret, Name: "s"}}, Overrides: over})
	require.ErrorIs(t, err, values.ErrPatch)
	assert.Equal(t, `release "apps/app": values from override "o": override patch failed: operation 1 (test /p) does not apply`, err.Error())

	_, err = values.Compose(context.Background(), r, values.Request{Release: "apps/app", Namespace: ns,
		Inline: map[string]any{"p": "plain"}, Overrides: over})
	require.ErrorIs(t, err, values.ErrPatch)
	assert.Contains(t, err.Error(), "operation 1 (test /p) does not apply: ", "without Secrets the library says more")
}
