package strictyaml

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/redact"
)

// Document is one document of a YAML stream.
type Document struct {
	// Index is the 1-based position of the document among the stream's
	// non-empty documents (documents holding only blank lines and
	// comments are not counted).
	Index int
	// Line is the 1-based line of the stream where the document's first
	// line that is neither blank nor a comment is.
	Line int
	// Data is the document's text, from the line after its separator.
	Data []byte

	// start is the stream line of Data's first line.
	start int
}

// Split cuts a YAML stream at separator lines ("---", optionally followed
// by blanks or a comment) and returns its non-empty documents in order.
// Documents that hold only blank lines and comments are dropped. Each
// Document's Data is a slice of stream, not a copy, and the stream is read
// once, so Split is linear in its length.
func Split(stream []byte) []Document {
	var docs []Document
	line := 1           // stream line of the line at pos
	start, from := 1, 0 // stream line and offset of the current document
	first := 0          // stream line of its first content line, 0 if none yet
	flush := func(to int) {
		if first > 0 {
			docs = append(docs, Document{Index: len(docs) + 1, Line: first, Data: stream[from:to:to], start: start})
		}
	}
	for pos := 0; pos < len(stream); line++ {
		end := len(stream)
		if i := bytes.IndexByte(stream[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		l := stream[pos:end]
		switch {
		case isSeparator(l):
			flush(pos)
			start, from, first = line+1, end, 0
		case first == 0 && isContent(l):
			first = line
		}
		pos = end
	}
	flush(len(stream))
	return docs
}

// isContent reports whether line is neither blank nor a comment.
func isContent(line []byte) bool {
	t := bytes.TrimSpace(line)
	return len(t) > 0 && t[0] != '#'
}

func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := bytes.TrimSpace(line[3:])
	return len(rest) == 0 || rest[0] == '#'
}

// maxLineNodes bounds the nodes Lines visits, so that aliases cannot make
// it expand a small document into a huge one; maxLinePathBytes bounds the
// bytes of the paths it keeps, which deep nesting makes grow with the
// square of the depth. A path past either is found at its nearest
// ancestor's line (LineOf).
const (
	maxLineNodes     = 100000
	maxLinePathBytes = 4 << 20
)

// Lines maps the field paths of a document (as FieldError.Path writes them)
// to the lines of the stream where their keys or list items are. It
// returns nil when the document does not parse.
func Lines(doc Document) map[string]int {
	var root yamlv3.Node
	if err := yamlv3.Unmarshal(doc.Data, &root); err != nil {
		return nil
	}
	offset := max(doc.start, 1) - 1
	lines := map[string]int{}
	budget, pathBytes := maxLineNodes, maxLinePathBytes
	var walk func(path string, n *yamlv3.Node)
	walk = func(path string, n *yamlv3.Node) {
		if n == nil || budget <= 0 || pathBytes <= 0 {
			return
		}
		budget--
		pathBytes -= len(path)
		switch n.Kind {
		case yamlv3.DocumentNode:
			for _, c := range n.Content {
				walk(path, c)
			}
		case yamlv3.AliasNode:
			walk(path, n.Alias)
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				p := JoinPath(path, n.Content[i].Value)
				if _, ok := lines[p]; !ok {
					lines[p] = n.Content[i].Line + offset
				}
				walk(p, n.Content[i+1])
			}
		case yamlv3.SequenceNode:
			for i, c := range n.Content {
				p := fmt.Sprintf("%s[%d]", path, i)
				lines[p] = c.Line + offset
				walk(p, c)
			}
		}
	}
	walk("", &root)
	return lines
}

// LineOf returns the line of path in lines, or of its nearest ancestor
// that has one, or 0.
func LineOf(lines map[string]int, path string) int {
	for path != "" {
		if l, ok := lines[path]; ok {
			return l
		}
		cut := max(strings.LastIndexAny(path, ".["), 0)
		path = path[:cut]
	}
	return 0
}

// SyntaxError is a YAML document that cannot be parsed.
type SyntaxError struct {
	// Line of the stream the parser complained about, 0 if it did not say.
	Line int
	// Msg is the parser's message, with line numbers counted from the
	// start of the stream.
	Msg string
}

// Error returns the parser's message.
func (e *SyntaxError) Error() string { return e.Msg }

var lineRe = regexp.MustCompile(`line (\d+)`)

// ToJSON converts one document to JSON. Duplicate keys are an error, and
// so is a document whose aliases expand past the budget (an *AliasError,
// see CheckAliases). Other errors are *SyntaxError with line numbers of
// the stream.
func ToJSON(doc Document) ([]byte, error) {
	if err := CheckAliases(doc.Data); err != nil {
		return nil, err
	}
	out, err := yaml.YAMLToJSONStrict(doc.Data)
	if err == nil {
		return out, nil
	}
	offset := max(doc.start, 1) - 1
	first := 0
	msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
	msg = lineRe.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(m[len("line "):])
		if first == 0 {
			first = n + offset
		}
		return "line " + strconv.Itoa(n+offset)
	})
	msg = strings.Join(strings.Fields(msg), " ")
	return nil, &SyntaxError{Line: first, Msg: msg}
}

