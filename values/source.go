package values

import (
	"fmt"
	"strconv"
	"strings"
)

// SourceKind says which part of a release a value came from.
type SourceKind string

// The kinds of sources, in the order Compose applies them.
const (
	// SourceFile is a chart valuesFiles entry (Request.Files).
	SourceFile SourceKind = "File"
	// SourceConfigMap is a valuesFrom ConfigMap reference.
	SourceConfigMap SourceKind = "ConfigMap"
	// SourceSecret is a valuesFrom Secret reference; its values are redacted.
	SourceSecret SourceKind = "Secret"
	// SourceInline is the release's inline values (Request.Inline).
	SourceInline SourceKind = "Inline"
	// SourceOverride is a per-cluster override (Request.Overrides).
	SourceOverride SourceKind = "Override"
	// SourcePolicy is an override policy that set part of the inline
	// values before they reached Compose (Request.InlineCredits); Name
	// says which policy, rule and overrider.
	SourcePolicy SourceKind = "Policy"
)

// Source identifies one input of a composition.
type Source struct {
	// Kind of the source.
	Kind SourceKind
	// Name is the file name, the ConfigMap or Secret name, the override
	// name, or the policy's description; empty for inline values.
	Name string
	// Key is the ConfigMap or Secret data key.
	Key string
	// TargetPath is the reference's targetPath, if any.
	TargetPath string
	// Index is the position in Request.Files, Request.From or
	// Request.Overrides.
	Index int
}

// Sensitive reports whether values from this source are redacted.
func (s Source) Sensitive() bool { return s.Kind == SourceSecret }

// String names the source the way errors and reports show it, e.g.
// `Secret/db[password] at db.password` or `file values-prod.yaml`.
func (s Source) String() string {
	switch s.Kind {
	case SourceFile:
		return "file " + strconv.Quote(s.Name)
	case SourceInline:
		return "inline values"
	case SourceOverride:
		return "override " + strconv.Quote(s.Name)
	case SourcePolicy:
		return s.Name
	case SourceConfigMap, SourceSecret:
		out := fmt.Sprintf("%s/%s[%s]", s.Kind, s.Name, s.Key)
		if s.TargetPath != "" {
			out += " at " + s.TargetPath
		}
		return out
	default:
		return fmt.Sprintf("%s/%s", s.Kind, s.Name)
	}
}

// segment is one step of a values path: a map key or a list index.
type segment struct {
	key     string
	index   int
	isIndex bool
}

// pathKeyEscapes are the characters escaped with a backslash in path keys, so
// that printed paths read back in Helm --set syntax. An empty key, which
// --set cannot express, prints as "" (a quote in a key is escaped).
const pathKeyEscapes = `\.[],="`

// emptyKey is how an empty map key prints in a path.
const emptyKey = `""`

// formatPath renders segments in Helm --set syntax: a.b[0].kubernetes\.io/role.
func formatPath(p []segment) string {
	var b strings.Builder
	for i, s := range p {
		if s.isIndex {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		if s.key == "" {
			b.WriteString(emptyKey)
			continue
		}
		for _, r := range s.key {
			if strings.ContainsRune(pathKeyEscapes, r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// parsePath reads a path printed by formatPath (the syntax Explain takes).
func parsePath(s string) ([]segment, error) {
	var out []segment
	var key strings.Builder
	haveKey := false
	flush := func() {
		if haveKey {
			out = append(out, segment{key: key.String()})
			key.Reset()
			haveKey = false
		}
	}
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("path %q ends with a backslash", s)
			}
			i++
			key.WriteRune(rs[i])
			haveKey = true
		case '.':
			flush()
		case '"':
			if i+1 < len(rs) && rs[i+1] == '"' && !haveKey {
				i++
				haveKey = true // the empty key
				continue
			}
			key.WriteRune(r)
			haveKey = true
		case '[':
			flush()
			j := i + 1
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("path %q: unterminated index", s)
			}
			n, err := strconv.Atoi(string(rs[i+1 : j]))
			if err != nil || n < 0 {
				return nil, fmt.Errorf("path %q: bad index %q", s, string(rs[i+1:j]))
			}
			out = append(out, segment{index: n, isIndex: true})
			i = j
		default:
			key.WriteRune(r)
			haveKey = true
		}
	}
	flush()
	return out, nil
}

// comparePaths orders paths segment by segment: keys lexically, indexes
// numerically, a key before an index, a prefix before its extensions.
func comparePaths(a, b []segment) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.isIndex != y.isIndex:
			if y.isIndex {
				return -1
			}
			return 1
		case x.isIndex:
			if x.index != y.index {
				if x.index < y.index {
					return -1
				}
				return 1
			}
		default:
			if c := strings.Compare(x.key, y.key); c != 0 {
				return c
			}
		}
	}
	return len(a) - len(b)
}

func appendKey(p []segment, k string) []segment {
	out := make([]segment, len(p), len(p)+1)
	copy(out, p)
	return append(out, segment{key: k})
}

func appendIndex(p []segment, i int) []segment {
	out := make([]segment, len(p), len(p)+1)
	copy(out, p)
	return append(out, segment{index: i, isIndex: true})
}
