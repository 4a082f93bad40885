package source

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// jscan is a validating, allocation-free walk over a JSON document. It
// checks the grammar (not the UTF-8 or control characters inside strings)
// and hands back byte spans, so that only the values asked for get decoded.
type jscan struct {
	b   []byte
	i   int
	bad bool
}

func (s *jscan) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// str skips a string starting at s.i and returns its contents' span and
// whether it holds escapes.
func (s *jscan) str() (start, end int, escaped bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		s.bad = true
		return 0, 0, false
	}
	start = s.i + 1
	q := strEnd(s.b, start)
	if q < 0 {
		s.bad = true
		return 0, 0, false
	}
	s.i = q + 1
	return start, q, bytes.IndexByte(s.b[start:q], '\\') >= 0
}

// skip passes over one value without checking its grammar beyond string
// and bracket nesting: it is how the scanner leaves other charts' entries
// undecoded at memory speed.
func (s *jscan) skip() {
	b := s.b
	if s.i >= len(b) {
		s.bad = true
		return
	}
	switch b[s.i] {
	case '"':
		s.str()
		return
	case '{', '[':
	default:
		s.value()
		return
	}
	depth := 0
	for i := s.i; i < len(b); i++ {
		switch b[i] {
		case '"':
			end := strEnd(b, i+1)
			if end < 0 {
				s.bad = true
				return
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				s.i = i + 1
				return
			}
		}
	}
	s.bad = true
}

// strEnd returns the index of the quote closing a string whose contents
// start at start, or -1.
func strEnd(b []byte, start int) int {
	for p := start; ; {
		j := bytes.IndexByte(b[p:], '"')
		if j < 0 {
			return -1
		}
		q := p + j
		if b[q-1] != '\\' {
			return q
		}
		k := q
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q
		}
		p = q + 1
	}
}

// value skips one value of any kind, checking its grammar.
func (s *jscan) value() {
	s.ws()
	if s.i >= len(s.b) {
		s.bad = true
		return
	}
	switch c := s.b[s.i]; {
	case c == '"':
		s.str()
	case c == '{':
		s.object(func(int, int, bool) { s.value() })
	case c == '[':
		s.array(func() { s.value() })
	case c == 't':
		s.lit("true")
	case c == 'f':
		s.lit("false")
	case c == 'n':
		s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		s.number()
	default:
		s.bad = true
	}
}

func (s *jscan) lit(w string) {
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.bad = true
		return
	}
	s.i += len(w)
}

func (s *jscan) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

func (s *jscan) number() {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if s.digits() == 0 {
		s.bad = true
		return
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			s.bad = true
			return
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			s.bad = true
		}
	}
}

// object walks an object at s.i, calling member with each key's span; the
// callback must consume the value.
func (s *jscan) object(member func(ks, ke int, esc bool)) {
	s.i++ // '{'
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == '}' {
		s.i++
		return
	}
	for !s.bad {
		s.ws()
		ks, ke, esc := s.str()
		s.ws()
		if s.bad || s.i >= len(s.b) || s.b[s.i] != ':' {
			s.bad = true
			return
		}
		s.i++
		member(ks, ke, esc)
		if s.next('}') {
			return
		}
	}
}

// next consumes the "," between members or elements and reports true when
// it consumed the closing bracket instead.
func (s *jscan) next(closing byte) bool {
	s.ws()
	if s.i >= len(s.b) {
		s.bad = true
		return true
	}
	switch s.b[s.i] {
	case ',':
		s.i++
		return false
	case closing:
		s.i++
		return true
	}
	s.bad = true
	return true
}

// array walks an array at s.i, calling elem before each element; the
// callback must consume it.
func (s *jscan) array(elem func()) {
	s.i++ // '['
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return
	}
	for !s.bad {
		elem()
		if s.next(']') {
			return
		}
	}
}