// FieldError is one problem at one field of a document.
type FieldError struct {
	// Path is the field, dotted, with list indexes in brackets
	// (spec.valuesFrom[1].kind); map keys that are not plain words are
	// quoted in brackets (metadata.labels["app.kubernetes.io/name"]).
	Path string
	// Value is the offending value, shortened: a string as written,
	// anything else as compact JSON.
	Value string
	// Message says what is wrong; it does not repeat Value.
	Message string
}

// Error renders "path: message (value: …)".
func (e FieldError) Error() string {
	msg := e.Message
	if e.Value != "" {
		msg += " (value: " + e.Value + ")"
	}
	if e.Path == "" {
		return msg
	}
	return e.Path + ": " + msg
}

// Unmarshal decodes the JSON document data into v, a non-nil pointer.
// It first checks data against v's type and returns every unknown field
// and every value of the wrong type, sorted by path; v is written only
// when there is none.
func Unmarshal(data []byte, v any) []FieldError {
	tree, err := ParseJSON(data)
	if err != nil {
		return []FieldError{{Message: "invalid JSON: " + err.Error()}}
	}
	return UnmarshalParsed(data, tree, v)
}

// ParseJSON parses a JSON document into maps, slices, strings, bools,
// json.Numbers and nils: the tree UnmarshalParsed checks.
func ParseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	return tree, nil
}

// UnmarshalParsed is Unmarshal for a caller that has parsed data with
// ParseJSON already (to look at it before picking v's type).
func UnmarshalParsed(data []byte, tree, v any) []FieldError {
	errs, decoded := unmarshal(data, tree, v, false)
	if decoded {
		return nil
	}
	return errs
}

// UnmarshalLenient is UnmarshalParsed, except when every error is an
// invalid value of a type that decodes itself (a duration such as
// "10x"): then v is written all the same, with those fields left at their
// zero values, and decoded is true, so that the caller can go on checking
// the rest of the object. It removes those values from tree.
func UnmarshalLenient(data []byte, tree, v any) (errs []FieldError, decoded bool) {
	return unmarshal(data, tree, v, true)
}

func unmarshal(data []byte, tree, v any, lenient bool) ([]FieldError, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return []FieldError{{Message: fmt.Sprintf("strictyaml: Unmarshal needs a non-nil pointer, got %T", v)}}, false
	}
	w := walker{lenient: lenient}
	w.walk("", tree, rv.Type().Elem())
	if len(w.errs) > 0 {
		slices.SortStableFunc(w.errs, func(a, b FieldError) int { return strings.Compare(a.Path, b.Path) })
		if !lenient || w.hard > 0 {
			return w.errs, false
		}
		var err error
		if data, err = json.Marshal(tree); err != nil {
			return w.errs, false
		}
	}
	if err := json.Unmarshal(data, v); err != nil {
		if len(w.errs) > 0 {
			return w.errs, false
		}
		return []FieldError{{Message: err.Error()}}, false
	}
	return w.errs, true
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

type walker struct {
	errs []FieldError
	// hard counts the errors other than invalid values of self-decoding
	// types; lenient removes such values from the tree (see
	// UnmarshalLenient).
	hard    int
	lenient bool
	soft    bool // the last walk found an invalid self-decoding value
}

// fieldCache maps a struct type to its fields by JSON name (see fieldsOf);
// like encoding/json's own cache, it is computed once per type for the
// life of the program rather than once per document.
var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

func (w *walker) fail(path string, v any, format string, args ...any) {
	w.hard++
	w.errs = append(w.errs, FieldError{Path: path, Value: render(v), Message: fmt.Sprintf(format, args...)})
}

