package values_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/peertally"
	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// The peer suites: data-driven cases of Helm's strvals tests and of Flux's
// chartutil tests, ported as YAML tables under testdata/peer/{helm,flux}
// (each file's header says how a case maps onto values.Compose). The peers'
// inputs and expected outputs are the oracle; the code under test is
// helmfleet's.
//
// Every case is one of:
//   - ported: it must give the peer's expected result;
//   - a documented difference (field `difference`): helmfleet deliberately
//     differs, the reason says why, and the case checks what helmfleet does
//     instead;
//   - skipped (field `skip`, on a case or a whole group): it cannot be
//     expressed through valuesFrom or exercises internals helmfleet does
//     not model; the reason says which.
//
// A Helm strvals case and a Flux ReplacePathValue/ReplacePathLiteralValue
// case is ported through a ConfigMap: Helm's parser knows no Secrets and
// Flux reads both kinds alike, so the ConfigMap (--set semantics) is the
// faithful port and the one the tally counts. TestPeerSecretText runs the
// same cases once more with the text in a Secret, where issue 17's rule
// (a Secret's text never becomes a key name) refuses the texts marked
// `secret`; those runs are helmfleet's own documented differences, not
// further peer cases.
//
// Run with -v, TestPeer logs a tally per peer test function and
// TestPeerSecretText one for the Secret runs.

type peerSuiteFile struct {
	Repository string           `json:"repository"`
	Ref        string           `json:"ref"`
	Commit     string           `json:"commit"`
	Groups     []peerSuiteGroup `json:"groups"`
}

type peerSuiteGroup struct {
	Source  string          `json:"source"`
	Test    string          `json:"test"`
	Skip    string          `json:"skip,omitempty"`
	Count   int             `json:"count,omitempty"`   // a skipped group: how many cases
	Mode    string          `json:"mode,omitempty"`    // helm: typed, json, string or literal
	Literal bool            `json:"literal,omitempty"` // flux: ReplacePathLiteralValue
	Cases   []peerSuiteCase `json:"cases,omitempty"`
}

type peerSuiteCase struct {
	Name       string `json:"name,omitempty"`
	Skip       string `json:"skip,omitempty"`
	Difference string `json:"difference,omitempty"`
	// Secret: helmfleet refuses this text from a Secret (issue 17); the
	// reason says why (TestPeerSecretText).
	Secret string `json:"secret,omitempty"`

	// Helm: --set lines, each one reference, over an initial tree.
	Set     []string       `json:"set,omitempty"`
	Initial map[string]any `json:"initial,omitempty"`

	// Flux ChartValuesFromReferences.
	ConfigMaps map[string]map[string]string `json:"configMaps,omitempty"`
	Secrets    map[string]map[string]string `json:"secrets,omitempty"`
	References []peerSuiteRef               `json:"references,omitempty"`
	Values     map[string]any               `json:"values,omitempty"`
	// Flux ReplacePathValue and ReplacePathLiteralValue.
	Path  string `json:"path,omitempty"`
	Value string `json:"value,omitempty"`
	// Flux MergeMaps: documents merged in order.
	Merge []string `json:"merge,omitempty"`
	// Flux DigestValues: two value trees whose digests are the same or not.
	Digest []map[string]any `json:"digest,omitempty"`
	Same   bool             `json:"same,omitempty"`

	Want         map[string]any `json:"want,omitempty"`
	WantErr      bool           `json:"wantErr,omitempty"`
	Reason       string         `json:"reason,omitempty"`
	HelmfleetErr string         `json:"helmfleetErr,omitempty"`
}

type peerSuiteRef struct {
	Kind       string `json:"kind"`
	Name       string `json:"name,omitempty"`
	ValuesKey  string `json:"valuesKey,omitempty"`
	TargetPath string `json:"targetPath,omitempty"`
	Optional   bool   `json:"optional,omitempty"`
	Literal    bool   `json:"literal,omitempty"`
}

