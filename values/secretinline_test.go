package values_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// TestSecretInlineMarksInlineValues: the leaves Request.SecretInline
// names are Secret-sourced like a Secret reference's (provenance,
// Redacted, String, JSON, SecretValues); the others are not; a pointer
// that does not parse marks everything and one that names nothing marks
// nothing; a later targetPath from a ConfigMap replaces a marked leaf.
func TestSecretInlineMarksInlineValues(t *testing.T) {
	inline := func() map[string]any {
		return map[string]any{
			"db":    map[string]any{"password": canary, "user": "app"},
			"hosts": []any{"plain.example", canary + ".example"},
			"a/b":   map[string]any{"c~d": canary + "-esc"},
			"port":  float64(5432),
			"tag":   "v1.2.3",
		}
	}
	leafText := map[string]string{`a/b.c~d`: canary + "-esc", "db.password": canary, "db.user": "app",
		"hosts[0]": "plain.example", "hosts[1]": canary + ".example", "port": "5432", "tag": "v1.2.3"}
	r := valuestest.NewReader().ConfigMap(ns, "cm", map[string]string{"tag": "v9.9.9"})
	cases := []struct {
		name    string
		ptrs    []string
		from    []values.Reference
		secrets []string // the leaves Sensitive
	}{
		{name: "a leaf", ptrs: []string{"/db/password"}, secrets: []string{"db.password"}},
		{name: "a list element and an escaped key", ptrs: []string{"/hosts/1", "/a~1b/c~0d"}, secrets: []string{`a/b.c~d`, "hosts[1]"}},
		{name: "a map", ptrs: []string{"/db"}, secrets: []string{"db.password", "db.user"}},
		{name: "everything", ptrs: []string{""}, secrets: []string{`a/b.c~d`, "db.password", "db.user", "hosts[0]", "hosts[1]", "port", "tag"}},
		{name: "not a pointer marks everything", ptrs: []string{"db.password"}, secrets: []string{`a/b.c~d`, "db.password", "db.user", "hosts[0]", "hosts[1]", "port", "tag"}},
		{name: "naming nothing marks nothing", ptrs: []string{"/nothing/here", "/hosts/7", "/hosts/01", "/db/password/x"}},
		{name: "a targetPath replaces a marked leaf", ptrs: []string{"/tag", "/db/password"},
			from:    []values.Reference{{Kind: values.KindConfigMap, Name: "cm", ValuesKey: "tag", TargetPath: "tag"}},
			secrets: []string{"db.password"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := values.Request{Release: "apps/app", Namespace: ns, Inline: inline(), From: tc.from, SecretInline: tc.ptrs}
			res, err := values.Compose(context.Background(), r, req)
			require.NoError(t, err)
			var got []string
			for _, o := range res.Provenance().Origins() {
				if o.Sensitive {
					got = append(got, o.Path)
					assert.Equal(t, values.SourceInline, o.Source.Kind, "the source stays the inline values")
				}
			}
			assert.Equal(t, tc.secrets, got)
			// Every output shows a marker for a marked leaf: the redacted
			// tree, which String, fmt and JSON print, holds none of their
			// texts, and SecretValues lists them.
			j, err := json.Marshal(res)
			require.NoError(t, err)
			shown := res.String() + fmt.Sprintf("%v %+v %#v", res, res, res) + string(j) + res.Provenance().String()
			texts := map[string]bool{}
			for _, p := range tc.secrets {
				text := fmt.Sprint(res.Explain(p)[0].Value)
				assert.Contains(t, text, "redacted", p)
				assert.Contains(t, shown, text, "%s shows as its marker", p)
				if clear := leafText[p]; len(clear) >= values.MinSecretValueLength {
					texts[clear] = true
				}
			}
			for v := range texts {
				assert.NotContains(t, shown, `"`+v+`"`, "a marked text is shown")
			}
			assert.ElementsMatch(t, slices.Collect(maps.Keys(texts)), res.SecretValues())
			assert.Equal(t, canary, res.Values["db"].(map[string]any)["password"], "Values keep the clear text")
		})
	}
}
