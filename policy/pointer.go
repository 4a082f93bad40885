package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// parsePointer splits an RFC 6901 JSON pointer into unescaped tokens. The
// empty pointer (the whole document) is rejected: no overrider may replace a
// whole object.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, errors.New("empty JSON pointer")
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("JSON pointer %q does not start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if !strings.Contains(s, "~") {
			continue
		}
		for j := 0; j < len(s); j++ {
			if s[j] == '~' && (j+1 == len(s) || (s[j+1] != '0' && s[j+1] != '1')) {
				return nil, fmt.Errorf("JSON pointer %q has a bad escape in %q", p, s)
			}
		}
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

// escapeToken escapes one pointer token.
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// lookup resolves tokens in a document of maps and slices.
func lookup(doc any, tokens []string) (any, bool) {
	cur := doc
	for _, t := range tokens {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) || (len(t) > 1 && t[0] == '0') {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// pathPresent reports whether an operation at pointer p would find what it
// needs: the target itself for remove and replace, the parent for add.
func pathPresent(doc any, p string, op OverriderOperator) bool {
	tokens, err := parsePointer(p)
	if err != nil {
		return false
	}
	if op == OverriderOpAdd {
		parent, ok := lookup(doc, tokens[:len(tokens)-1])
		if !ok {
			return false
		}
		switch parent.(type) {
		case map[string]any:
			return true
		case []any:
			last := tokens[len(tokens)-1]
			if last == "-" {
				return true
			}
			_, ok := lookup(parent, []string{last})
			n, err := strconv.Atoi(last)
			return ok || (err == nil && n == len(parent.([]any)))
		}
		return false
	}
	_, ok := lookup(doc, tokens)
	return ok
}
