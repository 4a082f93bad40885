package values

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
)

// sameAsReadValues checks that decodeDocument gives what Helm's
// chartutil.ReadValues gives: both fail, or both succeed with equal trees.
func sameAsReadValues(t *testing.T, doc string) {
	t.Helper()
	if nonSpecificTag.MatchString(doc) {
		// yaml.v3 nodes do not keep the non-specific tag "!" (yaml.v2 makes
		// "! 1" a string, v3 an int); a known, documented difference.
		return
	}
	ours, derr := decodeDocument([]byte(doc), DefaultLimits())
	if derr != nil && derr.reason == ErrAliasLimit {
		return // helmfleet's own bound
	}
	theirs, herr := chartutil.ReadValues([]byte(doc))
	if herr == nil && !helmAgrees(doc, theirs) {
		// Helm has no single answer: two keys that differ in YAML ("!!0 0"
		// and "0") become one JSON key, and sigs.k8s.io/yaml keeps
		// whichever its map iteration meets last (seed ff9b68c0fdaf3062).
		return
	}
	if derr != nil && herr == nil && len(theirs) == 0 {
		// A documented difference: yaml.v2, under Helm, reads some
		// malformed documents as nothing at all (an anchor name with a
		// comma, then an unterminated quote: "&0, \"00"); we refuse them,
		// as an error beats values that vanish in silence.
		return
	}
	if derr != nil && derr.reason == ErrInvalidYAML && herr == nil && prefixReadsAs(doc, map[string]any(theirs)) {
		// The same documented difference: yaml.v2 stops reading after a
		// complete flow collection at the top ("{0},\"") and drops the
		// malformed rest, which yaml.v3's scanner reports. Helm's values
		// are then exactly what a prefix of the document reads as here.
		return
	}
	if (derr == nil) != (herr == nil) {
		t.Fatalf("doc %q: ours err=%v, helm err=%v", doc, derr, herr)
	}
	if derr == nil {
		require.Equal(t, map[string]any(theirs), ours, "doc %q", doc)
	}
}

// helmAgrees reports whether Helm's ReadValues gives want for doc every
// time, over a few more reads.
func helmAgrees(doc string, want chartutil.Values) bool {
	for range 8 {
		again, err := chartutil.ReadValues([]byte(doc))
		if err != nil || !reflect.DeepEqual(map[string]any(again), map[string]any(want)) {
			return false
		}
	}
	return true
}

// prefixReadsAs reports whether some proper prefix of doc decodes, here,
// to exactly want.
func prefixReadsAs(doc string, want map[string]any) bool {
	for i := len(doc) - 1; i > 0; i-- {
		if got, err := decodeDocument([]byte(doc[:i]), DefaultLimits()); err == nil && reflect.DeepEqual(got, want) {
			return true
		}
	}
	return false
}

var nonSpecificTag = regexp.MustCompile(`!(<!>)?([\s,\]\}]|$)`)

var yamlCorpus = []string{
	"", "null", "~", "a: 1", "a: yes\nb: off\nc: Y\nd: n", "a: 0x1F\nb: 0o17\nc: 017\nd: 0b101\ne: -0b11\nf: 1_000",
	"a: 1.5\nb: .5\nc: 1e3\nd: -.inf", "a: .nan", "a: 2001-12-14\nb: 2001-12-14T21:59:43.10-05:00",
	"a: !!str 3\nb: !!float 3\nc: !!int 3.5", "a: !!binary aGVsbG8=", "a: !custom x", "a: \"q\"\nb: 'yes'\nc: |\n  lit\n",
	"1: a\n2.5: b\ntrue: c", "? [a]\n: b", "? {a: 1}\n: b", "~: a", "a: &x {b: 1}\nc: *x", "a: &x [1, 2]\nb: *x",
	"base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  y: 3", "d:\n  y: 3\n  <<: {y: 4, z: 5}", "d:\n  <<: [{a: 1}, {a: 2, b: 2}]",
	"d:\n  <<: 1", "d:\n  '<<': {a: 1}", "a: b\na: c", "- a\n- b", "just a string", "a: [1, {b: c}]", "a:\n  - b: 1\n    c: 2",
	"a: 18446744073709551615", "a: 9223372036854775807", "a: -9223372036854775808", "a: 1e400", "a: +1", "a: -0",
	"a: \"\\xff\"", "a: b: c", "a:\n\tb: 1", "{a: 1", "--- \na: 1\n---\nb: 2", "a: 12345678901234567890123",
	"a: !!null ''", "a: !!bool yes", "a: !!bool 3", "a: !!timestamp 2001-01-01", "a: !!int 0b11", "x: &a 1\ny: *a\n*a : 2",
	"a: 1:2", "a: 0.", "a: 1_0.5", "a: +.5", "a: 0b", "a: 1__2", "a: -", "a: 0x_1", "a: 190:20:30", "'': empty",
}

func TestDecodeMatchesReadValues(t *testing.T) {
	for _, doc := range yamlCorpus {
		t.Run(doc, func(t *testing.T) { sameAsReadValues(t, doc) })
	}
}

func TestDecodeErrors(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n" +
		"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n" +
		"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n" +
		"e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n" +
		"f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	tests := []struct {
		name   string
		doc    string
		limits Limits
		reason error
		line   int
	}{
		{name: "syntax", doc: "a: 1\nb: [\n", reason: ErrInvalidYAML, line: 2},
		{name: "list at top", doc: "\n- a\n", reason: ErrNotMap, line: 2},
		{name: "scalar at top", doc: "invalid", reason: ErrNotMap, line: 1},
		{name: "bad tag", doc: "a: 1\nb: !!int x\n", reason: ErrInvalidYAML, line: 2},
		{name: "nan", doc: "a:\n  b: .nan\n", reason: ErrInvalidYAML, line: 2},
		{name: "map key", doc: "? [a]\n: b\n", reason: ErrInvalidYAML, line: 1},
		{name: "bad merge", doc: "a:\n  <<: 1\n", reason: ErrInvalidYAML, line: 2},
		{name: "alias bomb", doc: bomb, reason: ErrAliasLimit, line: 5},
		{name: "alias bomb small limit", doc: "a: &a [1, 2]\nb: [*a, *a, *a]\n", limits: Limits{MaxAliasNodes: 5}, reason: ErrAliasLimit, line: 2},
		{name: "too large", doc: "a: " + strings.Repeat("x", 100), limits: Limits{MaxDocumentBytes: 50}, reason: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeDocument([]byte(tt.doc), tt.limits.withDefaults())
			require.NotNil(t, err)
			assert.Equal(t, tt.reason, err.reason, err.Error())
			assert.Equal(t, tt.line, err.line, err.Error())
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, doc := range yamlCorpus {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if len(doc) > 512 {
			return
		}
		sameAsReadValues(t, doc)
		checkDetail(t, doc)
	})
}
