package source

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// jscan is a validating walk over a JSON document. It checks the grammar
// (not the UTF-8 or control characters inside strings) and hands back byte
// spans, so that only the values asked for get decoded.
//
// The document is either held in memory (r is nil and b is all of it) or
// read from r through a window: b holds the bytes not yet discarded, and a
// refill drops what lies before the read position (or before pin, while a
// value is being captured) and reads more, growing the window only when a
// captured value does not fit. Spans handed out are valid until the next
// read, so callers look at a key before they consume its value.
type jscan struct {
	b   []byte // the window: the document (in memory) or its unread tail
	i   int    // read position in b
	pin int    // first position of b a refill must keep, or -1
	bad bool

	// Streaming only.
	r     io.Reader
	buf   []byte     // backing array of b
	seen  *indexSums // hashes every chunk read, in order, when not nil
	total int64      // bytes read so far
	limit int64      // cap on total; 0 means none
	eof   bool
	err   error // a read error, or ErrTooLarge

	dup string // the path of the first key found twice in one object
}

// seenKey records key (raw, esc as object hands it) among the keys of one
// object, folded when fold; a key already there is a duplicate, noted in
// s.dup at path and reported true.
func (s *jscan) seenKey(keys map[string]bool, key []byte, esc, fold bool, path string) bool {
	k := string(key)
	if esc {
		q := make([]byte, 0, len(key)+2)
		q = append(append(append(q, '"'), key...), '"')
		if err := json.Unmarshal(q, &k); err != nil {
			s.bad = true
			return false
		}
	}
	name := k
	if fold {
		k = strings.ToLower(k)
	}
	if keys[k] {
		if s.dup == "" {
			s.dup = strictyaml.JoinPath(path, name)
		}
		return true
	}
	keys[k] = true
	return false
}

// newJSONScan returns a scanner over an in-memory document.
func newJSONScan(doc []byte) *jscan { return &jscan{b: doc, pin: -1} }

// fill reads more input into the window; false means there is none (the
// end of the document, or a read error in s.err).
func (s *jscan) fill() bool {
	if s.r == nil || s.eof || s.err != nil {
		return false
	}
	keep := s.i
	if s.pin >= 0 && s.pin < keep {
		keep = s.pin
	}
	// Compact when less than half the window is free, and grow it when a
	// pinned value keeps more than half of it.
	if half := (len(s.buf) + 1) / 2; len(s.buf)-len(s.b) < half {
		n := copy(s.buf, s.b[keep:])
		s.i -= keep
		if s.pin >= 0 {
			s.pin -= keep
		}
		if len(s.buf)-n < half {
			grown := make([]byte, 2*len(s.buf))
			copy(grown, s.buf[:n])
			s.buf = grown
		}
		s.b = s.buf[:n]
	}
	n := len(s.b)
	for {
		m, err := s.r.Read(s.buf[n:])
		if m > 0 {
			s.total += int64(m)
			if s.limit > 0 && s.total > s.limit {
				s.err = errTooLarge(s.limit)
				return false
			}
			if s.seen != nil {
				s.seen.Write(s.buf[n : n+m])
			}
			s.b = s.buf[:n+m]
			return true
		}
		if err == io.EOF {
			s.eof = true
			return false
		}
		if err != nil {
			s.err = err
			return false
		}
	}
}

// peek returns the byte at the read position, reading more when needed.
func (s *jscan) peek() (byte, bool) {
	if s.i >= len(s.b) && !s.fill() {
		return 0, false
	}
	return s.b[s.i], true
}

func (s *jscan) ws() {
	for {
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ' ', '\t', '\r', '\n':
				s.i++
			default:
				return
			}
		}
		if !s.fill() {
			return
		}
	}
}

// str skips a string starting at s.i and reports whether it holds escapes.
func (s *jscan) str() (esc bool) {
	if c, ok := s.peek(); !ok || c != '"' {
		s.bad = true
		return false
	}
	s.i++
	return s.strBody()
}

// strBody moves past the quote closing a string whose opening quote was
// consumed, stepping over each backslash and the byte it escapes, also when
// the pair is split between two reads.
func (s *jscan) strBody() (esc bool) {
	pending := false // the last read ended with a backslash
	for {
		if s.i >= len(s.b) && !s.fill() {
			s.bad = true
			return esc
		}
		b, i := s.b, s.i
		if pending {
			i++
			pending = false
		}
		for {
			if i = quoteOrBackslash(b, i); i >= len(b) {
				break
			}
			if b[i] == '"' {
				s.i = i + 1
				return esc
			}
			esc = true
			i += 2
		}
		if i > len(b) {
			pending, i = true, len(b)
		}
		s.i = i
	}
}

