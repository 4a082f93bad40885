package values

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"
)

// docError is a decoding failure before the source is known.
//
// detail is built only from this package's own words and the document's
// structure (kinds of nodes, tags, counts), never from its text, so it may be
// shown for a Secret. quoted, when set, is a fuller message that may quote
// the text (a parser's message, a scalar): it is shown only for sources that
// are not Secrets.
type docError struct {
	line   int
	reason error
	detail string
	quoted string
}

func (e *docError) Error() string { return e.reason.Error() + ": " + e.message(false) }

// message is the detail to show: the quoting one only when not secret.
func (e *docError) message(secret bool) string {
	if !secret && e.quoted != "" {
		return e.quoted
	}
	return e.detail
}

// decodeDocument parses one YAML values document into the exact tree Helm's
// chartutil.ReadValues gives (sigs.k8s.io/yaml: YAML 1.1 scalars such as yes
// and on are booleans, numbers are float64, keys become strings), but with
// lines in errors and bounds on size and alias expansion.
func decodeDocument(data []byte, lim Limits) (map[string]any, *docError) {
	if len(data) > lim.MaxDocumentBytes {
		return nil, &docError{reason: ErrTooLarge, detail: fmt.Sprintf("%d bytes, limit %d", len(data), lim.MaxDocumentBytes)}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(err)
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return map[string]any{}, nil
	}
	d := &decoder{limit: lim.MaxAliasNodes}
	root := doc.Content[0]
	v, err := d.value(root)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return x, nil
	default:
		return nil, &docError{line: root.Line, reason: ErrNotMap, detail: "found " + kindName(root)}
	}
}

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlProblems are the yaml.v3 parser and scanner problems that are fixed
// text. A Secret's syntax error shows the problem only when it is one of
// these (the entry of this table is printed, not the parser's message);
// any other problem, such as "unknown anchor 'x' referenced", which quotes
// the document, shows as syntaxProblem.
var yamlProblems = func() map[string]string {
	m := map[string]string{}
	for _, p := range []string{
		"block sequence entries are not allowed in this context",
		"could not find expected ':'",
		"could not find expected directive name",
		"did not find expected ',' or ']'",
		"did not find expected ',' or '}'",
		"did not find expected '-' indicator",
		"did not find expected <document start>",
		"did not find expected <stream-start>",
		"did not find expected alphabetic or numeric character",
		"did not find expected comment or line break",
		"did not find expected digit or '.' character",
		"did not find expected hexdecimal number",
		"did not find expected key",
		"did not find expected node content",
		"did not find expected version number",
		"did not find expected whitespace",
		"did not find expected whitespace or line break",
		"did not find the expected '>'",
		"found a tab character that violates indentation",
		"found a tab character where an indentation space is expected",
		"found an indentation indicator equal to 0",
		"found character that cannot start any token",
		"found duplicate %TAG directive",
		"found duplicate %YAML directive",
		"found extremely long version number",
		"found incompatible YAML document",
		"found invalid Unicode character escape code",
		"found undefined tag handle",
		"found unexpected document indicator",
		"found unexpected end of stream",
		"found unexpected non-alphabetical character",
		"found unknown directive name",
		"found unknown escape character",
		"mapping keys are not allowed in this context",
		"mapping values are not allowed in this context",
	} {
		m[p] = p
	}
	return m
}()

// syntaxProblem is the detail of a syntax error whose problem is not one of
// yamlProblems.
const syntaxProblem = "the text is not valid YAML"

// syntaxError turns a yaml.v3 error into a docError. Only the line number
// (digits) and, through yamlProblems, a fixed problem text go into detail.
func syntaxError(err error) *docError {
	msg := err.Error()
	line, problem := 0, strings.TrimPrefix(msg, "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		problem = m[2]
	}
	detail, ok := yamlProblems[problem]
	if !ok {
		detail = syntaxProblem
	}
	return &docError{line: line, reason: ErrInvalidYAML, detail: detail, quoted: problem}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a scalar"
	case yaml.AliasNode:
		return "an alias to " + kindName(n.Alias)
	default:
		return "a node"
	}
}

type decoder struct {
	limit   int
	aliased int        // nodes produced through aliases so far
	outer   *yaml.Node // the outermost alias being expanded, if any
}