// The peer commits every table was read at.
var peerCommits = map[string]string{
	"helm/strvals.yaml":   "813176c51bb5c181dbbd7901298ddcc104cd3417", // helm/helm v3.21.4
	"flux/chartutil.yaml": "504330660f5b5e27b3da13a185b8649982afd3d4", // fluxcd/pkg chartutil/v1.27.1
}

var peerReasons = map[string]error{
	"NotFound":         values.ErrNotFound,
	"KeyNotFound":      values.ErrKeyNotFound,
	"UnsupportedKind":  values.ErrUnsupportedKind,
	"NotMap":           values.ErrNotMap,
	"InvalidYAML":      values.ErrInvalidYAML,
	"TargetPath":       values.ErrTargetPath,
	"InvalidReference": values.ErrInvalidReference,
}

// loadPeerSuite reads one peer table and checks the commit it was read at.
func loadPeerSuite(t *testing.T, file string) peerSuiteFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "peer", file))
	require.NoError(t, err)
	var f peerSuiteFile
	require.NoError(t, yaml.UnmarshalStrict(raw, &f), file)
	require.Equal(t, peerCommits[file], f.Commit, file)
	return f
}

var peerSuiteFiles = []string{"helm/strvals.yaml", "flux/chartutil.yaml"}

// caseName is a case's name, or its --set lines.
func (c peerSuiteCase) caseName(t *testing.T, key string) string {
	if c.Name != "" {
		return c.Name
	}
	require.NotEmpty(t, c.Set, "%s: a case has a name or set lines", key)
	return strings.Join(c.Set, " then ")
}

func TestPeer(t *testing.T) {
	tallies := map[string]*peertally.Tally{}
	for _, file := range peerSuiteFiles {
		f := loadPeerSuite(t, file)
		for _, g := range f.Groups {
			key := fmt.Sprintf("%s %s: %s %s", f.Repository, f.Ref, g.Source, g.Test)
			tl := &peertally.Tally{}
			tallies[key] = tl
			if g.Skip != "" {
				require.Empty(t, g.Cases, key)
				require.Positive(t, g.Count, "%s: a skipped group says how many cases it has", key)
				t.Run(g.Test, func(t *testing.T) { t.Skip("not ported: " + g.Skip) })
				tl.Skipped += g.Count
				continue
			}
			require.NotEmpty(t, g.Cases, key)
			t.Run(g.Test, func(t *testing.T) {
				for _, c := range g.Cases {
					name := c.caseName(t, key)
					require.False(t, c.Skip != "" && (c.Difference != "" || c.Secret != ""), "%s: %s is both skipped and a difference", key, name)
					require.True(t, c.Secret == "" || c.Set != nil || c.Path != "", "%s: %s: only a targetPath case has a Secret run", key, name)
					ok := t.Run(name, func(t *testing.T) {
						switch {
						case c.Skip != "":
							t.Skip("not ported: " + c.Skip)
						case c.Difference != "":
							t.Log("documented difference: " + c.Difference)
						}
						switch {
						case c.Set != nil:
							runHelmCase(t, g.Mode, c, values.KindConfigMap)
						case c.References != nil:
							runFluxCase(t, c)
						case c.Merge != nil:
							runFluxMerge(t, c)
						case c.Digest != nil:
							require.Len(t, c.Digest, 2)
							a, b := values.Digest(c.Digest[0]), values.Digest(c.Digest[1])
							assert.Equal(t, c.Same, a == b, "%s and %s", a, b)
						default:
							runFluxPath(t, g.Literal, c, values.KindConfigMap)
						}
					})
					tl.Count(c.Skip != "", c.Difference != "", ok)
				}
			})
		}
	}
	keys, total := peertally.Sum(tallies)
	for _, k := range keys {
		tl := tallies[k]
		t.Logf("%s: %d ported (%d agree, %d documented differences), %d skipped", k, tl.Ported, tl.Agree, tl.Difference, tl.Skipped)
	}
	t.Logf("total: %d ported (%d agree, %d documented differences), %d skipped", total.Ported, total.Agree, total.Difference, total.Skipped)
	// The bar: 99% of all ported cases agree; the rest are documented
	// differences (each of which checks what helmfleet does instead).
	peertally.Check(t, tallies, func(total peertally.Tally) {
		assert.GreaterOrEqual(t, float64(total.Agree)/float64(total.Ported), 0.99, "share of ported peer cases that agree")
	})
}

