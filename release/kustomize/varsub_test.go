package kustomize

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// expandCases are ported from github.com/fluxcd/pkg envsubst/eval_test.go
// (TestExpand), commit e2cfd1a2d1815a81b3e77ef750e6528282ccccd6: inputs and
// expected outputs, every variable set (the lenient mapping).
var expandCases = []struct {
	params map[string]string
	input  string
	output string
}{
	{map[string]string{}, "abcdEFGH28ij", "abcdEFGH28ij"},
	{map[string]string{"var01": "abcdEFGH28ij"}, "${#var01}", "12"},
	{map[string]string{"var01": "abcdEFGH28ij"}, "${var01^}", "AbcdEFGH28ij"},
	{map[string]string{"var01": "abcdEFGH28ij"}, "${var01^^}", "ABCDEFGH28IJ"},
	{map[string]string{"var01": "ABCDEFGH28IJ"}, "${var01,}", "aBCDEFGH28IJ"},
	{map[string]string{"var01": "ABCDEFGH28IJ"}, "${var01,,}", "abcdefgh28ij"},
	{map[string]string{"path_name": "/home/bozo/ideas/thoughts.for.today"}, "${path_name:11}", "ideas/thoughts.for.today"},
	{map[string]string{"path_name": "/home/bozo/ideas/thoughts.for.today"}, "${path_name:11:5}", "ideas"},
	{map[string]string{"var": "abc"}, "${var=xyz}", "abc"},
	{map[string]string{}, "${var=xyz}", "xyz"},
	{map[string]string{"default_var": "foo"}, "something ${var=${default_var}}", "something foo"},
	{map[string]string{"default_var": "foo1"}, `foo: ${var=${default_var}-suffix}`, "foo: foo1-suffix"},
	{map[string]string{"default_var": "foo1"}, `foo: ${var=prefix${default_var}-suffix}`, "foo: prefixfoo1-suffix"},
	{map[string]string{}, "${var:=xyz}", "xyz"},
	{map[string]string{"stringZ": "abcABC123ABCabc"}, "${stringZ/%abc/XYZ}", "abcABC123ABCXYZ"},
	{map[string]string{"stringZ": "abcABC123ABCabc"}, "${stringZ/#abc/XYZ}", "XYZABC123ABCabc"},
	{map[string]string{"stringZ": "abcABC123ABCabc"}, "${stringZ//abc/xyz}", "xyzABC123ABCxyz"},
	{map[string]string{"stringZ": "abcABC123ABCabc"}, "${stringZ/abc/xyz}", "xyzABC123ABCabc"},
	{map[string]string{"filename": "bash.string.txt"}, "${filename#*.}", "string.txt"},
	{map[string]string{"filename": "path/to/file"}, "${filename#*/}", "to/file"},
	{map[string]string{"filename": "/path/to/file"}, "${filename#*/}", "path/to/file"},
	{map[string]string{"filename": "bash.string.txt"}, "${filename##*.}", "txt"},
	{map[string]string{"filename": "path/to/file"}, "${filename##*/}", "file"},
	{map[string]string{"filename": "/path/to/file"}, "${filename##*/}", "file"},
	{map[string]string{"filename": "bash.string.txt"}, "${filename%.*}", "bash.string"},
	{map[string]string{"filename": "bash.string.txt"}, "${filename%%.*}", "bash"},
	{map[string]string{"var01": "abcdEFGH28ij"}, "${var=${var01^^}}", "ABCDEFGH28IJ"},
	{map[string]string{"var01": "abcdEFGH28ij"}, "$${var01}", "${var01}"},
	{map[string]string{"var01": "abcdEFGH28ij"}, "some text ${var01}$${var$${var01}$var01${var01}", "some text abcdEFGH28ij${var${var01}$var01abcdEFGH28ij"},
	{map[string]string{"default_var": "foo"}, "something $${var=${default_var}}", "something ${var=foo}"},
	{map[string]string{"stringZ": "foo/bar"}, `${stringZ/\//-}`, "foo-bar"},
	{map[string]string{"stringZ": "foo/bar/baz"}, `${stringZ//\//-}`, "foo-bar-baz"},
	{map[string]string{"default_var": "foo"}, "\\\\something ${var=${default_var}}", "\\\\something foo"},
	{map[string]string{"stringZ": "foo.bar"}, `${stringZ/./}`, "foobar"},
	// From envsubst/parse/parse_test.go (text only): no escapes outside
	// expressions but "$$".
	{map[string]string{}, "}text", "}text"},
	{map[string]string{}, "http://github.com", "http://github.com"},
	{map[string]string{}, "$$string", "$string"},
	{map[string]string{}, `\\.\pipe\pipename`, `\\.\pipe\pipename`},
}

