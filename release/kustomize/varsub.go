package kustomize

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file is helmfleet's own implementation of the variable syntax of
// Flux's post-build substitution (github.com/fluxcd/pkg/envsubst, a fork
// of drone/envsubst), written from its documentation and behaviour:
//
//	${var}                    the value; an error when var is not set
//	$${var}                   the text ${var} ($$ is a literal $)
//	${var:=default} ${var=default} ${var:-default}
//	                          default when var is unset or empty
//	${#var}                   length in bytes
//	${var^} ${var^^} ${var,} ${var,,}
//	                          upper or lower case, first or all
//	${var:n} ${var:n:len}     substring (n < 0 counts from the end)
//	${var#glob} ${var##glob}  strip the shortest or longest prefix match
//	${var%glob} ${var%%glob}  strip the shortest or longest suffix match
//	${var/a/b} ${var//a/b} ${var/#a/b} ${var/%a/b}
//	                          replace first, all, prefix, suffix
//
// A default may hold further ${…} expressions; every argument is
// evaluated before the function, so an unset variable in an unused
// default is an error too, as in Flux. A "$" not followed by "{" or "$"
// is text.

// Errors of the expression syntax, with Flux's wording.
var (
	errBadSubstitution  = errors.New("bad substitution")
	errMissingBrace     = errors.New("missing closing brace")
	errVariableName     = errors.New("unable to parse variable name")
	errFuncSubstitution = errors.New("unable to parse substitution within function")
)

// UnsetError is a variable that an expression uses without a default
// and that no source sets.
type UnsetError struct {
	// Variable is the variable's name.
	Variable string
}

func (e *UnsetError) Error() string {
	return fmt.Sprintf("variable %q is not set and has no default", e.Variable)
}

// node is a parsed piece of a text: literal text, or an expression.
type node struct {
	text  string // for a literal
	expr  bool
	fn    string // "", ":=", "#", "^^", "/", ":", …
	param string // the variable
	args  [][]node
}

// parser reads one text.
type parser struct {
	s   string
	pos int
}

func (p *parser) peek() rune {
	if p.pos >= len(p.s) {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
	return r
}

func (p *parser) next() rune {
	r := p.peek()
	if r >= 0 {
		_, w := utf8.DecodeRuneInString(p.s[p.pos:])
		p.pos += w
	}
	return r
}

func (p *parser) at(prefix string) bool { return strings.HasPrefix(p.s[p.pos:], prefix) }

// parseText parses a whole text: literals, "$$" escapes and expressions.
func parseText(s string) ([]node, error) {
	p := &parser{s: s}
	var out []node
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, node{text: lit.String()})
			lit.Reset()
		}
	}
	for p.pos < len(p.s) {
		switch {
		case p.at("${"):
			flush()
			p.pos += 2
			n, err := p.expr()
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		case p.at("$$"):
			lit.WriteByte('$')
			p.pos += 2
		default:
			// Literal text is copied byte for byte, so bytes that are
			// not UTF-8 pass through unchanged.
			lit.WriteByte(p.s[p.pos])
			p.pos++
		}
	}
	flush()
	return out, nil
}

