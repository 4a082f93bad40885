package drift

import (
	"strings"
	"unicode/utf8"
)

// Pointer is a parsed RFC 6901 JSON pointer: its reference tokens with the
// escapes ~0 and ~1 resolved. The empty Pointer refers to the whole
// document.
type Pointer []string

// ParsePointer parses an RFC 6901 JSON pointer. The empty string is the
// whole document; any other pointer starts with "/", and "~" is only valid
// as "~0" (a literal "~") or "~1" (a literal "/").
func ParsePointer(s string) (Pointer, error) {
	if s == "" {
		return Pointer{}, nil
	}
	if s[0] != '/' {
		return nil, &PointerError{Pointer: s, Offset: 0, Reason: `must be empty or start with "/"`}
	}
	if !utf8.ValidString(s) {
		return nil, &PointerError{Pointer: s, Offset: invalidUTF8Offset(s), Reason: "not valid UTF-8"}
	}
	p := make(Pointer, 0, strings.Count(s, "/"))
	start := 1
	for i := 1; i <= len(s); i++ {
		if i < len(s) && s[i] != '/' {
			continue
		}
		tok, err := unescapeToken(s, start, i)
		if err != nil {
			return nil, err
		}
		p = append(p, tok)
		start = i + 1
	}
	return p, nil
}

func unescapeToken(s string, from, to int) (string, error) {
	raw := s[from:to]
	if strings.IndexByte(raw, '~') < 0 {
		return raw, nil
	}
	var b strings.Builder
	b.Grow(len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '~' {
			b.WriteByte(c)
			continue
		}
		if i+1 >= len(raw) {
			return "", &PointerError{Pointer: s, Offset: from + i, Reason: `"~" must be followed by "0" or "1"`}
		}
		switch raw[i+1] {
		case '0':
			b.WriteByte('~')
		case '1':
			b.WriteByte('/')
		default:
			return "", &PointerError{Pointer: s, Offset: from + i, Reason: `"~" must be followed by "0" or "1"`}
		}
		i++
	}
	return b.String(), nil
}

func invalidUTF8Offset(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return i
			}
		}
	}
	return 0
}

// String returns the pointer in RFC 6901 text form, escaping "~" and "/".
func (p Pointer) String() string {
	var b strings.Builder
	for _, tok := range p {
		b.WriteByte('/')
		writeEscaped(&b, tok)
	}
	return b.String()
}

func writeEscaped(b *strings.Builder, tok string) {
	if strings.IndexAny(tok, "~/") < 0 {
		b.WriteString(tok)
		return
	}
	for i := 0; i < len(tok); i++ {
		switch tok[i] {
		case '~':
			b.WriteString("~0")
		case '/':
			b.WriteString("~1")
		default:
			b.WriteByte(tok[i])
		}
	}
}

// pathNode is one node of a trie of ignored pointers. A node marked ignored
// hides itself and everything below it; children lead to deeper pointers.
type pathNode struct {
	ignored  bool
	children map[string]*pathNode
}

// child returns the node for the token under n, or nil when nothing below
// that token is ignored. It is safe on a nil receiver.
func (n *pathNode) child(tok string) *pathNode {
	if n == nil || n.children == nil {
		return nil
	}
	return n.children[tok]
}

// add marks p as ignored below n.
func (n *pathNode) add(p Pointer) {
	cur := n
	for _, tok := range p {
		if cur.ignored {
			return
		}
		next := cur.children[tok]
		if next == nil {
			if cur.children == nil {
				cur.children = make(map[string]*pathNode)
			}
			next = &pathNode{}
			cur.children[tok] = next
		}
		cur = next
	}
	cur.ignored = true
	cur.children = nil
}
