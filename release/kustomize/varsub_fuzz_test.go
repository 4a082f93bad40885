package kustomize

import (
	"errors"
	"strings"
	"testing"
)

// FuzzSubstitute: whatever the text and the variable's value, post-build
// substitution returns text or one of its errors (an *UnsetError or a
// syntax error in Flux's wording), never panics, leaves text without "$"
// as it is, and gives the same answer twice.
func FuzzSubstitute(f *testing.F) {
	for _, c := range expandCases {
		f.Add(c.input, c.params["var01"])
	}
	f.Add("${var01:-${missing}}", "x")
	f.Add("${var01/#*/${var01}}", "a*b")
	f.Add("${var01:9999999999999999999}", "abc")
	f.Add("${var01:-1:-1}", "abc")
	f.Add("${var01%%[}", "[[[")
	f.Add("${var01//?/${var01}}", strings.Repeat("x", 64))
	f.Add("${", "")
	f.Add("${#}", "")
	f.Fuzz(func(t *testing.T, text, value string) {
		lookup := func(name string) (string, bool) {
			if name == "var01" {
				return value, true
			}
			return "", false
		}
		got, err := substitute(text, lookup)
		again, err2 := substitute(text, lookup)
		if got != again || (err == nil) != (err2 == nil) {
			t.Fatalf("two answers for %q: %q/%v then %q/%v", text, got, err, again, err2)
		}
		if err != nil {
			var unset *UnsetError
			if !errors.As(err, &unset) && !errors.Is(err, errBadSubstitution) && !errors.Is(err, errMissingBrace) &&
				!errors.Is(err, errVariableName) && !errors.Is(err, errFuncSubstitution) {
				t.Fatalf("untyped error for %q: %T %v", text, err, err)
			}
			return
		}
		if !strings.Contains(text, "$") && got != text {
			t.Fatalf("text without $ changed: %q -> %q", text, got)
		}
	})
}