func isIdent(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' }

// expr parses an expression after its "${".
func (p *parser) expr() (node, error) {
	n := node{expr: true}
	if p.peek() == '#' {
		p.next()
		n.fn = "#"
		n.param = p.ident()
		if n.param == "" {
			return n, errBadSubstitution
		}
		return n, p.close()
	}
	n.param = p.ident()
	if n.param == "" {
		return n, errVariableName
	}
	switch r := p.peek(); r {
	case '}':
		p.next()
		return n, nil
	case ':':
		p.next()
		if c := p.peek(); c == '=' || c == '-' || c == '?' || c == '+' {
			p.next()
			n.fn = ":" + string(c)
			return n, p.defaultArgs(&n)
		}
		n.fn = ":"
		a, err := p.param(func(r rune) bool { return r != ':' && r != '}' }, false)
		if err != nil {
			return n, err
		}
		n.args = append(n.args, a)
		switch p.next() {
		case '}':
			return n, nil
		case ':':
		default:
			return n, errBadSubstitution
		}
		if a, err = p.param(func(r rune) bool { return r != '}' }, false); err != nil {
			return n, err
		}
		n.args = append(n.args, a)
		return n, p.close()
	case '=':
		p.next()
		n.fn = "="
		return n, p.defaultArgs(&n)
	case ',', '^':
		n.fn = p.run(2, func(r rune) bool { return r == ',' || r == '^' })
		return n, p.close()
	case '#', '%':
		n.fn = p.run(2, func(c rune) bool { return c == r })
		a, err := p.param(func(r rune) bool { return r != '}' }, false)
		if err != nil {
			return n, err
		}
		n.args = append(n.args, a)
		return n, p.close()
	case '/':
		p.next()
		n.fn = "/"
		if c := p.peek(); c == '/' || c == '#' || c == '%' {
			p.next()
			n.fn += string(c)
		}
		a, err := p.param(func(r rune) bool { return r != '/' }, true)
		if err != nil {
			return n, err
		}
		n.args = append(n.args, a)
		if p.next() != '/' {
			return n, errBadSubstitution
		}
		if p.peek() == '}' {
			p.next()
			return n, nil
		}
		if a, err = p.param(func(r rune) bool { return r != '}' }, true); err != nil {
			return n, err
		}
		n.args = append(n.args, a)
		return n, p.close()
	}
	return n, errMissingBrace
}

// ident reads a variable name: letters, digits and underscores.
func (p *parser) ident() string {
	start := p.pos
	for r := p.peek(); r >= 0 && isIdent(r); r = p.peek() {
		p.next()
	}
	return p.s[start:p.pos]
}

// run reads up to max runes that ok accepts.
func (p *parser) run(max int, ok func(rune) bool) string {
	start := p.pos
	for i := 0; i < max && p.peek() >= 0 && ok(p.peek()); i++ {
		p.next()
	}
	return p.s[start:p.pos]
}

func (p *parser) close() error {
	if p.next() != '}' {
		return errMissingBrace
	}
	return nil
}

// defaultArgs reads a default up to its closing brace: text and nested
// expressions.
func (p *parser) defaultArgs(n *node) error {
	for {
		switch p.peek() {
		case '}':
			p.next()
			return nil
		case -1:
			return errFuncSubstitution
		}
		a, err := p.param(func(r rune) bool { return r != '}' }, false)
		if err != nil {
			return err
		}
		n.args = append(n.args, a)
	}
}

// param reads one argument: a nested expression, or text that ok
// accepts up to the next "${". With escapes, "$$", `\/` and `\\` stand for
// "$", "/" and `\`.
func (p *parser) param(ok func(rune) bool, escapes bool) ([]node, error) {
	if p.at("${") {
		p.pos += 2
		n, err := p.expr()
		return []node{n}, err
	}
	var b strings.Builder
	for p.pos < len(p.s) && !p.at("${") {
		if escapes && (p.at("$$") || p.at(`\/`) || p.at(`\\`)) {
			p.pos++
			b.WriteRune(p.next())
			continue
		}
		r := p.peek()
		if !ok(r) {
			break
		}
		b.WriteRune(p.next())
	}
	if b.Len() == 0 {
		return nil, errFuncSubstitution
	}
	return []node{{text: b.String()}}, nil
}

// lookupFunc looks a variable up: its value and whether it is set.
type lookupFunc func(name string) (string, bool)

// eval evaluates parsed nodes.
func eval(nodes []node, lookup lookupFunc) (string, error) {
	var b strings.Builder
	for _, n := range nodes {
		if !n.expr {
			b.WriteString(n.text)
			continue
		}
		args := make([]string, len(n.args))
		for i, a := range n.args {
			v, err := eval(a, lookup)
			if err != nil {
				return "", err
			}
			args[i] = v
		}
		v, set := lookup(n.param)
		if !set && !isDefault(n.fn) {
			return "", &UnsetError{Variable: n.param}
		}
		b.WriteString(apply(n.fn, v, args))
	}
	return b.String(), nil
}

func isDefault(fn string) bool {
	switch fn {
	case "=", ":=", ":-", ":?", ":+":
		return true
	}
	return false
}

// apply runs the function fn of an expression on the value v.
func apply(fn, v string, args []string) string {
	switch fn {
	case "":
		return v
	case ",":
		return firstRune(v, unicode.ToLower)
	case ",,":
		return strings.ToLower(v)
	case "^":
		return firstRune(v, unicode.ToUpper)
	case "^^":
		return strings.ToUpper(v)
	case "#":
		if len(args) == 0 {
			return strconv.Itoa(len(v))
		}
		return trimPrefix(v, args[0], false)
	case "##":
		return trimPrefix(v, args[0], true)
	case "%":
		return reverse(trimPrefix(reverse(v), reverse(args[0]), false))
	case "%%":
		return reverse(trimPrefix(reverse(v), reverse(args[0]), true))
	case ":":
		return substring(v, args)
	case "/", "//":
		from, to := args[0], ""
		if len(args) > 1 {
			to = args[1]
		}
		n := 1
		if fn == "//" {
			n = -1
		}
		return strings.Replace(v, from, to, n)
	case "/#":
		if len(args) == 2 && strings.HasPrefix(v, args[0]) {
			return args[1] + v[len(args[0]):]
		}
		return v
	case "/%":
		if len(args) == 2 && strings.HasSuffix(v, args[0]) {
			return v[:len(v)-len(args[0])] + args[1]
		}
		return v
	}
	// Defaults, and case runs such as ",^": the value, or the default
	// when the value is empty.
	if v == "" && len(args) > 0 {
		return strings.Join(args, "")
	}
	return v
}

func firstRune(s string, f func(rune) rune) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return string(f(r)) + s[n:]
}