func (w *walker) walk(path string, v any, t reflect.Type) {
	if v == nil {
		return // null leaves the field at its zero value
	}
	if selfDecoding(t) {
		raw, _ := json.Marshal(v)
		if err := json.Unmarshal(raw, reflect.New(t).Interface()); err != nil {
			w.errs = append(w.errs, FieldError{Path: path, Value: render(v), Message: "invalid value: " + cleanJSONError(err)})
			w.soft = true
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		w.walk(path, v, t.Elem())
	case reflect.Interface:
		// any value decodes into an interface
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			w.mismatch(path, v, "object")
			return
		}
		known := w.fieldsOf(t)
		for _, k := range sortedKeys(obj) {
			ft, ok := known[k]
			if !ok {
				msg := "unknown field"
				if s := suggest(k, known); s != "" {
					msg += fmt.Sprintf(", did you mean %q?", s)
				}
				w.fail(JoinPath(path, k), obj[k], "%s", msg)
				continue
			}
			w.child(obj, k, JoinPath(path, k), ft)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			w.mismatch(path, v, "object")
			return
		}
		for _, k := range sortedKeys(obj) {
			w.child(obj, k, JoinPath(path, k), t.Elem())
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			if _, ok := v.(string); !ok {
				w.mismatch(path, v, "base64 string")
			}
			return
		}
		list, ok := v.([]any)
		if !ok {
			w.mismatch(path, v, "list")
			return
		}
		if t.Kind() == reflect.Array && len(list) > t.Len() {
			w.fail(path, v, "expected at most %d items, got %d", t.Len(), len(list))
		}
		for i, e := range list {
			w.soft = false
			w.walk(fmt.Sprintf("%s[%d]", path, i), e, t.Elem())
			if w.soft && w.lenient {
				w.hard++ // a list keeps its length: the item cannot be left out
			}
			w.soft = false
		}
	case reflect.String:
		if _, ok := v.(string); !ok {
			w.mismatch(path, v, "string")
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			w.mismatch(path, v, "boolean")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			w.mismatch(path, v, "integer")
			return
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			w.fail(path, v, "expected integer of %d bits", t.Bits())
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := v.(json.Number)
		if !ok {
			w.mismatch(path, v, "non-negative integer")
			return
		}
		if _, err := strconv.ParseUint(n.String(), 10, t.Bits()); err != nil {
			w.fail(path, v, "expected non-negative integer of %d bits", t.Bits())
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			w.mismatch(path, v, "number")
			return
		}
		if _, err := strconv.ParseFloat(n.String(), t.Bits()); err != nil {
			w.fail(path, v, "expected number")
		}
	default:
		w.fail(path, v, "cannot decode into Go type %s", t)
	}
}

// child walks obj[k], a field or map entry at path, and, when lenient,
// removes it from obj if it is an invalid value of a self-decoding type.
func (w *walker) child(obj map[string]any, k, path string, t reflect.Type) {
	w.soft = false
	w.walk(path, obj[k], t)
	if w.soft && w.lenient {
		delete(obj, k)
	}
	w.soft = false
}

func (w *walker) mismatch(path string, v any, want string) {
	w.hard++
	got := jsonType(v)
	msg := fmt.Sprintf("expected %s, got %s", want, got)
	if want == "string" && (got == "number" || got == "boolean") {
		msg += " (quote it to make it a string)"
	}
	w.errs = append(w.errs, FieldError{Path: path, Value: render(v), Message: msg})
}

// selfDecoding reports whether t (or *t) decodes itself from JSON.
func selfDecoding(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer || t.Kind() == reflect.Interface {
		return false
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler)
}

// fieldsOf maps the JSON names of t's fields to their types, inlining
// embedded structs without a JSON name as encoding/json does; a shallower
// field wins over an inlined one of the same name.
func (w *walker) fieldsOf(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := fieldsOf(t, map[reflect.Type]bool{})
	fieldCache.Store(t, m)
	return m
}

// fieldsOf computes what walker.fieldsOf caches; seen stops a struct that
// embeds itself through a pointer.
func fieldsOf(t reflect.Type, seen map[reflect.Type]bool) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	if seen[t] {
		return m
	}
	seen[t] = true
	var inlined []reflect.Type
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				inlined = append(inlined, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = f.Type
	}
	for _, it := range inlined {
		for k, ft := range fieldsOf(it, seen) {
			if _, ok := m[k]; !ok {
				m[k] = ft
			}
		}
	}
	return m
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// JoinPath appends a map key to a field path: ".key", or ["key"] (Go
// quoted) when the key is not a plain word, so that dots in keys such as
// app.kubernetes.io/name stay unambiguous.
func JoinPath(path, key string) string {
	if !plainKey.MatchString(key) {
		return path + "[" + strconv.Quote(key) + "]"
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func jsonType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "list"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	default:
		return "null"
	}
}

const maxValueLen = 80

// render returns a string as it is and anything else as compact JSON,
// redacted and shortened (see Value).
func render(v any) string {
	s, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte(fmt.Sprint(v))
		}
		s = string(b)
	}
	return Value(s)
}

// Value returns s as a FieldError.Value: every URL in it with its user
// information, query values and fragment masked (a value is quoted in
// messages and logs, and a repository URL may carry a password or a
// signed token), then shortened to 80 bytes. Redacting first means a cut
// never leaves half a secret that no longer reads as a URL.
func Value(s string) string {
	return Shorten(redact.Text(s), maxValueLen)
}

// Shorten cuts s to at most n bytes (n ≥ 4), ending it with "..." when cut,
// without splitting a UTF-8 sequence.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// cleanJSONError drops encoding/json's Go-type noise from err.
func cleanJSONError(err error) string {
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return "expected " + te.Type.String() + ", got " + te.Value
	}
	return err.Error()
}

// suggest returns the known field closest to k, if it is close enough to
// be a likely misspelling.
func suggest(k string, known map[string]reflect.Type) string {
	best, bestD := "", len(k)/3+2
	for name := range known {
		if strings.EqualFold(name, k) {
			return name
		}
		if d := distance(k, name); d < bestD || (d == bestD && best != "" && name < best) {
			best, bestD = name, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