// key returns the decoded text of a key span.
func (s *jscan) key(ks, ke int, esc bool) string {
	if !esc {
		return string(s.b[ks:ke])
	}
	var k string
	if err := json.Unmarshal(s.b[ks-1:ke+1], &k); err != nil {
		s.bad = true
	}
	return k
}

// keyIs compares a key span with an unescaped name without allocating.
func (s *jscan) keyIs(ks, ke int, esc bool, name string, fold bool) bool {
	if !esc {
		if fold {
			return strings.EqualFold(string(s.b[ks:ke]), name)
		}
		return string(s.b[ks:ke]) == name
	}
	k := s.key(ks, ke, esc)
	if fold {
		return strings.EqualFold(k, name)
	}
	return k == name
}

// scanJSON walks a JSON index, validating all of it and decoding only
// apiVersion and the array of chartName. Field names match the way
// encoding/json matches them (case-insensitively); a repeated key keeps its
// last value, as json.Unmarshal does. A document that is not valid JSON is
// handed to the full parse, which reads it as YAML like Helm does.
func scanJSON(doc []byte, chartName string) (*chartEntries, scanResult) {
	s := &jscan{b: doc}
	s.ws()
	if s.i >= len(doc) || doc[s.i] != '{' {
		return nil, scanUnsafe
	}
	var (
		api     string
		arr     = [2]int{-1, -1}
		typeErr bool
	)
	s.object(func(ks, ke int, esc bool) {
		s.ws()
		switch {
		case s.keyIs(ks, ke, esc, "apiVersion", true):
			vs := s.i
			s.value()
			if !s.bad && doc[vs] == '"' {
				if err := json.Unmarshal(doc[vs:s.i], &api); err != nil {
					s.bad = true
				}
			} else if !s.bad && doc[vs] == 'n' {
				api = ""
			} else {
				typeErr = true // not a string: json.Unmarshal would fail
			}
		case s.keyIs(ks, ke, esc, "entries", true):
			if s.i < len(doc) && doc[s.i] == '{' {
				s.object(func(ks, ke int, esc bool) {
					s.ws()
					if s.keyIs(ks, ke, esc, chartName, false) {
						vs := s.i
						s.value()
						arr = [2]int{vs, s.i}
						return
					}
					s.skip()
				})
				return
			}
			typeErr = s.i < len(doc) && doc[s.i] != 'n'
			s.value()
		default:
			s.value()
		}
	})
	s.ws()
	if s.bad || s.i != len(doc) {
		return nil, scanUnsafe
	}
	if api == "" || typeErr {
		return nil, scanUnsafe // the full parse reports the missing apiVersion
	}
	if arr[0] < 0 {
		return nil, scanNotFound
	}
	block := doc[arr[0]:arr[1]]
	if block[0] != '[' {
		return nil, scanUnsafe // null or a type error: the full parse decides
	}
	e := &chartEntries{name: chartName, format: formatJSON, block: append([]byte(nil), block...)}
	s = &jscan{b: e.block}
	s.array(func() {
		s.ws()
		start := s.i
		c := Candidate{}
		if s.i < len(s.b) && s.b[s.i] == '{' {
			s.object(func(ks, ke int, esc bool) {
				s.ws()
				vs := s.i
				s.value()
				if s.bad || c.Version == complexValue {
					return
				}
				switch {
				case s.keyIs(ks, ke, esc, "version", true):
					if err := json.Unmarshal(s.b[vs:s.i], &c.Version); err != nil {
						c.Version = complexValue
					}
				case s.keyIs(ks, ke, esc, "created", true):
					var t time.Time
					if err := json.Unmarshal(s.b[vs:s.i], &t); err != nil {
						c.Version = complexValue
					}
					c.Created = t
				}
			})
		} else {
			s.value()
			c.Version = complexValue // null or a type error: decode decides
		}
		e.items = append(e.items, [2]int{start, s.i})
		e.cands = append(e.cands, c)
	})
	if s.bad {
		return nil, scanUnsafe
	}
	return e, scanFound
}
