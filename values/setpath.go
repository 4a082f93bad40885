package values

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Helm's bounds on --set lines (strvals.MaxIndex, strvals.MaxNestedNameLevel).
const (
	maxSetIndex     = 65536
	maxNestedLevels = 30
)

// helmfleet's own bounds, far above any real line, so that a hostile line
// such as a[65536][65536][65536]…=x cannot allocate without end (Helm's
// parser has no such bound).
const (
	maxListGrowth = 1 << 20 // list elements one line may create
	maxSetDepth   = 1000    // nested keys and indexes in one assignment
)

// setMode selects how an assigned text becomes a value.
type setMode int

const (
	setTyped   setMode = iota // helm --set: true, 1, null become typed values
	setString                 // helm --set-string
	setLiteral                // helm --set-literal: the rest of the line, verbatim
)

// Reference.Literal is Flux's literal, not setLiteral: Flux escapes the text
// and reads the line with setString, so that the path keeps --set's escapes
// (see assign). setLiteral remains to pin helm --set-literal itself, which
// the tests compare with Helm.

// assignFunc observes each assignment the interpreter makes: at path, the
// old value (if hadOld) is replaced by v. It feeds provenance.
type assignFunc func(path string, old any, hadOld bool, v any)

// setLine applies one Helm --set line ("a.b[0]=x,c=y") to data in place with
// the exact semantics of helm.sh/helm/v3/pkg/strvals (ParseInto,
// ParseIntoString, ParseLiteralInto), without panics. On error data may be
// partly changed. Errors never quote text after the first '=' of the line
// (the part that may come from a Secret).
func setLine(data map[string]any, line string, mode setMode, observe assignFunc) error {
	s := &setter{in: []rune(line), mode: mode, observe: observe}
	for {
		err := s.key(data, "", 0)
		if err == nil {
			continue
		}
		if err == io.EOF {
			return nil
		}
		return err
	}
}

type setter struct {
	in      []rune
	pos     int
	mode    setMode
	observe assignFunc
	valueAt int // position of the first '=' + 1; text from here is a value
	seenEq  bool
	grown   int // list elements created so far
	depth   int
}

func (s *setter) grow(from, to int) error {
	s.grown += to - from
	if s.grown > maxListGrowth {
		return fmt.Errorf("lists grow by more than %d elements", maxListGrowth)
	}
	return nil
}

// quote shows a key in an error unless it was read from the value part.
func (s *setter) quote(start int, text []rune) string {
	if s.seenEq && start >= s.valueAt {
		return "(in the value)"
	}
	return strconv.Quote(string(text))
}

func (s *setter) fail(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}

func (s *setter) read() (rune, bool) {
	if s.pos >= len(s.in) {
		return 0, false
	}
	r := s.in[s.pos]
	s.pos++
	return r, true
}

// until reads up to one of stop, honouring backslash escapes unless literal.
// It returns the text, the stop rune, and io.EOF when the input ended.
func (s *setter) until(stop string) ([]rune, rune, error) {
	var v []rune
	for {
		r, ok := s.read()
		if !ok {
			return v, 0, io.EOF
		}
		if strings.ContainsRune(stop, r) {
			if r == '=' && !s.seenEq {
				s.seenEq = true
				s.valueAt = s.pos
			}
			return v, r, nil
		}
		if r == '\\' && s.mode != setLiteral {
			next, ok := s.read()
			if !ok {
				return v, 0, io.EOF
			}
			v = append(v, next)
			continue
		}
		v = append(v, r)
	}
}

func (s *setter) set(data map[string]any, path, key string, v any) {
	if key == "" {
		return
	}
	old, had := data[key]
	data[key] = v
	if s.observe != nil {
		s.observe(childKey(path, key), old, had, v)
	}
}

