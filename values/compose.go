package values

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	jsonpatch "github.com/evanphx/json-patch"
	"sigs.k8s.io/yaml"
)

// Result is a composition: the values to install with, their digest and
// where each value came from.
//
// Values holds Secret-sourced data in the clear, because Helm needs it;
// print Redacted() (or the Result itself, whose String, Format, MarshalJSON
// and MarshalYAML redact) instead, and never log Values directly.
// SecretValues lists the Secret-sourced texts, to mask them where they
// reappear (rendered manifests).
type Result struct {
	// Values are the user-supplied values to hand to Helm (Helm coalesces
	// them with the chart's defaults; a null deletes a default key).
	Values map[string]any
	// Digest is Digest(Values), for change detection.
	Digest string

	tracker *tracker
	red     *redactor
	prov    *lazyProvenance
}

// lazyProvenance builds the sorted report on first use: the tracking is
// done during composition, the report costs only those who read it.
type lazyProvenance struct {
	once sync.Once
	p    *Provenance
}

// Provenance explains every leaf of Values; it is secret-safe. It reflects
// Values as Compose returned them (later changes to the map are not seen).
func (r Result) Provenance() *Provenance {
	if r.prov == nil {
		return nil
	}
	r.prov.once.Do(func() { r.prov.p = r.tracker.provenance(r.Values, r.red) })
	return r.prov.p
}

// Explain is a shortcut for r.Provenance().Explain(path).
func (r Result) Explain(path string) []Origin { return r.Provenance().Explain(path) }

// Redacted returns a copy of Values in which every Secret-sourced leaf is
// replaced by a redaction marker with a short hash of the value. Use it for
// plans, diffs and logs.
func (r Result) Redacted() map[string]any {
	if r.tracker == nil {
		return copyMap(r.Values)
	}
	return redactTree(r.Values, "", r.tracker, r.red).(map[string]any)
}

// String returns the redacted values as YAML (sorted keys) and the digest.
// A Result not made by Compose has no provenance and prints its Values.
func (r Result) String() string {
	b, err := yaml.Marshal(r.Redacted())
	if err != nil {
		// The encoder's message could quote a value: say only that it failed.
		return "# values cannot be printed as YAML\n# digest: " + r.Digest + "\n"
	}
	return string(b) + "# digest: " + r.Digest + "\n"
}

// resultJSON is how a Result encodes: the redacted values and the digest.
type resultJSON struct {
	Values map[string]any `json:"values"`
	Digest string         `json:"digest"`
}

// MarshalJSON encodes the redacted values and the digest, so that a Result
// in a JSON (or sigs.k8s.io/yaml) document never shows Secret data; encode
// r.Values yourself where the clear values are meant (for Helm).
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{Values: r.Redacted(), Digest: r.Digest})
}

// MarshalYAML is MarshalJSON for YAML encoders that call it (yaml.v2, v3).
func (r Result) MarshalYAML() (any, error) {
	return map[string]any{"values": r.Redacted(), "digest": r.Digest}, nil
}

// MinSecretValueLength is the shortest value SecretValues returns, in bytes.
// Shorter values ("1", "on", "abc") occur everywhere in rendered manifests:
// masking them would garble the text and, by showing where they are
// missing, say more about them than it hides.
const MinSecretValueLength = 4

// SecretValues returns the texts of the leaves of Values that came from a
// Secret (or were copied from one by a patch), so that a caller can mask
// them where they reappear, e.g. in rendered manifests. They are in the
// clear: use them only to mask, never print them.
//
// Strings are returned as they are; numbers as a template prints them
// (fmt.Sprint: 5432, 1.5, 1e+06). Excluded are booleans and nulls, values
// shorter than MinSecretValueLength and strings that YAML 1.1 reads as a
// boolean or null ("true", "null", "off", …), which are not secrets and
// would garble the text. The list is sorted and has no repeats; when
// replacing in text, replace longer values first (one may contain
// another). A Result not made by Compose knows no Secret values: nil.
func (r Result) SecretValues() []string {
	if r.tracker == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	forLeaves("", r.Values, func(path string, leaf any) {
		if !r.tracker.sensitive(path) {
			return
		}
		if s, ok := maskText(leaf); ok && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	})
	slices.Sort(out)
	return out
}