func (d *decoder) value(n *yaml.Node) (any, *docError) {
	if d.outer != nil {
		d.aliased++
		if d.aliased > d.limit {
			return nil, &docError{line: d.outer.Line, reason: ErrAliasLimit, detail: fmt.Sprintf("more than %d nodes", d.limit)}
		}
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0])
	case yaml.AliasNode:
		defer d.expand(n)()
		return d.value(n.Alias)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		if err := d.mapping(n, m); err != nil {
			return nil, err
		}
		return m, nil
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		for i, c := range n.Content {
			v, err := d.value(c)
			if err != nil {
				return nil, err
			}
			l[i] = v
		}
		return l, nil
	case yaml.ScalarNode:
		v, err := scalar(n)
		if err != nil {
			return nil, err
		}
		return jsonable(v, n)
	}
	return nil, &docError{line: n.Line, reason: ErrInvalidYAML, detail: "unknown node"}
}

// expand notes that an alias is being expanded and returns the undo.
func (d *decoder) expand(n *yaml.Node) func() {
	if d.outer != nil {
		return func() {}
	}
	d.outer = n
	return func() { d.outer = nil }
}

func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Tag == "!!merge" &&
		k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
}

// mapping fills m from a mapping node; merge keys (<<) apply where they stand,
// later keys win, as in yaml.v2.
func (d *decoder) mapping(n *yaml.Node, m map[string]any) *docError {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if isMerge(k) {
			if err := d.merge(v, m); err != nil {
				return err
			}
			continue
		}
		key, err := d.key(k)
		if err != nil {
			return err
		}
		val, err := d.value(v)
		if err != nil {
			return err
		}
		m[key] = val
	}
	return nil
}

func (d *decoder) merge(v *yaml.Node, m map[string]any) *docError {
	wantMap := &docError{line: v.Line, reason: ErrInvalidYAML, detail: "map merge requires map or sequence of maps as the value"}
	switch v.Kind {
	case yaml.MappingNode:
		return d.mapping(v, m)
	case yaml.AliasNode:
		if v.Alias.Kind != yaml.MappingNode {
			return wantMap
		}
		defer d.expand(v)()
		return d.mapping(v.Alias, m)
	case yaml.SequenceNode:
		for i := len(v.Content) - 1; i >= 0; i-- {
			c := v.Content[i]
			switch {
			case c.Kind == yaml.AliasNode && c.Alias.Kind == yaml.MappingNode:
				undo := d.expand(c)
				err := d.mapping(c.Alias, m)
				undo()
				if err != nil {
					return err
				}
			case c.Kind == yaml.MappingNode:
				if err := d.mapping(c, m); err != nil {
					return err
				}
			default:
				return wantMap
			}
		}
		return nil
	}
	return wantMap
}

// key converts a mapping key the way sigs.k8s.io/yaml does.
func (d *decoder) key(k *yaml.Node) (string, *docError) {
	n := k
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", &docError{line: k.Line, reason: ErrInvalidYAML, detail: "invalid map key: " + kindName(n)}
	}
	v, err := scalar(n)
	if err != nil {
		return "", err
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		s := strconv.FormatFloat(x, 'g', -1, 32)
		switch s {
		case "+Inf":
			s = ".inf"
		case "-Inf":
			s = "-.inf"
		case "NaN":
			s = ".nan"
		}
		return s, nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", &docError{line: k.Line, reason: ErrInvalidYAML, detail: fmt.Sprintf("unsupported map key of type %T", v)}
}

const (
	tagStr       = "!!str"
	tagBool      = "!!bool"
	tagInt       = "!!int"
	tagFloat     = "!!float"
	tagNull      = "!!null"
	tagTimestamp = "!!timestamp"
	tagBinary    = "!!binary"
	tagMerge     = "!!merge"
)

// scalar resolves a scalar node with YAML 1.1 rules, as yaml.v2 decodes into
// interface{}: int64 (also for v2's int), uint64, float64, bool, nil, string.
func scalar(n *yaml.Node) (any, *docError) {
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	tag := ""
	if n.Style&yaml.TaggedStyle != 0 {
		tag = n.Tag
		if strings.HasPrefix(tag, "tag:yaml.org,2002:") {
			tag = "!!" + strings.TrimPrefix(tag, "tag:yaml.org,2002:")
		}
	}
	if tag == "" && quoted {
		return n.Value, nil
	}
	if tag == tagBinary {
		b, err := base64.StdEncoding.DecodeString(n.Value)
		if err != nil {
			return nil, &docError{line: n.Line, reason: ErrInvalidYAML, detail: "!!binary value cannot be decoded"}
		}
		return string(b), nil
	}
	switch tag {
	case "", tagStr, tagBool, tagInt, tagFloat, tagNull, tagTimestamp:
	default:
		return n.Value, nil // unknown tags keep the text, as yaml.v2
	}
	rtag, v := resolve11(tag, n.Value)
	switch {
	case tag == "" || tag == rtag || tag == tagStr:
	case tag == tagFloat && rtag == tagInt:
		switch x := v.(type) {
		case int64:
			v = float64(x)
		case uint64:
			v = float64(x)
		}
	default:
		// tag is one of the fixed tags above, never text of the document.
		return nil, &docError{line: n.Line, reason: ErrInvalidYAML, detail: "a value does not resolve to its tag " + tag,
			quoted: fmt.Sprintf("cannot decode %s %q as a %s", rtag, n.Value, tag)}
	}
	if rtag == tagTimestamp {
		return n.Value, nil // yaml.v2 keeps timestamps as text in interface{}
	}
	return v, nil
}