func TestSubstituteExpand(t *testing.T) {
	for _, tc := range expandCases {
		t.Run(tc.input, func(t *testing.T) {
			got, err := substitute(tc.input, func(s string) (string, bool) { return tc.params[s], true })
			require.NoError(t, err)
			assert.Equal(t, tc.output, got)
		})
	}
}

// TestSubstituteStrict: ported from envsubst/eval_test.go
// (TestExpandStrict), same commit: a variable that is not set is an error
// that names it, whatever function applies to it, unless the expression
// gives a default.
func TestSubstituteStrict(t *testing.T) {
	for _, tc := range []struct {
		params map[string]string
		input  string
		output string
		unset  string
	}{
		{map[string]string{}, "abcdEFGH28ij", "abcdEFGH28ij", ""},
		{map[string]string{"foo": "bar"}, "${foo}", "bar", ""},
		{map[string]string{"foo": ""}, "${foo}", "", ""},
		{map[string]string{}, "${missing}", "", "missing"},
		{map[string]string{"foo": "bar"}, "${missing:=default}", "default", ""},
		{map[string]string{}, "${#missing}", "", "missing"},
		{map[string]string{}, "${missing^}", "", "missing"},
		{map[string]string{}, "${missing^^}", "", "missing"},
		{map[string]string{}, "${missing,}", "", "missing"},
		{map[string]string{}, "${missing,,}", "", "missing"},
		{map[string]string{}, "${missing:0}", "", "missing"},
		{map[string]string{}, "${missing:0:10}", "", "missing"},
		{map[string]string{}, "${missing/pattern/replacement}", "", "missing"},
		{map[string]string{}, "${missing//pattern/replacement}", "", "missing"},
		{map[string]string{}, "${missing/#pattern/replacement}", "", "missing"},
		{map[string]string{}, "${missing/%pattern/replacement}", "", "missing"},
		{map[string]string{}, "${missing#pattern}", "", "missing"},
		{map[string]string{}, "${missing##pattern}", "", "missing"},
		{map[string]string{}, "${missing%pattern}", "", "missing"},
		{map[string]string{}, "${missing%%pattern}", "", "missing"},
		{map[string]string{}, "${missing:-fallback}", "fallback", ""},
		{map[string]string{}, "${missing:=assigned}", "assigned", ""},
		{map[string]string{}, "${missing=assigned}", "assigned", ""},
		// Ours: a nested unset variable in a default fails too.
		{map[string]string{"a": "x"}, "${a:=${b}}", "", "b"},
	} {
		t.Run(tc.input, func(t *testing.T) {
			got, err := substitute(tc.input, func(s string) (string, bool) {
				v, ok := tc.params[s]
				return v, ok
			})
			if tc.unset == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.output, got)
				return
			}
			var ue *UnsetError
			require.True(t, errors.As(err, &ue), "%v", err)
			assert.Equal(t, tc.unset, ue.Variable)
		})
	}
}

// TestSubstituteSyntaxErrors: expressions that do not parse are errors,
// with Flux's wording (envsubst/parse).
func TestSubstituteSyntaxErrors(t *testing.T) {
	for input, want := range map[string]error{
		"${":            errVariableName,
		"${}":           errVariableName,
		"${foo":         errMissingBrace,
		"${foo bar}":    errMissingBrace,
		"${foo-bar}":    errMissingBrace,
		"${foo:=bar":    errFuncSubstitution,
		"${foo/a}":      errBadSubstitution,
		"${#}":          errBadSubstitution,
		"x ${foo:1:2 y": errMissingBrace,
	} {
		t.Run(input, func(t *testing.T) {
			_, err := substitute(input, func(string) (string, bool) { return "v", true })
			assert.ErrorIs(t, err, want)
		})
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		match      bool
	}{
		{"*.txt", "a/b.txt", true},
		{"?.txt", "ab.txt", false},
		{"[ab]x", "bx", true},
		{"[!ab]x", "bx", false},
		{`\*x`, "*x", true},
		{`\*x`, "ax", false},
		{"é*", "été", true},
	} {
		re, err := globRegexp(tc.pattern)
		require.NoError(t, err)
		assert.Equal(t, tc.match, re.MatchString(tc.s), "%s ~ %s", tc.pattern, tc.s)
	}
}