// maskText is the text SecretValues reports for a leaf, if any.
func maskText(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		if item, ok := resolve11Map[x]; ok && (item.tag == tagBool || item.tag == tagNull) {
			return "", false
		}
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case int64, int, int32, uint64, uint, float32:
		s = fmt.Sprint(x)
	default:
		return "", false
	}
	return s, len(s) >= MinSecretValueLength
}

// Format makes every fmt verb (%v, %+v, %#v, %s, %q) print String, so a
// Result can never leak Secret data through fmt.
func (r Result) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", r.String())
		return
	}
	_, _ = f.Write([]byte(r.String()))
}

// GoString implements fmt.GoStringer like Format.
func (r Result) GoString() string { return r.String() }

// Compose computes a release's values from its sources, as Flux's
// helm-controller does, then applies per-cluster overrides:
//
//  1. Files (chart valuesFiles) deep-merged in order;
//  2. each From reference in order: a YAML document deep-merged at the root,
//     or, with TargetPath, an assignment in Helm --set syntax (see step 4);
//  3. Inline values deep-merged;
//  4. the TargetPath assignments in reference order: they win over
//     everything before, inline values included ("target path precedence
//     over all" in Flux);
//  5. Overrides in order (merge map, then JSON patch).
//
// A reference whose object or key is missing is skipped when Optional and an
// error otherwise. Each object is read once per call, as Flux reads it once
// per reconcile. Compose does not modify the request; it reads nothing but
// r and stops between references when ctx is done (returning ctx.Err()
// wrapped). More than Limits.MaxReferences references is a
// *TooManyReferencesError, returned before anything is read. Every other
// error is a *SourceError naming the release, the source and, for YAML, the
// line; none carries Secret text. A nil r is an error (ErrNoReader) only
// when there is a reference to read.
//
// The cost grows linearly with the number of references and the size of
// the documents (provenance keeps each leaf's history as a shared list).
func Compose(ctx context.Context, r Reader, req Request) (*Result, error) {
	c := &composer{
		req:      req,
		lim:      req.Limits.withDefaults(),
		reader:   r,
		noReader: isNil(r),
		t:        newTracker(),
		red:      &redactor{key: req.RedactionKey},
		cache:    map[string]readResult{},
	}
	return c.run(ctx)
}

// isNil reports whether r is nil or a nil pointer, map or func, which no
// method can be called on.
func isNil(r Reader) bool {
	if r == nil {
		return true
	}
	v := reflect.ValueOf(r)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

type readResult struct {
	data map[string][]byte
	err  error
}

type pending struct {
	src  Source
	ref  Reference
	text string
}

type composer struct {
	req      Request
	lim      Limits
	reader   Reader
	noReader bool
	t        *tracker
	red      *redactor
	cache    map[string]readResult
	acc      map[string]any
}

func (c *composer) fail(src Source, line int, reason error, detail string, cause error) *SourceError {
	return &SourceError{Release: c.req.Release, Source: src, Line: line, Reason: reason, Detail: detail, Err: cause}
}

// docFailure reports a document that cannot be decoded. For a Secret only
// the docError's fixed detail is used, never the parser's message.
func (c *composer) docFailure(src Source, derr *docError, text string) *SourceError {
	if !src.Sensitive() {
		return c.fail(src, derr.line, derr.reason, derr.message(false), nil)
	}
	return c.fail(src, derr.line, derr.reason, c.withheld(src, derr.message(true), text), nil)
}

// withheld completes the fixed detail of an error about a Secret's text: it
// names the Secret and the key, and identifies the text by its redaction
// marker (a short hash, keyed with Request.RedactionKey when given).
func (c *composer) withheld(src Source, detail, text string) string {
	return fmt.Sprintf("%s (text of Secret %s/%s key %q withheld, %s)", detail, c.req.Namespace, src.Name, src.Key, c.red.marker(text))
}

func (c *composer) run(ctx context.Context) (*Result, error) {
	if n := len(c.req.From); n > c.lim.MaxReferences {
		return nil, &TooManyReferencesError{Release: c.req.Release, Count: n, Limit: c.lim.MaxReferences}
	}
	c.acc = map[string]any{}
	for i, f := range c.req.Files {
		src := Source{Kind: SourceFile, Name: f.Name, Index: i}
		doc, derr := decodeDocument(f.Data, c.lim)
		if derr != nil {
			return nil, c.docFailure(src, derr, "")
		}
		c.t.mergeInto(c.acc, doc, "", src)
	}

	var targets []pending
	for i, ref := range c.req.From {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("release %q: values: %w", c.req.Release, err)
		}
		src := Source{Kind: SourceKind(ref.Kind), Name: ref.Name, Key: ref.Key(), TargetPath: ref.TargetPath, Index: i}
		text, ok, err := c.lookup(ctx, src, ref)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if ref.TargetPath != "" {
			targets = append(targets, pending{src: src, ref: ref, text: text})
			continue
		}
		doc, derr := decodeDocument([]byte(text), c.lim)
		if derr != nil {
			return nil, c.docFailure(src, derr, text)
		}
		c.t.mergeInto(c.acc, doc, "", src)
	}

	if len(c.req.Inline) > 0 {
		c.t.mergeInto(c.acc, copyMap(c.req.Inline), "", Source{Kind: SourceInline})
		for _, ptr := range c.req.SecretInline {
			c.t.markSecret(c.acc, ptr)
		}
		c.t.credit(c.acc, c.req.InlineCredits)
	}

	for _, p := range targets {
		if err := c.assign(p); err != nil {
			return nil, err
		}
	}

	for i, o := range c.req.Overrides {
		if err := c.override(i, o); err != nil {
			return nil, err
		}
	}

	return &Result{Values: c.acc, Digest: Digest(c.acc), tracker: c.t, red: c.red, prov: &lazyProvenance{}}, nil
}