var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

var resolve11Map = func() map[string]struct {
	v   any
	tag string
} {
	m := map[string]struct {
		v   any
		tag string
	}{}
	add := func(v any, tag string, names ...string) {
		for _, s := range names {
			m[s] = struct {
				v   any
				tag string
			}{v, tag}
		}
	}
	add(true, tagBool, "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")
	add(false, tagBool, "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")
	add(nil, tagNull, "", "~", "null", "Null", "NULL")
	add(math.NaN(), tagFloat, ".nan", ".NaN", ".NAN")
	add(math.Inf(1), tagFloat, ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF")
	add(math.Inf(-1), tagFloat, "-.inf", "-.Inf", "-.INF")
	add("<<", tagMerge, "<<")
	return m
}()

// resolve11 is yaml.v2's plain-scalar resolution.
func resolve11(tag, in string) (string, any) {
	hint := byte('N')
	if in != "" {
		switch c := in[0]; {
		case c == '+' || c == '-':
			hint = 'S'
		case c >= '0' && c <= '9':
			hint = 'D'
		case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
			hint = 'M'
		case c == '.':
			hint = '.'
		default:
			hint = 0
		}
	}
	if hint == 0 || tag == tagStr {
		return tagStr, in
	}
	if item, ok := resolve11Map[in]; ok {
		return item.tag, item.v
	}
	switch hint {
	case '.':
		if f, err := strconv.ParseFloat(in, 64); err == nil {
			return tagFloat, f
		}
	case 'D', 'S':
		if tag == "" || tag == tagTimestamp {
			if isTimestamp(in) {
				return tagTimestamp, in
			}
		}
		plain := strings.ReplaceAll(in, "_", "")
		if i, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return tagInt, i
		}
		if u, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return tagInt, u
		}
		if yamlStyleFloat.MatchString(plain) {
			if f, err := strconv.ParseFloat(plain, 64); err == nil {
				return tagFloat, f
			}
		}
		if strings.HasPrefix(plain, "0b") {
			if i, err := strconv.ParseInt(plain[2:], 2, 64); err == nil {
				return tagInt, i
			}
			if u, err := strconv.ParseUint(plain[2:], 2, 64); err == nil {
				return tagInt, u
			}
		} else if strings.HasPrefix(plain, "-0b") {
			if i, err := strconv.ParseInt("-"+plain[3:], 2, 64); err == nil {
				return tagInt, i
			}
		}
	}
	return tagStr, in
}

var timestampFormats = []string{
	"2006-1-2T15:4:5.999999999Z07:00",
	"2006-1-2t15:4:5.999999999Z07:00",
	"2006-1-2 15:4:5.999999999",
	"2006-1-2",
}

func isTimestamp(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c < '0' || c > '9' {
			break
		}
	}
	if i != 4 || i == len(s) || s[i] != '-' {
		return false
	}
	for _, f := range timestampFormats {
		if _, err := time.Parse(f, s); err == nil {
			return true
		}
	}
	return false
}

var errNotJSON = errors.New("value has no JSON form")

// jsonable turns a resolved scalar into what a JSON round trip gives, as
// sigs.k8s.io/yaml does: numbers become float64, invalid UTF-8 bytes become
// U+FFFD, NaN and infinities are errors.
func jsonable(v any, n *yaml.Node) (any, *docError) {
	switch x := v.(type) {
	case int64:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &docError{line: n.Line, reason: ErrInvalidYAML, detail: errNotJSON.Error() + " (NaN or infinity)"}
		}
		return x, nil
	case string:
		if utf8.ValidString(x) {
			return x, nil
		}
		var b strings.Builder
		for i := 0; i < len(x); {
			r, size := utf8.DecodeRuneInString(x[i:])
			if r == utf8.RuneError && size == 1 {
				b.WriteRune(utf8.RuneError)
			} else {
				b.WriteString(x[i : i+size])
			}
			i += size
		}
		return b.String(), nil
	}
	return v, nil
}
