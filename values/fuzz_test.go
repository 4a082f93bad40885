package values

import (
	"errors"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParseValue checks that parseValue reads a text exactly as setLine
// reads the value of "x=<text>" whenever it accepts it, and that its errors
// are its own fixed ones (they never quote the text).
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"v", "8080", "true", "null", "{a,b}", "{a}", "{a},", "x,", `a\,b`, `x\\"y`, "a,CANARY=1",
		`x"CANARY`, `x\\"CANARY`, "'CANARY", "{a}CANARY=1", "{open", "a=b", `trail\`, "0", "01", "{}", "{,}"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, asString bool) {
		if len(text) > 256 {
			return
		}
		mode := setTyped
		if asString {
			mode = setString
		}
		v, err := parseValue(text, mode)
		if err != nil {
			require.True(t, errors.Is(err, errOpenList) || errors.Is(err, errMoreAssignments), "error %v", err)
			return
		}
		if text == "" {
			// Helm sets "" too, except under a list element (a quirk
			// parseValue does not copy; see assignSecret).
			require.Equal(t, "", v)
			return
		}
		got := map[string]any{}
		require.NoError(t, setLine(got, "x="+text, mode, nil), "setLine refuses what parseValue accepts")
		require.Equal(t, map[string]any{"x": v}, got)
	})
}

// FuzzParsePath checks the path syntax Explain takes: no panic, and a
// parsed path prints back to a path that parses to the same segments.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"", "a", "a.b[0].c", `kubernetes\.io/role`, `""`, `a.""`, `a\"b`, "a[", "a[x]", "a[-1]", `a\`, "[0][1]", "a..b", `\,\=\[`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := parsePath(s)
		if err != nil {
			return
		}
		again, err := parsePath(formatPath(segs))
		require.NoError(t, err, "printed %q", formatPath(segs))
		require.Equal(t, len(segs), len(again))
		for i := range segs {
			require.Equal(t, segs[i], again[i])
		}
	})
}

// safeDetail matches every docError detail: words of this package, numbers,
// node kinds, type names and tags, never the document's text.
var safeDetail = regexp.MustCompile(`^(` +
	`\d+ bytes, limit \d+` +
	`|found (a list|a scalar|a node|(an alias to )+(a list|a scalar|a node))` +
	`|more than \d+ nodes|unknown node|map merge requires map or sequence of maps as the value` +
	`|invalid map key: (a list|a scalar|a node|(an alias to )+(a list|a scalar|a node))` +
	`|unsupported map key of type [a-z0-9<>]+|!!binary value cannot be decoded` +
	`|a value does not resolve to its tag !!(str|bool|int|float|null|timestamp)` +
	`|value has no JSON form \(NaN or infinity\)` +
	`|` + regexp.QuoteMeta(syntaxProblem) + `)$`)

func checkDetail(t *testing.T, doc string) {
	_, derr := decodeDocument([]byte(doc), Limits{MaxAliasNodes: 1000}.withDefaults())
	if derr == nil {
		return
	}
	if _, ok := yamlProblems[derr.detail]; ok {
		return
	}
	require.Regexp(t, safeDetail, derr.detail, "doc %q", doc)
}

func TestDocErrorDetailIsFixed(t *testing.T) {
	for _, doc := range append(yamlCorpus, `a: !!int 'x"CANARY'`, "a: *CANARY", "a: [x\"CANARY", "? [a]\n: b", "a: !!bool 'x'") {
		checkDetail(t, doc)
	}
}