// Constants of the eight-bytes-at-a-time searches.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// quoteOrBackslash returns the index of the first '"' or '\\' in b at or
// after i, or len(b). It tests eight bytes at a time: x^c has a zero byte
// where x holds c, and (v-0x01…)&^v&0x80… flags the lowest zero byte of v
// exactly (borrows only disturb the bytes above it).
func quoteOrBackslash(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ ('"' * ones)
		e := x ^ ('\\' * ones)
		if m := ((q-ones)&^q | (e-ones)&^e) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b); i++ {
		if b[i] == '"' || b[i] == '\\' {
			return i
		}
	}
	return i
}

// skip passes over one value without checking its grammar beyond string
// and bracket nesting: it is how the scanner leaves other charts' entries
// undecoded at memory speed. It takes 64 bytes at a step (classify marks
// their quotes, backslashes and brackets, with AVX2 where the machine has
// it), keeps the strings' bytes out with a prefix parity of the unescaped
// quotes, and counts only the brackets outside strings; the last bytes of
// the window go one by one, with the same rules. A backslash escapes the
// byte after it, and a quote it escapes neither opens nor closes a string.
func (s *jscan) skip() {
	c, ok := s.peek()
	switch {
	case !ok:
		s.bad = true
		return
	case c == '"':
		s.str()
		return
	case c != '{' && c != '[':
		s.value()
		return
	}
	var (
		depth    int
		inString bool // at s.i
		carry    bool // the byte at s.i is escaped
		m        blockMasks
	)
	for {
		if s.i >= len(s.b) && !s.fill() {
			s.bad = true
			return
		}
		b, i := s.b, s.i
		for ; i+64 <= len(b); i += 64 {
			classify(b[i:i+64], &m)
			quotes, brackets := m.quote, m.open|m.close
			if m.backslash != 0 || carry {
				esc := escaped(m.backslash, &carry)
				quotes &^= esc
				brackets &^= esc
			}
			in := prefixXor(quotes)
			if inString {
				in = ^in
			}
			inString = in>>63 == 1
			for brackets &^= in; brackets != 0; brackets &= brackets - 1 {
				p := bits.TrailingZeros64(brackets)
				if m.open>>p&1 == 1 {
					depth++
					continue
				}
				if depth--; depth == 0 {
					s.i = i + p + 1
					return
				}
			}
		}
		for ; i < len(b); i++ {
			switch ch := b[i]; {
			case carry:
				carry = false
			case ch == '\\':
				carry = true
			case ch == '"':
				inString = !inString
			case inString:
			case ch == '{' || ch == '[':
				depth++
			case ch == '}' || ch == ']':
				if depth--; depth == 0 {
					s.i = i + 1
					return
				}
			}
		}
		s.i = i
	}
}