// TestPeerSecretText runs every ported targetPath case of the peer suites
// (Helm's --set lines, Flux's ReplacePathValue and ReplacePathLiteralValue)
// with the text in a Secret instead of a ConfigMap. Flux reads both kinds
// alike, so a Secret must give the peer's answer, except where the case is
// marked `secret`: a comma outside a list (or text after one) would make
// keys of the Secret's text, and helmfleet refuses it (issue 17, values
// doc.go). These are helmfleet's documented differences, counted apart from
// the peer cases they reuse.
func TestPeerSecretText(t *testing.T) {
	var run, same, refused int
	for _, file := range peerSuiteFiles {
		f := loadPeerSuite(t, file)
		for _, g := range f.Groups {
			key := fmt.Sprintf("%s %s: %s %s", f.Repository, f.Ref, g.Source, g.Test)
			t.Run(g.Test, func(t *testing.T) {
				for _, c := range g.Cases {
					if c.Skip != "" || c.Difference != "" || (c.Set == nil && c.Path == "") {
						continue
					}
					ok := t.Run(c.caseName(t, key), func(t *testing.T) {
						if c.Secret != "" {
							t.Log("documented difference from a Secret (issue 17): " + c.Secret)
						}
						if c.Set != nil {
							runHelmCase(t, g.Mode, c, values.KindSecret)
						} else {
							runFluxPath(t, g.Literal, c, values.KindSecret)
						}
					})
					run++
					switch {
					case c.Secret != "":
						refused++
					case ok:
						same++
					}
				}
			})
		}
	}
	t.Logf("Secret runs of the peers' targetPath cases (issue 17, not peer cases): %d run, %d give the peer's answer, %d refused as documented", run, same, refused)
	assert.Equal(t, run, same+refused, "every Secret run gives the peer's answer or is a documented refusal")
}

// splitSet cuts a Helm --set line at its first unescaped '=' into the
// targetPath and the text, so that path+"="+text is the line.
func splitSet(line string) (path, text string, ok bool) {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case '=':
			return line[:i], line[i+1:], true
		}
	}
	return "", "", false
}

// runHelmCase applies each --set line as one reference to an object of
// the kind, over Helm's initial tree.
func runHelmCase(t *testing.T, mode string, c peerSuiteCase, kind values.Kind) {
	r := valuestest.NewReader()
	data := map[string]string{}
	var refs []values.Reference
	if c.Initial != nil {
		doc, err := yaml.Marshal(c.Initial)
		require.NoError(t, err)
		r.ConfigMap(ns, "initial", map[string]string{"values.yaml": string(doc)})
		refs = append(refs, values.Reference{Kind: values.KindConfigMap, Name: "initial"})
	}
	for i, line := range c.Set {
		path, text, ok := splitSet(line)
		require.True(t, ok && path != "", "%q has no targetPath=text form: mark it skipped", line)
		switch mode {
		case "typed":
			require.False(t, isQuotedText(text), "%q: Flux would read the quoted text as --set-string", line)
		case "string":
			require.Equal(t, strings.Trim(text, `'"`), text, "%q: Flux trims every quote at the ends", line)
			text = `"` + text + `"`
		case "json", "literal":
			// json: a quoted text is a string in Flux (--set-string)
			// as a JSON string is in --set-json; the rest is typed.
		default:
			t.Fatalf("unknown mode %q", mode)
		}
		key := fmt.Sprintf("v%d", i)
		data[key] = text
		refs = append(refs, values.Reference{Kind: kind, Name: "peer", ValuesKey: key, TargetPath: path, Literal: mode == "literal"})
	}
	putObject(r, kind, "peer", data)
	res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/peer", Namespace: ns, From: refs})
	if kind == values.KindSecret && c.Secret != "" {
		require.ErrorIs(t, err, values.ErrTargetPath, "helmfleet refuses this Secret text")
		return
	}
	checkPeer(t, res, err, c.Want, c.WantErr, "")
}