func (s *setter) key(data map[string]any, path string, level int) error {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxSetDepth {
		return fmt.Errorf("more than %d nested keys and indexes", maxSetDepth)
	}
	stop := "=[,."
	if s.mode == setLiteral {
		stop = "=[."
	}
	start := s.pos
	k, last, err := s.until(stop)
	ks := string(k)
	switch {
	case err != nil:
		if len(k) == 0 {
			return err
		}
		return s.fail("key %s has no value", s.quote(start, k))
	case last == '[':
		i, err := s.index()
		if err != nil {
			return fmt.Errorf("error parsing index: %w", err)
		}
		list := []any{}
		if cur, ok := data[ks]; ok {
			l, ok := cur.([]any)
			if !ok {
				return s.fail("key %s is not a list", s.quote(start, k))
			}
			list = l
		}
		list, err = s.listItem(list, i, childKey(path, ks), level)
		if ks != "" {
			data[ks] = list
		}
		return err
	case last == '=':
		if s.mode == setLiteral {
			s.set(data, path, ks, string(s.rest()))
			return nil
		}
		vl, err := s.valList()
		switch {
		case err == nil:
			s.set(data, path, ks, vl)
			return nil
		case err == io.EOF:
			s.set(data, path, ks, "")
			return err
		case errors.Is(err, errNotList):
			s.set(data, path, ks, s.typed(s.val()))
			return nil
		default:
			return err
		}
	case last == ',':
		s.set(data, path, ks, "")
		return s.fail("key %s has no value (cannot end with ,)", s.quote(start, k))
	default: // '.'
		level++
		if level > maxNestedLevels {
			return s.fail("value name nested level is greater than maximum supported nested level of %d", maxNestedLevels)
		}
		inner := map[string]any{}
		if cur, ok := data[ks]; ok {
			m, ok := cur.(map[string]any)
			if !ok {
				return s.fail("key %s is not a map", s.quote(start, k))
			}
			inner = m
		}
		e := s.key(inner, childKey(path, ks), level)
		if e == nil && len(inner) == 0 {
			return s.fail("key map %s has no value", s.quote(start, k))
		}
		if len(inner) != 0 && ks != "" {
			data[ks] = inner
		}
		return e
	}
}

func (s *setter) index() (int, error) {
	v, _, err := s.until("]")
	if err != nil {
		return 0, err
	}
	i, err := strconv.Atoi(string(v))
	if err != nil {
		return 0, errors.New("index is not an integer")
	}
	return i, nil
}

func (s *setter) setIndex(list []any, i int, v any, path string) ([]any, error) {
	if i < 0 {
		return list, s.fail("negative %d index not allowed", i)
	}
	if i > maxSetIndex {
		return list, s.fail("index of %d is greater than maximum supported index of %d", i, maxSetIndex)
	}
	if len(list) <= i {
		if err := s.grow(len(list), i+1); err != nil {
			return list, err
		}
		grown := make([]any, i+1)
		copy(grown, list)
		if s.observe != nil {
			for j := len(list); j < i; j++ {
				s.observe(childIndex(path, j), nil, false, nil)
			}
		}
		list = grown
	}
	old := list[i]
	list[i] = v
	if s.observe != nil {
		s.observe(childIndex(path, i), old, true, v)
	}
	return list, nil
}

// setIndexContainer stores a list or map whose leaves were already observed.
func (s *setter) setIndexContainer(list []any, i int, v any, path string) ([]any, error) {
	if i > maxSetIndex {
		return list, s.fail("index of %d is greater than maximum supported index of %d", i, maxSetIndex)
	}
	if len(list) <= i {
		if err := s.grow(len(list), i+1); err != nil {
			return list, err
		}
		s.padObserve(list, i, path)
		grown := make([]any, i+1)
		copy(grown, list)
		list = grown
	}
	list[i] = v
	return list, nil
}

func (s *setter) listItem(list []any, i int, path string, level int) ([]any, error) {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxSetDepth {
		return list, fmt.Errorf("more than %d nested keys and indexes", maxSetDepth)
	}
	if i < 0 {
		return list, s.fail("negative %d index not allowed", i)
	}
	start := s.pos
	k, last, err := s.until("[.=")
	switch {
	case len(k) > 0:
		return list, s.fail("unexpected data at end of array index: %s", s.quote(start, k))
	case err != nil:
		return list, err
	case last == '=':
		if s.mode == setLiteral {
			return s.setIndex(list, i, string(s.rest()), path)
		}
		vl, err := s.valList()
		switch {
		case err == nil:
			return s.setIndex(list, i, vl, path)
		case err == io.EOF:
			return s.setIndex(list, i, "", path)
		case errors.Is(err, errNotList):
			return s.setIndex(list, i, s.typed(s.val()), path)
		default:
			return list, err
		}
	case last == '[':
		next, err := s.index()
		if err != nil {
			return list, fmt.Errorf("error parsing index: %w", err)
		}
		var cur []any
		if len(list) > i && list[i] != nil {
			l, ok := list[i].([]any)
			if !ok {
				return list, s.fail("element %d is not a list", i)
			}
			cur = l
		}
		inner, err := s.listItem(cur, next, childIndex(path, i), level)
		if err != nil {
			return list, err
		}
		return s.setIndexContainer(list, i, inner, path)
	default: // '.'
		inner := map[string]any{}
		if len(list) > i {
			m, ok := list[i].(map[string]any)
			if !ok {
				if s.observe != nil {
					s.observe(childIndex(path, i), list[i], true, map[string]any{})
				}
				list[i] = inner
			} else {
				inner = m
			}
		}
		if e := s.key(inner, childIndex(path, i), level); e != nil {
			return list, e
		}
		return s.setIndexContainer(list, i, inner, path)
	}
}

