package strictyaml

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// JSONProblem is one thing wrong with a JSON document, at a line of the
// stream.
type JSONProblem struct {
	// Line of the stream where the problem is.
	Line int
	// FieldError names the field (for a duplicate key) and what is wrong.
	FieldError
}

// CheckJSON reads doc as JSON when it is JSON: its first content (after
// blank and comment lines) is '{' and a JSON object parses from there.
// It then returns the object's text, and as problems every duplicate key
// and anything but blanks and YAML comments after the object (a second object,
// trailing garbage): the JSON counterparts of what ToJSON refuses in
// YAML. isJSON is false for a document that is not JSON, such as a YAML
// flow mapping ({a: 1}); ToJSON is the judge of those.
func CheckJSON(doc Document) (obj []byte, problems []JSONProblem, isJSON bool) {
	from := 0
	for from < len(doc.Data) {
		end := len(doc.Data)
		if i := bytes.IndexByte(doc.Data[from:], '\n'); i >= 0 {
			end = from + i + 1
		}
		if isContent(doc.Data[from:end]) {
			break
		}
		from = end
	}
	data := doc.Data[from:]
	t := bytes.TrimLeft(data, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil, nil, false
	}
	c := jsonChecker{dec: json.NewDecoder(bytes.NewReader(data))}
	c.dec.UseNumber()
	if err := c.value(); err != nil {
		return nil, nil, false // not JSON: leave it to the YAML parser
	}
	end := int(c.dec.InputOffset())
	obj = data[:end]
	lineAt := func(off int) int {
		return max(doc.start, 1) + bytes.Count(doc.Data[:from+off], []byte("\n"))
	}
	for _, d := range c.dups {
		problems = append(problems, JSONProblem{Line: lineAt(d.off), FieldError: FieldError{Path: d.path, Message: "invalid JSON: duplicate key"}})
	}
	if off, ok := trailing(data, end); ok {
		msg := "invalid JSON: data after the object"
		var second any
		if json.NewDecoder(bytes.NewReader(data[off:])).Decode(&second) == nil {
			msg = "invalid JSON: a second JSON value after the object; separate documents with --- lines or put them in a v1 List"
		}
		extra, _, _ := bytes.Cut(data[off:], []byte("\n"))
		problems = append(problems, JSONProblem{Line: lineAt(off), FieldError: FieldError{Value: Value(string(bytes.TrimSpace(extra))), Message: msg}})
	}
	return obj, problems, true
}

// trailing returns the offset of the first data in data[from:], if any.
// Blank lines and YAML comments (the document is part of a YAML stream)
// are not data.
func trailing(data []byte, from int) (int, bool) {
	for pos := from; pos < len(data); {
		end := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		if isContent(data[pos:end]) {
			return end - len(bytes.TrimLeft(data[pos:end], " \t\r")), true
		}
		pos = end
	}
	return 0, false
}

type duplicate struct {
	path string
	off  int
}

// jsonChecker walks one JSON value token by token, noting duplicate keys.
// It keeps the path to the current value as a stack of segments and
// renders it only for a duplicate, so that deep nesting costs time linear
// in the document rather than in the sum of its paths' lengths.
type jsonChecker struct {
	dec   *json.Decoder
	dups  []duplicate
	depth int
	segs  []segment
}

// segment is one step of a path: an object key or an array index.
type segment struct {
	key   string
	index int // when key is unset (isIndex)
	isIdx bool
}

// path renders the stack of segments as FieldError.Path writes paths.
func (c *jsonChecker) path() string {
	p := ""
	for _, s := range c.segs {
		if s.isIdx {
			p += "[" + strconv.Itoa(s.index) + "]"
		} else {
			p = JoinPath(p, s.key)
		}
	}
	return p
}

var errNotJSON = errors.New("not JSON")

// maxJSONDepth is encoding/json's own nesting limit, which also keeps
// the recursion of value off the end of the stack.
const maxJSONDepth = 10000

func (c *jsonChecker) value() error {
	if c.depth++; c.depth > maxJSONDepth {
		return errNotJSON
	}
	defer func() { c.depth-- }()
	tok, err := c.dec.Token()
	if err != nil {
		return err
	}
	return c.rest(tok)
}

// rest reads what follows tok, the first token of the value at the
// current path.
func (c *jsonChecker) rest(tok json.Token) error {
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for c.dec.More() {
			kt, err := c.dec.Token()
			if err != nil {
				return err
			}
			k, ok := kt.(string)
			if !ok {
				return errNotJSON
			}
			c.segs = append(c.segs, segment{key: k})
			if seen[k] {
				c.dups = append(c.dups, duplicate{path: c.path(), off: int(c.dec.InputOffset())})
			}
			seen[k] = true
			err = c.value()
			c.segs = c.segs[:len(c.segs)-1]
			if err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // '}'
		return err
	case json.Delim('['):
		for i := 0; c.dec.More(); i++ {
			c.segs = append(c.segs, segment{index: i, isIdx: true})
			err := c.value()
			c.segs = c.segs[:len(c.segs)-1]
			if err != nil {
				return err
			}
		}
		_, err := c.dec.Token() // ']'
		return err
	case json.Delim('}'), json.Delim(']'):
		return errNotJSON
	}
	return nil
}

// StrictJSON checks that data is exactly one JSON value with no key twice
// in one object (encoding/json would keep the last) and nothing but white
// space after it. The error names the first duplicate key's path; it is
// nil for a document that passes. It does not report every problem (see
// CheckJSON for that) and costs time linear in len(data).
func StrictJSON(data []byte) error {
	c := jsonChecker{dec: json.NewDecoder(bytes.NewReader(data))}
	c.dec.UseNumber()
	if err := c.value(); err != nil {
		if err == errNotJSON {
			return errors.New("invalid JSON (or nested more than 10000 deep)")
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if len(c.dups) > 0 {
		return fmt.Errorf("duplicate key %s", c.dups[0].path)
	}
	if rest := bytes.TrimLeft(data[c.dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return fmt.Errorf("data after the JSON value at byte %d: %s", len(data)-len(rest), Value(string(rest)))
	}
	return nil
}