func runFluxCase(t *testing.T, c peerSuiteCase) {
	r := valuestest.NewReader()
	for name, data := range c.ConfigMaps {
		r.ConfigMap(ns, name, data)
	}
	for name, data := range c.Secrets {
		putObject(r, values.KindSecret, name, data)
	}
	var refs []values.Reference
	for _, ref := range c.References {
		refs = append(refs, values.Reference{Kind: values.Kind(ref.Kind), Name: ref.Name, ValuesKey: ref.ValuesKey,
			TargetPath: ref.TargetPath, Optional: ref.Optional, Literal: ref.Literal})
	}
	res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/peer", Namespace: ns, From: refs, Inline: c.Values})
	if c.Difference != "" {
		require.NotEmpty(t, c.HelmfleetErr, "a documented difference says what helmfleet does")
		checkPeer(t, res, err, nil, true, c.HelmfleetErr)
		return
	}
	checkPeer(t, res, err, c.Want, c.WantErr, c.Reason)
}

func runFluxPath(t *testing.T, literal bool, c peerSuiteCase, kind values.Kind) {
	require.NotEmpty(t, c.Path)
	r := putObject(valuestest.NewReader(), kind, "peer", map[string]string{"v": c.Value})
	res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/peer", Namespace: ns,
		From: []values.Reference{{Kind: kind, Name: "peer", ValuesKey: "v", TargetPath: c.Path, Literal: literal}}})
	if kind == values.KindSecret && c.Secret != "" {
		require.ErrorIs(t, err, values.ErrTargetPath, "helmfleet refuses this Secret text")
		return
	}
	checkPeer(t, res, err, c.Want, c.WantErr, c.Reason)
}

func runFluxMerge(t *testing.T, c peerSuiteCase) {
	r := valuestest.NewReader()
	var refs []values.Reference
	for i, doc := range c.Merge {
		name := fmt.Sprintf("doc%d", i)
		r.ConfigMap(ns, name, map[string]string{"values.yaml": doc})
		refs = append(refs, values.Reference{Kind: values.KindConfigMap, Name: name})
	}
	res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/peer", Namespace: ns, From: refs})
	checkPeer(t, res, err, c.Want, c.WantErr, c.Reason)
}

func putObject(r *valuestest.Reader, kind values.Kind, name string, data map[string]string) *valuestest.Reader {
	if kind == values.KindConfigMap {
		return r.ConfigMap(ns, name, data)
	}
	b := make(map[string][]byte, len(data))
	for k, v := range data {
		b[k] = []byte(v)
	}
	return r.Secret(ns, name, b)
}

// isQuotedText is Flux's test for a text it reads with --set-string.
func isQuotedText(s string) bool {
	return strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) || strings.HasPrefix(s, "'") && strings.HasSuffix(s, "'")
}

// checkPeer compares a composition with a peer's answer the way Helm's and
// Flux's tests compare: the sigs.k8s.io/yaml form of both trees (so 1 and
// int64(1) agree, "1" and 1 do not).
func checkPeer(t *testing.T, res *values.Result, err error, want map[string]any, wantErr bool, reason string) {
	t.Helper()
	if wantErr {
		require.Error(t, err)
		require.Nil(t, res)
		if reason != "" {
			sentinel, ok := peerReasons[reason]
			require.True(t, ok, "unknown reason %q", reason)
			assert.True(t, errors.Is(err, sentinel), "want %v, got %v", sentinel, err)
		}
		return
	}
	require.NoError(t, err)
	if want == nil {
		want = map[string]any{}
	}
	w, err := yaml.Marshal(want)
	require.NoError(t, err)
	g, err := yaml.Marshal(res.Values)
	require.NoError(t, err)
	assert.Equal(t, string(w), string(g))
}