// padObserve reports the null elements a list grows by before index i.
func (s *setter) padObserve(list []any, i int, path string) {
	if s.observe == nil {
		return
	}
	for j := len(list); j < i; j++ {
		s.observe(childIndex(path, j), nil, false, nil)
	}
}

var errNotList = errors.New("not a list")

// valList reads a {a,b,c} list value; errNotList when the value is not one.
func (s *setter) valList() ([]any, error) {
	r, ok := s.read()
	if !ok {
		return []any{}, io.EOF
	}
	if r != '{' {
		s.pos--
		return []any{}, errNotList
	}
	list := []any{}
	for {
		rs, last, err := s.until(",}")
		switch {
		case err != nil:
			return list, errors.New("list must terminate with '}'")
		case last == '}':
			if r, ok := s.read(); ok && r != ',' {
				s.pos--
			}
			return append(list, s.typed(rs)), nil
		default:
			list = append(list, s.typed(rs))
		}
	}
}

func (s *setter) val() []rune {
	v, _, _ := s.until(",")
	return v
}

func (s *setter) rest() []rune {
	v := s.in[s.pos:]
	s.pos = len(s.in)
	return v
}

// typed is strvals' typedVal.
func (s *setter) typed(v []rune) any {
	val := string(v)
	if s.mode == setString {
		return val
	}
	switch {
	case strings.EqualFold(val, "true"):
		return true
	case strings.EqualFold(val, "false"):
		return false
	case strings.EqualFold(val, "null"):
		return nil
	case val == "0":
		return int64(0)
	}
	if len(val) != 0 && val[0] != '0' {
		if iv, err := strconv.ParseInt(val, 10, 64); err == nil {
			return iv
		}
	}
	return val
}

// Errors of parseValue. They are fixed text: the value may be a Secret's.
var (
	errOpenList        = errors.New("the value opens a {list} that is not closed")
	errMoreAssignments = errors.New(`the value holds an unescaped comma (or text after a {list}), which Helm --set would read as further assignments with keys taken from the value; escape the comma as \, or set literal`)
)

// parseValue reads text as the one value of a --set assignment in mode
// setTyped or setString, exactly as setLine reads what follows the '=': a
// {a,b} list, or a scalar up to an unescaped comma, with backslash escapes,
// typed as the mode types it; an empty text is the empty string. Where
// setLine would go on to read more assignments from the rest of the text,
// parseValue fails instead.
func parseValue(text string, mode setMode) (any, error) {
	s := &setter{in: []rune(text), mode: mode}
	var v any
	vl, err := s.valList()
	switch {
	case err == nil:
		v = vl
	case err == io.EOF:
		return "", nil
	case errors.Is(err, errNotList):
		v = s.typed(s.val())
	default:
		return nil, errOpenList
	}
	if s.pos < len(s.in) {
		return nil, errMoreAssignments
	}
	return v, nil
}

// setAt replaces the value at a printed path that exists in root and holds
// want; it reports whether it did.
func setAt(root map[string]any, path string, want, v any) bool {
	segs, err := parsePath(path)
	if err != nil || len(segs) == 0 {
		return false
	}
	var cur any = root
	for i, s := range segs {
		last := i == len(segs)-1
		switch x := cur.(type) {
		case map[string]any:
			old, ok := x[s.key]
			if s.isIndex || !ok {
				return false
			}
			if last {
				if old != want {
					return false
				}
				x[s.key] = v
				return true
			}
			cur = old
		case []any:
			if !s.isIndex || s.index >= len(x) {
				return false
			}
			if last {
				if x[s.index] != want {
					return false
				}
				x[s.index] = v
				return true
			}
			cur = x[s.index]
		default:
			return false
		}
	}
	return false
}
