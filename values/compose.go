package values

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	jsonpatch "github.com/evanphx/json-patch"
	"sigs.k8s.io/yaml"
)

// Result is a composition: the values to install with, their digest and
// where each value came from.
//
// Values holds Secret-sourced data in the clear, because Helm needs it;
// print Redacted() (or the Result itself, whose String and Format redact)
// instead, and never log Values directly.
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
		return "# values cannot be printed: " + scrub(err.Error()) + "\n# digest: " + r.Digest + "\n"
	}
	return string(b) + "# digest: " + r.Digest + "\n"
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
// wrapped). Every other error is a *SourceError naming the release, the
// source and, for YAML, the line; none carries Secret text.
func Compose(ctx context.Context, r Reader, req Request) (*Result, error) {
	c := &composer{
		req:    req,
		lim:    req.Limits.withDefaults(),
		reader: r,
		t:      newTracker(),
		red:    &redactor{key: req.RedactionKey},
		cache:  map[string]readResult{},
	}
	return c.run(ctx)
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
	req    Request
	lim    Limits
	reader Reader
	t      *tracker
	red    *redactor
	cache  map[string]readResult
	acc    map[string]any
}

func (c *composer) fail(src Source, line int, reason error, detail string, cause error) *SourceError {
	return &SourceError{Release: c.req.Release, Source: src, Line: line, Reason: reason, Detail: detail, Err: cause}
}

// textError reports a failure whose detail a parser wrote from the source's
// text: for a Secret, quoted fragments are scrubbed.
func (c *composer) textError(src Source, line int, reason error, detail string) *SourceError {
	if src.Sensitive() {
		detail = scrub(detail)
	}
	return c.fail(src, line, reason, detail, nil)
}

func (c *composer) run(ctx context.Context) (*Result, error) {
	c.acc = map[string]any{}
	for i, f := range c.req.Files {
		src := Source{Kind: SourceFile, Name: f.Name, Index: i}
		doc, derr := decodeDocument(f.Data, c.lim)
		if derr != nil {
			return nil, c.textError(src, derr.line, derr.reason, derr.detail)
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
			return nil, c.textError(src, derr.line, derr.reason, derr.detail)
		}
		c.t.mergeInto(c.acc, doc, "", src)
	}

	if len(c.req.Inline) > 0 {
		c.t.mergeInto(c.acc, copyMap(c.req.Inline), "", Source{Kind: SourceInline})
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
// parsed as helm --set parses it; Literal is --set-literal.
func (c *composer) assign(p pending) error {
	mode, text := setTyped, p.text
	switch {
	case p.ref.Literal:
		mode = setLiteral
	case len(text) > 0 && (text[0] == '"' && text[len(text)-1] == '"' || text[0] == '\'' && text[len(text)-1] == '\''):
		mode, text = setString, strings.Trim(text, `'"`)
	}
	observe := func(path string, old any, had bool, v any) { c.t.assign(path, old, had, v, p.src) }
	if err := setLine(c.acc, p.ref.TargetPath+"="+text, mode, observe); err != nil {
		return c.textError(p.src, 0, ErrTargetPath, err.Error())
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
		// The library's messages quote paths, not values; scrub anyway, the
		// document may hold Secret data.
		return c.fail(src, 0, ErrPatch, scrub(err.Error()), nil)
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