// lookup reads a reference's text; ok is false for a skipped optional one.
func (c *composer) lookup(ctx context.Context, src Source, ref Reference) (string, bool, error) {
	switch {
	case ref.Kind != KindConfigMap && ref.Kind != KindSecret:
		return "", false, c.fail(src, 0, ErrUnsupportedKind, fmt.Sprintf("kind %q", ref.Kind), nil)
	case ref.Name == "":
		return "", false, c.fail(src, 0, ErrInvalidReference, "name is empty", nil)
	case ref.Literal && ref.TargetPath == "":
		return "", false, c.fail(src, 0, ErrInvalidReference, "literal requires targetPath", nil)
	}
	if c.noReader {
		return "", false, c.fail(src, 0, ErrNoReader, "Compose was called with a nil Reader", nil)
	}
	id := string(ref.Kind) + "/" + ref.Name
	rr, seen := c.cache[id]
	if !seen {
		rr.data, rr.err = c.reader.Read(ctx, ref.Kind, c.req.Namespace, ref.Name)
		c.cache[id] = rr
	}
	if rr.err != nil {
		if errors.Is(rr.err, ErrNotFound) {
			if ref.Optional {
				return "", false, nil
			}
			return "", false, c.fail(src, 0, ErrNotFound, fmt.Sprintf("%s %s/%s does not exist", ref.Kind, c.req.Namespace, ref.Name), rr.err)
		}
		return "", false, c.fail(src, 0, ErrRead, "", rr.err)
	}
	b, ok := rr.data[src.Key]
	if !ok {
		if ref.Optional {
			return "", false, nil
		}
		return "", false, c.fail(src, 0, ErrKeyNotFound, fmt.Sprintf("%s %s/%s has no key %q", ref.Kind, c.req.Namespace, ref.Name, src.Key), nil)
	}
	if len(b) > c.lim.MaxDocumentBytes {
		return "", false, c.fail(src, 0, ErrTooLarge, fmt.Sprintf("%d bytes, limit %d", len(b), c.lim.MaxDocumentBytes), nil)
	}
	return string(b), true, nil
}