// fluxReplacePath applies a targetPath text the way fluxcd/pkg chartutil
// v1.27.1 does (ReplacePathValue, ReplacePathLiteralValue), with Helm's own
// strvals, whose v3.21.4 behaviour is v4.2.2's (Flux's).
func fluxReplacePath(data map[string]any, path, text string, literal bool) error {
	if literal {
		esc := strings.NewReplacer(`\`, `\\`, `,`, `\,`, `[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`)
		return strvals.ParseIntoString(path+"="+esc.Replace(text), data)
	}
	single := strings.HasPrefix(text, "'") && strings.HasSuffix(text, "'")
	double := strings.HasPrefix(text, `"`) && strings.HasSuffix(text, `"`)
	if single || double {
		return strvals.ParseIntoString(path+"="+strings.Trim(text, `'"`), data)
	}
	return strvals.ParseInto(path+"="+text, data)
}

// FuzzFluxTargetPath compares a ConfigMap's text at a targetPath, over a
// root document, with Flux's recipe run on Helm's parser: both fail, or both
// give the same values (compared as JSON: YAML refuses control characters). A Secret must give the same values whenever it is
// accepted.
func FuzzFluxTargetPath(f *testing.F) {
	for _, s := range [][2]string{{"a.b", "v"}, {"a.b[1].c", "8080"}, {`k\.x`, `"q"`}, {"l[0][2]", "{a,b}"}, {"s.x", "1"},
		{"n[0]", "x,"}, {`externalConfig.application\.yml.content`, "endpoints: [a,b,c]"}, {"a,b", "v"}, {"m.x[1].y", `a\,b`},
		{"a[0", "v"}, {"x", `"a'`}, {"x", `'`}, {"l[1]", ""}, {"a.b[1].x", ""}, {"x", `a\`}} {
		f.Add(s[0], s[1], false)
		f.Add(s[0], s[1], true)
	}
	base := "a: {b: x}\nl: [[p]]\ns: str\nm: {}\nn: null\n"
	f.Fuzz(func(t *testing.T, targetPath, text string, literal bool) {
		if targetPath == "" || len(targetPath)+len(text) > 256 || strings.ContainsRune(targetPath+text, utf8.RuneError) {
			return
		}
		want := map[string]any{}
		require.NoError(t, yaml.Unmarshal([]byte(base), &want))
		ferr := fluxReplacePath(want, targetPath, text, literal)
		compose := func(kind values.Kind) (*values.Result, error) {
			r := valuestest.NewReader().ConfigMap(ns, "base", map[string]string{"values.yaml": base})
			putObject(r, kind, "o", map[string]string{"k": text})
			return values.Compose(context.Background(), r, values.Request{Release: "apps/fuzz", Namespace: ns, From: []values.Reference{
				{Kind: values.KindConfigMap, Name: "base"},
				{Kind: kind, Name: "o", ValuesKey: "k", TargetPath: targetPath, Literal: literal}}})
		}
		res, err := compose(values.KindConfigMap)
		if err != nil && (strings.Contains(err.Error(), "lists grow by more than") || strings.Contains(err.Error(), "nested keys and indexes")) {
			return // helmfleet's own bounds
		}
		if ferr == nil && errors.Is(err, values.ErrTargetPath) && strings.Contains(err.Error(), "has an empty key, under which Helm's --set drops the value") {
			return // a documented difference: Flux drops the value in silence
		}
		require.Equal(t, ferr == nil, err == nil, "flux: %v, helmfleet: %v", ferr, err)
		if err != nil {
			return
		}
		w, merr := json.Marshal(want)
		require.NoError(t, merr)
		g, merr := json.Marshal(res.Values)
		require.NoError(t, merr)
		require.Equal(t, string(w), string(g))
		if sec, serr := compose(values.KindSecret); serr == nil {
			s, merr := json.Marshal(sec.Values)
			require.NoError(t, merr)
			if text != "" && (literal || strings.Trim(text, `'"`) != "") {
				require.Equal(t, string(w), string(s), "a Secret lands elsewhere than Flux puts it")
			}
		}
	})
}