// value skips one value of any kind, checking its grammar.
func (s *jscan) value() {
	s.ws()
	c, ok := s.peek()
	switch {
	case !ok:
		s.bad = true
	case c == '"':
		s.str()
	case c == '{':
		s.object(func([]byte, bool) { s.value() })
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

// capture consumes one value and returns its bytes, valid until the next
// read.
func (s *jscan) capture() []byte {
	s.ws()
	outer := s.pin >= 0
	if !outer {
		s.pin = s.i
	}
	rel := s.i - s.pin
	s.value()
	v := s.b[s.pin+rel : s.i]
	if !outer {
		s.pin = -1
	}
	return v
}

func (s *jscan) lit(w string) {
	for len(s.b)-s.i < len(w) && s.fill() {
	}
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		s.bad = true
		return
	}
	s.i += len(w)
}

func (s *jscan) digits() int {
	n := 0
	for {
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		if s.i < len(s.b) || !s.fill() {
			return n
		}
	}
}

// is consumes the byte at s.i when it is one of set.
func (s *jscan) is(set string) bool {
	c, ok := s.peek()
	if ok && strings.IndexByte(set, c) >= 0 {
		s.i++
		return true
	}
	return false
}

func (s *jscan) number() {
	s.is("-")
	if !s.is("0") && s.digits() == 0 {
		s.bad = true
		return
	}
	if s.is(".") && s.digits() == 0 {
		s.bad = true
		return
	}
	if s.is("eE") {
		s.is("+-")
		if s.digits() == 0 {
			s.bad = true
		}
	}
}

// object walks an object at s.i, calling member with each key's raw text
// (valid until the callback reads on; esc says it holds escapes). The
// callback must consume the value.
func (s *jscan) object(member func(key []byte, esc bool)) {
	s.i++ // '{'
	s.ws()
	if s.is("}") {
		return
	}
	for !s.bad {
		s.ws()
		outer := s.pin >= 0
		if !outer {
			s.pin = s.i
		}
		rel := s.i - s.pin
		esc := s.str()
		end := s.i - 1 - s.pin
		if !s.bad {
			s.ws()
		}
		if s.bad || !s.is(":") {
			s.bad = true
			if !outer {
				s.pin = -1
			}
			return
		}
		key := s.b[s.pin+rel+1 : s.pin+end]
		if !outer {
			s.pin = -1
		}
		member(key, esc)
		if s.next('}') {
			return
		}
	}
}

// next consumes the "," between members or elements and reports true when
// it consumed the closing bracket instead.
func (s *jscan) next(closing byte) bool {
	s.ws()
	c, ok := s.peek()
	switch {
	case ok && c == ',':
		s.i++
		return false
	case ok && c == closing:
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
	if s.is("]") {
		return
	}
	for !s.bad {
		elem()
		if s.next(']') {
			return
		}
	}
}

// keyIs compares a key's raw text with an unescaped name; only escaped
// keys are decoded (and allocate).
func (s *jscan) keyIs(key []byte, esc bool, name string, fold bool) bool {
	if !esc {
		if fold {
			return len(key) == len(name) && strings.EqualFold(string(key), name)
		}
		return string(key) == name
	}
	q := make([]byte, 0, len(key)+2)
	q = append(append(append(q, '"'), key...), '"')
	var k string
	if err := json.Unmarshal(q, &k); err != nil {
		s.bad = true
		return false
	}
	if fold {
		return strings.EqualFold(k, name)
	}
	return k == name
}

// scanJSON walks a JSON index, validating all of it and decoding only
// apiVersion and the array of chartName. Field names match the way
// encoding/json matches them (case-insensitively); a repeated key keeps its
// last value, as json.Unmarshal does. A document that is not valid JSON is
// handed to the full parse, which reads it as YAML like Helm does. A
// streaming s is read to the end of its input; s.err says whether reading
// failed.
func scanJSON(s *jscan, chartName string) (*chartEntries, scanResult) {
	s.ws()
	if c, ok := s.peek(); !ok || c != '{' {
		return nil, scanUnsafe
	}
	var (
		api     string
		block   []byte
		found   bool
		typeErr bool
	)
	top := map[string]bool{}
	s.object(func(key []byte, esc bool) {
		if s.seenKey(top, key, esc, true, "") {
			s.bad = true // stop: the document is refused
			return
		}
		switch {
		case s.keyIs(key, esc, "apiVersion", true):
			v := s.capture()
			switch {
			case s.bad:
			case v[0] == '"':
				if err := json.Unmarshal(v, &api); err != nil {
					s.bad = true
				}
			case v[0] == 'n':
				api = ""
			default:
				typeErr = true // not a string: json.Unmarshal would fail
			}
		case s.keyIs(key, esc, "entries", true):
			s.ws()
			if c, ok := s.peek(); ok && c == '{' {
				charts := map[string]bool{}
				s.object(func(key []byte, esc bool) {
					if s.seenKey(charts, key, esc, false, "entries") {
						s.bad = true
						return
					}
					if s.keyIs(key, esc, chartName, false) {
						v := s.capture()
						block, found = append(block[:0], v...), true
						return
					}
					s.ws()
					s.skip()
				})
				return
			} else if ok {
				typeErr = c != 'n'
			}
			s.value()
		default:
			s.value()
		}
	})
	s.ws()
	if s.dup != "" {
		return &chartEntries{dup: s.dup}, scanDuplicate
	}
	if s.bad || s.err != nil || s.i != len(s.b) {
		return nil, scanUnsafe
	}
	if api == "" || typeErr {
		return nil, scanUnsafe // the full parse reports the missing apiVersion
	}
	if !found {
		return nil, scanNotFound
	}
	if block[0] != '[' {
		return nil, scanUnsafe // null or a type error: the full parse decides
	}
	return scanJSONEntries(block, chartName)
}

// scanJSONEntries reads the version and created fields of each element of
// a chart's array, which block holds.
func scanJSONEntries(block []byte, chartName string) (*chartEntries, scanResult) {
	e := &chartEntries{name: chartName, format: formatJSON, block: block}
	s := newJSONScan(block)
	s.array(func() {
		s.ws()
		start := s.i
		c := Candidate{}
		if s.i < len(s.b) && s.b[s.i] == '{' {
			var seenVersion, seenCreated bool
			s.object(func(key []byte, esc bool) {
				isVersion := s.keyIs(key, esc, "version", true)
				isCreated := !isVersion && s.keyIs(key, esc, "created", true)
				if (isVersion && seenVersion) || (isCreated && seenCreated) {
					// The entry's own decode would keep the last: refuse.
					field := "created"
					if isVersion {
						field = "version"
					}
					s.dup = fmt.Sprintf("%s[%d].%s", strictyaml.JoinPath("entries", chartName), len(e.items), field)
					s.bad = true
					return
				}
				seenVersion, seenCreated = seenVersion || isVersion, seenCreated || isCreated
				v := s.capture()
				if s.bad || c.Version == complexValue {
					return
				}
				switch {
				case isVersion:
					if err := json.Unmarshal(v, &c.Version); err != nil {
						c.Version = complexValue
					}
				case isCreated:
					var t time.Time
					if err := json.Unmarshal(v, &t); err != nil {
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
	if s.dup != "" {
		return &chartEntries{dup: s.dup}, scanDuplicate
	}
	if s.bad {
		return nil, scanUnsafe
	}
	return e, scanFound
}