// assign applies one targetPath reference the way Flux does: a text wrapped
// in quotes is a string (--set-string, quotes trimmed), anything else is
// parsed as helm --set parses it. Literal is Flux's literal: the text
// verbatim, as --set-literal takes it, at a path read with --set's escapes
// (kubernetes\.io/role), which --set-literal itself does not honour. A
// Secret's text takes assignSecret.
func (c *composer) assign(p pending) error {
	if p.src.Sensitive() {
		return c.assignSecret(p)
	}
	mode, text := setTyped, p.text
	switch {
	case p.ref.Literal:
		mode, text = setString, literalEscaper.Replace(text)
	case isQuoted(text):
		mode, text = setString, strings.Trim(text, `'"`)
	}
	if droppedPath(p.ref.TargetPath) {
		return c.fail(p.src, 0, ErrTargetPath, droppedMessage(p.ref.TargetPath), nil)
	}
	observe := func(path string, old any, had bool, v any) { c.t.assign(path, old, had, v, p.src) }
	if err := setLine(c.acc, p.ref.TargetPath+"="+text, mode, observe); err != nil {
		return c.fail(p.src, 0, ErrTargetPath, err.Error(), nil)
	}
	return nil
}

// droppedPath reports whether --set drops what is assigned at path: a
// path with an empty key ("a..b", "l[0]..x") creates the maps and lists
// before that key and then loses the value, in silence. It is tried on a
// scratch map; a path --set cannot read is left to the real assignment to
// report.
func droppedPath(path string) bool {
	scratch := map[string]any{}
	at, hits := "", 0
	observe := func(p string, _ any, _ bool, v any) {
		if s, ok := v.(string); ok && s == setPlaceholder {
			at, hits = p, hits+1
		}
	}
	if err := setLine(scratch, path+"="+setPlaceholder, setString, observe); err != nil {
		return false
	}
	if len(scratch) == 0 {
		return false // nothing created: nothing left without its value
	}
	return hits == 0 || !setAt(scratch, at, setPlaceholder, setPlaceholder)
}

// droppedMessage says why droppedPath refuses path.
func droppedMessage(path string) string {
	return fmt.Sprintf("targetPath %q has an empty key, under which Helm's --set drops the value (leaving only the maps and lists before it): escape the dot or name the key", path)
}

// literalEscaper escapes every character that --set-string reads as syntax
// after the '=' (a backslash, a comma, a {list}), so that the text arrives
// verbatim; the path before the '=' keeps --set's escapes. This is how
// Flux's ReplacePathLiteralValue implements Literal.
var literalEscaper = strings.NewReplacer(`\`, `\\`, `,`, `\,`, `{`, `\{`, `}`, `\}`, `[`, `\[`, `]`, `\]`)

func isQuoted(text string) bool {
	return len(text) > 0 && (text[0] == '"' && text[len(text)-1] == '"' || text[0] == '\'' && text[len(text)-1] == '\'')
}

// setPlaceholder stands for a Secret's text while its targetPath is applied:
// the path parser never sees the text, so its errors cannot quote it (they
// may show the placeholder).
const setPlaceholder = "VALUE"

// assignSecret applies a Secret's targetPath reference in two separate
// steps, so that Secret text never reaches the --set line parser: the text
// is read as one value by parseValue (or verbatim when Literal), and the
// path is applied by setLine with setPlaceholder as its value, which is then
// replaced by the real one. Text that --set would read as more than one
// assignment is refused (see the package doc, "Secret safety").
func (c *composer) assignSecret(p pending) error {
	if droppedPath(p.ref.TargetPath) {
		return c.fail(p.src, 0, ErrTargetPath, droppedMessage(p.ref.TargetPath), nil)
	}
	// The path is read with --set-string's escapes, also for Literal (as
	// assign reads it); the placeholder's type does not matter.
	mode := setString
	var v any
	if p.ref.Literal {
		// Through runes, as setLine reads it: invalid UTF-8 becomes U+FFFD.
		v = string([]rune(p.text))
	} else {
		vmode, text := setTyped, p.text
		if isQuoted(text) {
			vmode, text = setString, strings.Trim(text, `'"`)
		}
		var err error
		if v, err = parseValue(text, vmode); err != nil {
			return c.fail(p.src, 0, ErrTargetPath, c.withheld(p.src, err.Error(), p.text), nil)
		}
	}
	var (
		at          string
		old         any
		had         bool
		hits, extra int
	)
	observe := func(path string, o any, h bool, nv any) {
		// In string and literal mode every assigned value is a string or a
		// list; nils and empty maps are list padding and map elements.
		switch x := nv.(type) {
		case string:
			if x == setPlaceholder {
				at, old, had = path, o, h
				hits++
				return
			}
			extra++
		case []any:
			extra++
		}
		c.t.assign(path, o, h, nv, p.src)
	}
	if err := setLine(c.acc, p.ref.TargetPath+"="+setPlaceholder, mode, observe); err != nil {
		msg := err.Error()
		if strings.Contains(msg, setPlaceholder) {
			msg += " (" + setPlaceholder + " stands for the value)"
		}
		return c.fail(p.src, 0, ErrTargetPath, c.withheld(p.src, msg, p.text), nil)
	}
	if hits != 1 || extra > 0 {
		return c.fail(p.src, 0, ErrTargetPath, c.withheld(p.src, "a Secret's targetPath must be a single --set path (no '=' and no unescaped ',')", p.text), nil)
	}
	// setLine drops an assignment under an empty key, as Helm does: then
	// there is nothing to replace.
	if setAt(c.acc, at, setPlaceholder, v) {
		c.t.assign(at, old, had, v, p.src)
	}
	return nil
}