// substring is ${v:pos} and ${v:pos:len}, in bytes; a position or length
// that is no number leaves v as it is.
func substring(v string, args []string) string {
	pos, err := strconv.Atoi(args[0])
	if err != nil {
		return v
	}
	if pos < 0 {
		pos = max(len(v)+pos, 0)
	}
	if pos >= len(v) {
		return ""
	}
	if len(args) == 1 {
		return v[pos:]
	}
	n, err := strconv.Atoi(args[1])
	if err != nil {
		return v
	}
	if pos+n >= len(v) {
		return v[pos:]
	}
	return v[pos : pos+n]
}

// trimPrefix strips the shortest (or longest) prefix of v that the glob
// pattern matches; a bad pattern leaves v as it is.
func trimPrefix(v, pattern string, longest bool) string {
	re, err := globRegexp(pattern)
	if err != nil {
		return v
	}
	match := -1
	for end := len(v); end > 0; end-- {
		if re.MatchString(v[:end]) {
			match = end
			if longest {
				break
			}
		}
	}
	if match < 0 {
		return v
	}
	return v[match:]
}

// globRegexp compiles a shell pattern as bash matches it in parameter
// expansion: "*" any text (slashes too), "?" any character, "[…]" a
// class ("[!…]" or "[^…]" negated), "\" quoting the next character.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(pattern)
	for i := 0; i < len(rs); i++ {
		switch c := rs[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 < len(rs) {
				i++
			}
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			end := slices.Index(rs[i+1:], ']')
			if end < 0 {
				return nil, errors.New("unterminated class")
			}
			class := string(rs[i+1 : i+1+end])
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += end + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString(`)$`)
	return regexp.Compile(b.String())
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// substitute evaluates the expressions of text.
func substitute(text string, lookup lookupFunc) (string, error) {
	nodes, err := parseText(text)
	if err != nil {
		return "", err
	}
	return eval(nodes, lookup)
}