// override applies one per-cluster override: merge map, then JSON patch.
func (c *composer) override(i int, o Override) error {
	src := Source{Kind: SourceOverride, Name: o.Name, Index: i}
	if len(o.Merge) > 0 {
		c.t.mergeInto(c.acc, copyMap(o.Merge), "", src)
	}
	if len(o.Patch) == 0 {
		return nil
	}
	ops, err := json.Marshal(o.Patch)
	if err != nil {
		return c.fail(src, 0, ErrPatch, "operations cannot be encoded", err)
	}
	patch, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		return c.fail(src, 0, ErrPatch, "operations cannot be decoded", err)
	}
	doc, err := json.Marshal(c.acc)
	if err != nil {
		return c.fail(src, 0, ErrPatch, "values have no JSON form", nil)
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return c.fail(src, 0, ErrPatch, c.patchFailure(o.Patch, doc, err), nil)
	}
	var patched map[string]any
	if err := json.Unmarshal(out, &patched); err != nil {
		return c.fail(src, 0, ErrPatch, "patched values are not a map", nil)
	}
	if patched == nil {
		patched = map[string]any{}
	}
	c.acc = c.t.reconcile(c.acc, patched, "", src, c.secretHashes()).(map[string]any)
	return nil
}

// patchFailure says which operation of a failing patch does not apply, from
// the override's own data (index, op, path). The library's message is added
// only when the values hold no Secret data, since it could quote the
// document.
func (c *composer) patchFailure(ops []PatchOp, doc []byte, err error) string {
	at := "an operation"
	cur := doc
	for i, op := range ops {
		one, merr := json.Marshal([]PatchOp{op})
		if merr != nil {
			break
		}
		p, derr := jsonpatch.DecodePatch(one)
		if derr != nil {
			break
		}
		next, aerr := p.Apply(cur)
		if aerr != nil {
			at = fmt.Sprintf("operation %d (%s %s)", i, op.Op, op.Path)
			break
		}
		cur = next
	}
	msg := at + " does not apply"
	if !c.t.hasSecrets() {
		msg += ": " + err.Error()
	}
	return msg
}

// secretHashes are the canonical digests of Secret-sourced leaves, so that
// a patch that copies or moves one keeps it redacted.
func (c *composer) secretHashes() map[string]bool {
	out := map[string]bool{}
	for path, r := range c.t.recs {
		if r.src.Sensitive() {
			if v, ok := lookupPath(c.acc, path); ok {
				out[Digest(map[string]any{"": v})] = true
			}
		}
	}
	return out
}

// lookupPath finds the value at a printed path.
func lookupPath(root map[string]any, path string) (any, bool) {
	segs, err := parsePath(path)
	if err != nil {
		return nil, false
	}
	var cur any = root
	for _, s := range segs {
		switch x := cur.(type) {
		case map[string]any:
			if s.isIndex {
				return nil, false
			}
			v, ok := x[s.key]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			if !s.isIndex || s.index >= len(x) {
				return nil, false
			}
			cur = x[s.index]
		default:
			return nil, false
		}
	}
	return cur, true
}
