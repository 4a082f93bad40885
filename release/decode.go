package release

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fieldcheck"
	"github.com/helmfleet/helmfleet/internal/redact"
	"github.com/helmfleet/helmfleet/internal/strictyaml"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/source"
)

// Objects are the objects of one decoded stream, each kind in stream order.
type Objects struct {
	// Releases are the HelmReleases; v2beta1 and v2beta2 documents are
	// converted to the v2 model.
	Releases []*Release
	// HelmRepositories are the source.toolkit.fluxcd.io HelmRepositories.
	HelmRepositories []*source.HelmRepository
	// OCIRepositories are the source.toolkit.fluxcd.io OCIRepositories.
	OCIRepositories []*source.OCIRepository
	// HelmCharts are the source.toolkit.fluxcd.io HelmCharts.
	HelmCharts []*source.HelmChart
	// Policies are the Karmada propagation and override policies
	// (policy.karmada.io/v1alpha1), ready for policy.NewEngine.
	Policies policy.Set
	// Kustomizations are the Flux Kustomizations
	// (kustomize.toolkit.fluxcd.io/v1).
	Kustomizations []*Kustomization
	// Plain are the core v1 ConfigMaps, Secrets and Namespaces, which a
	// Flux directory holds beside the objects above, as unstructured
	// objects (numbers as int64, as client-go reads them). They are
	// checked against their Kubernetes types but not defaulted.
	Plain []*unstructured.Unstructured
	// Warnings say what was read but is not current Flux, in stream
	// order: a HelmRelease of v2beta1 or v2beta2 (MigrationWarning).
	Warnings []string
}

// Problem is one thing wrong with one document of a stream.
type Problem struct {
	// Document is the 1-based position of the document among the
	// stream's non-empty documents (blank and comment-only documents are
	// skipped and not counted).
	Document int
	// Line is the line of the stream where the field at fault is (its
	// key, or that of its nearest ancestor), else where the document
	// starts; for a YAML syntax error, where the parser found it.
	Line int
	// APIVersion and Kind of the document, as written; empty if unknown.
	APIVersion, Kind string
	// Namespace and Name of the document's object, as written.
	Namespace, Name string
	// FieldError says which field is wrong, its value and why.
	FieldError
}

// Object returns "Kind namespace/name", or what of it is known.
func (p Problem) Object() string {
	return fieldcheck.ObjectName(p.Kind, p.Namespace, p.Name)
}

// Error renders "document N (Kind namespace/name, line L): path: message".
func (p Problem) Error() string {
	where := fmt.Sprintf("line %d", p.Line)
	if o := p.Object(); o != "" {
		where = o + ", " + where
	}
	return fmt.Sprintf("document %d (%s): %s", p.Document, where, p.FieldError.Error())
}

// DecodeError reports every problem of a stream, in stream order.
type DecodeError struct {
	// Problems, sorted by document, line and field path.
	Problems []Problem
}

// Error lists every problem, one a line.
func (e *DecodeError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.Error())
	}
	return b.String()
}

// decodeFunc decodes one JSON document (data, parsed as tree by
// strictyaml.ParseJSON) of a known version and kind into objs, or returns
// what is wrong with it. When its only problems are invalid values of
// self-decoding fields (a duration such as "10x"), it also returns the
// object decoded without them, as an Objects of its own, so that Load
// can report the object's other problems too.
type decodeFunc func(data []byte, tree any, objs *Objects) ([]FieldError, *Objects)

// into returns a decodeFunc that decodes a T strictly and hands it to add.
func into[T any](add func(*Objects, *T)) decodeFunc {
	return func(data []byte, tree any, objs *Objects) ([]FieldError, *Objects) {
		obj := new(T)
		errs, decoded := strictyaml.UnmarshalLenient(data, tree, obj)
		switch {
		case len(errs) == 0:
			add(objs, obj)
			return nil, nil
		case decoded:
			partial := &Objects{}
			add(partial, obj)
			return errs, partial
		}
		return errs, nil
	}
}

// converted returns a decodeFunc that decodes an older HelmRelease version
// T strictly and converts it to a Release, with a warning that the
// version is read for migration only.
func converted[T any](version string, convert func(*T) *Release) decodeFunc {
	return into(func(o *Objects, old *T) {
		r := convert(old)
		o.Releases = append(o.Releases, r)
		o.Warnings = append(o.Warnings, MigrationWarning(r, version))
	})
}

// Decode reads a multi-document YAML stream (any document of which may be
// a JSON object) and decodes every HelmRelease (helm.toolkit.fluxcd.io v2,
// v2beta2, v2beta1), every HelmRepository, OCIRepository and HelmChart
// (source.toolkit.fluxcd.io v1, v1beta2), every Flux Kustomization
// (kustomize.toolkit.fluxcd.io v1), every Karmada PropagationPolicy,
// ClusterPropagationPolicy, OverridePolicy and ClusterOverridePolicy
// (policy.karmada.io/v1alpha1) and every core v1 ConfigMap, Secret and
// Namespace (as plain objects, Objects.Plain) in it. A v1 List (as
// kubectl get -o yaml prints) is decoded item by item. Blank and
// comment-only documents are skipped.
//
// Decoding is strict: unknown fields, values of the wrong type, invalid
// durations, duplicate keys, YAML syntax errors, JSON that is not exactly
// one object (trailing data, a second object) and unknown kinds or API
// versions are all reported at once, as a *DecodeError naming the
// document, the object and the field path. The objects that decoded
// cleanly are returned beside the error.
//
// Decode neither defaults nor validates; call Default and Validate (or
// Objects.Validate) next.
//
// A stream longer than MaxStreamBytes is refused with a
// *StreamTooLargeError before anything is decoded. Decoding time and
// memory grow linearly with the stream's length.
//
// Options: WithDefaultNamespace fills in the namespace of objects of
// namespaced kinds that have none, as kubectl does; WithEnforceNamespace
// also refuses objects in another namespace.
func Decode(r io.Reader, opts ...DecodeOption) (*Objects, error) {
	objs, _, err := decode(r, newDecodeOptions(opts))
	return objs, err
}

// decode is Decode, also returning the documents that failed to decode
// only for invalid values of self-decoding fields, decoded without them.
func decode(r io.Reader, opts decodeOptions) (*Objects, []partial, error) {
	stream, err := io.ReadAll(io.LimitReader(r, MaxStreamBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read stream: %w", err)
	}
	if len(stream) > MaxStreamBytes {
		return nil, nil, &StreamTooLargeError{Limit: MaxStreamBytes}
	}
	d := decoder{registry: decoders(), objs: &Objects{}, opts: opts}
	for _, doc := range strictyaml.Split(stream) {
		d.document(doc)
	}
	d.objs.fillNamespace(opts.namespace)
	for _, p := range d.partial {
		p.objs.fillNamespace(opts.namespace)
	}
	if len(d.problems) > 0 {
		sortProblems(d.problems)
		return d.objs, d.partial, &DecodeError{Problems: d.problems}
	}
	return d.objs, nil, nil
}

func sortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Document, b.Document), cmp.Compare(a.Line, b.Line), strings.Compare(a.Path, b.Path))
	})
}

// partial is an object that decoded only without some invalid values.
type partial struct {
	doc    strictyaml.Document
	h      header
	prefix string // of a List item
	objs   *Objects
	bad    []string // paths of the invalid values, without prefix
}

// problems defaults and validates the object and returns its validation
// problems, leaving out those at (or under) the invalid values, which
// Decode reported already.
func (p partial) problems() []Problem {
	p.objs.Default()
	var out []Problem
	for _, fe := range validationErrors(p.objs.Validate()) {
		if slices.ContainsFunc(p.bad, func(b string) bool {
			return fe.Path == b || strings.HasPrefix(fe.Path, b+".") || strings.HasPrefix(fe.Path, b+"[")
		}) {
			continue
		}
		fe.Path = joinPath(p.prefix, fe.Path)
		out = append(out, Problem{
			Document: p.doc.Index, Line: p.doc.Line,
			APIVersion: p.h.apiVersion, Kind: p.h.kind, Namespace: p.h.namespace, Name: p.h.name,
			FieldError: fe,
		})
	}
	return out
}

// validationErrors flattens what Objects.Validate returns into field
// errors.
func validationErrors(err error) []FieldError {
	if err == nil {
		return nil
	}
	if ve, ok := err.(*ValidationError); ok {
		return ve.Errors
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []FieldError
		for _, e := range j.Unwrap() {
			out = append(out, validationErrors(e)...)
		}
		return out
	}
	return []FieldError{{Message: err.Error()}}
}

// MaxStreamBytes is the longest stream Decode reads: 64 MiB. Decoding
// costs about 70 bytes of allocation and 0.2 ms of CPU for each KB of
// YAML, and its peak memory grows by about 12 times
// the stream's size, so a stream at the cap costs some 4.5 GB of
// allocation, 15 s of CPU and 1 GB of memory: the most a caller should
// pay for one unchecked input. 64 MiB is still some 40 of Kubernetes'
// largest objects (etcd keeps at most 1.5 MiB each) or 40,000 HelmReleases
// of 1.5 KB, more than one fleet keeps in one file; split larger inputs
// into several calls.
const MaxStreamBytes = 64 << 20

// ErrStreamTooLarge is matched (errors.Is) by a *StreamTooLargeError.
var ErrStreamTooLarge = errors.New("stream too large")

// StreamTooLargeError reports a stream longer than Decode accepts.
type StreamTooLargeError struct {
	// Limit is the cap that applied, in bytes (MaxStreamBytes).
	Limit int
}

// Error names the limit.
func (e *StreamTooLargeError) Error() string {
	return fmt.Sprintf("stream too large: more than %d bytes (%d MiB, release.MaxStreamBytes); split it into several streams", e.Limit, e.Limit>>20)
}

// Is makes errors.Is(err, ErrStreamTooLarge) true.
func (e *StreamTooLargeError) Is(target error) bool { return target == ErrStreamTooLarge }

// Load decodes a stream (see Decode), applies Flux's defaults to every
// object (Objects.Default) and validates them (Objects.Validate). It
// returns a *DecodeError when the stream does not decode, else the joined
// *ValidationErrors, if any, beside the objects.
//
// A document whose only decoding problems are invalid values of fields
// that parse themselves, such as a duration "10x", is still defaulted and
// validated without those values, and its validation problems join the
// *DecodeError: every mistake at once.
//
// Every object of a namespaced kind without metadata.namespace gets the
// namespace "default", as kubectl gives it with its default context: the
// policies as much as the HelmReleases beside them. WithDefaultNamespace
// names another namespace; WithEnforceNamespace also refuses objects in
// another namespace (see Decode).
func Load(r io.Reader, opts ...DecodeOption) (*Objects, error) {
	o := newDecodeOptions(opts)
	if o.namespace == "" {
		o.namespace = metav1.NamespaceDefault
	}
	objs, partials, err := decode(r, o)
	if err != nil {
		de, ok := err.(*DecodeError)
		if !ok || len(partials) == 0 {
			return objs, err
		}
		lines := map[int]map[string]int{} // by document
		for _, p := range partials {
			if _, ok := lines[p.doc.Index]; !ok {
				lines[p.doc.Index] = strictyaml.Lines(p.doc)
			}
			for _, vp := range p.problems() {
				if l := strictyaml.LineOf(lines[p.doc.Index], vp.Path); l > 0 {
					vp.Line = l
				}
				de.Problems = append(de.Problems, vp)
			}
		}
		sortProblems(de.Problems)
		return objs, de
	}
	objs.Default()
	return objs, objs.Validate()
}

type decoder struct {
	registry map[schema.GroupKind]map[string]decodeFunc
	opts     decodeOptions
	objs     *Objects
	problems []Problem
	partial  []partial
}

func (d *decoder) document(doc strictyaml.Document) {
	data, jsonProblems, isJSON := strictyaml.CheckJSON(doc)
	if len(jsonProblems) > 0 {
		// Like YAML's duplicate keys, these stop the document, but every
		// one of them is reported.
		var h header
		if tree, err := strictyaml.ParseJSON(data); err == nil {
			if obj, ok := tree.(map[string]any); ok {
				h = readHeader(obj)
			}
		}
		for _, jp := range jsonProblems {
			d.add(doc, h, jp.FieldError)
			d.problems[len(d.problems)-1].Line = jp.Line
		}
		return
	}
	if !isJSON {
		var err error
		if data, err = strictyaml.ToJSON(doc); err != nil {
			p := Problem{Document: doc.Index, Line: doc.Line, FieldError: FieldError{Message: "invalid YAML: " + err.Error()}}
			if se, ok := errors.AsType[*strictyaml.SyntaxError](err); ok && se.Line > 0 {
				p.Line = se.Line
			}
			d.problems = append(d.problems, p)
			return
		}
	}
	first := len(d.problems)
	d.object(doc, "", data, nil, 0)
	if len(d.problems) > first {
		// Point each problem at its field's line; parsing the document
		// again is paid only by documents with problems.
		lines := strictyaml.Lines(doc)
		for i := first; i < len(d.problems); i++ {
			if l := strictyaml.LineOf(lines, d.problems[i].Path); l > 0 {
				d.problems[i].Line = l
			}
		}
	}
}

// header is what Decode reads of a document before knowing its kind.
type header struct {
	apiVersion, kind, namespace, name string
}

func readHeader(obj map[string]any) header {
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return s
	}
	h := header{apiVersion: str(obj, "apiVersion"), kind: str(obj, "kind")}
	if md, ok := obj["metadata"].(map[string]any); ok {
		h.namespace, h.name = str(md, "namespace"), str(md, "name")
	}
	return h
}

// MaxListDepth is how deep Decode reads v1 Lists inside v1 Lists: 8
// levels, where kubectl writes one. A deeper List is refused with a
// Problem at its path.
const MaxListDepth = 8

// object decodes one object (a document, or an item of a List at prefix)
// from data, or from raw when raw is not nil (an item of a List, already
// parsed; data is then encoded from it only if it is not a List itself,
// so that nested Lists cost no more than their size). depth counts the
// Lists around it.
func (d *decoder) object(doc strictyaml.Document, prefix string, data []byte, raw any, depth int) {
	if raw == nil {
		var err error
		if raw, err = strictyaml.ParseJSON(data); err != nil {
			d.add(doc, header{}, FieldError{Path: prefix, Message: "invalid JSON: " + err.Error()})
			return
		}
		if raw == nil {
			return // "~" or "null": nothing to decode
		}
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		if data == nil {
			data, _ = json.Marshal(raw)
		}
		d.add(doc, header{}, FieldError{Path: prefix, Value: shortValue(string(data)), Message: "expected an object with apiVersion and kind"})
		return
	}
	h := readHeader(obj)
	switch {
	case h.apiVersion == "" || h.kind == "":
		d.add(doc, h, FieldError{Path: prefix, Message: "apiVersion and kind are required"})
		return
	case h.apiVersion == "v1" && h.kind == "List":
		if depth >= MaxListDepth {
			d.add(doc, h, FieldError{Path: prefix, Message: fmt.Sprintf("Lists nested more than %d deep (release.MaxListDepth); put the objects in one List", MaxListDepth)})
			return
		}
		d.list(doc, prefix, h, obj, depth+1)
		return
	}
	if data == nil {
		var err error
		if data, err = json.Marshal(obj); err != nil {
			d.add(doc, h, FieldError{Path: prefix, Message: "cannot encode the item: " + err.Error()})
			return
		}
	}
	gv, err := schema.ParseGroupVersion(h.apiVersion)
	if err != nil {
		d.add(doc, h, FieldError{Path: joinPath(prefix, "apiVersion"), Value: shortValue(h.apiVersion), Message: "invalid apiVersion: " + redact.Text(err.Error())})
		return
	}
	byVersion, ok := d.registry[gv.WithKind(h.kind).GroupKind()]
	if !ok {
		d.add(doc, h, FieldError{
			Path:    joinPath(prefix, "kind"),
			Value:   shortValue(h.kind),
			Message: fmt.Sprintf("unknown kind %q of apiVersion %q; accepted: %s", shortValue(h.kind), shortValue(h.apiVersion), d.accepted()),
		})
		return
	}
	decode, ok := byVersion[gv.Version]
	if !ok {
		var accepted []string
		for v := range byVersion {
			accepted = append(accepted, gv.Group+"/"+v)
		}
		slices.Sort(accepted)
		d.add(doc, h, FieldError{
			Path:    joinPath(prefix, "apiVersion"),
			Value:   shortValue(h.apiVersion),
			Message: fmt.Sprintf("unsupported apiVersion %q for kind %s; accepted: %s", shortValue(h.apiVersion), shortValue(h.kind), strings.Join(accepted, ", ")),
		})
		return
	}
	if fe, ok := d.opts.mismatch(gv.WithKind(h.kind).GroupKind(), h.namespace); ok {
		fe.Path = joinPath(prefix, fe.Path)
		d.add(doc, h, fe)
		return
	}
	errs, part := decode(data, raw, d.objs)
	for _, fe := range errs {
		d.add(doc, h, FieldError{Path: joinPath(prefix, fe.Path), Value: fe.Value, Message: fe.Message})
	}
	if part != nil {
		bad := make([]string, 0, len(errs))
		for _, fe := range errs {
			bad = append(bad, fe.Path)
		}
		d.partial = append(d.partial, partial{doc: doc, h: h, prefix: prefix, objs: part, bad: bad})
	}
}

// list decodes the items of a v1 List, the depth-th around them.
func (d *decoder) list(doc strictyaml.Document, prefix string, h header, obj map[string]any, depth int) {
	for k := range obj {
		if k != "apiVersion" && k != "kind" && k != "metadata" && k != "items" {
			d.add(doc, h, FieldError{Path: joinPath(prefix, k), Message: "unknown field"})
		}
	}
	items, ok := obj["items"].([]any)
	if !ok && obj["items"] != nil {
		d.add(doc, h, FieldError{Path: joinPath(prefix, "items"), Message: "expected a list"})
		return
	}
	for i, item := range items {
		p := fmt.Sprintf("%sitems[%d]", dotted(prefix), i)
		if item == nil {
			d.object(doc, p, []byte("null"), nil, depth)
			continue
		}
		d.object(doc, p, nil, item, depth)
	}
}

func (d *decoder) add(doc strictyaml.Document, h header, fe FieldError) {
	d.problems = append(d.problems, Problem{
		Document: doc.Index, Line: doc.Line,
		APIVersion: h.apiVersion, Kind: h.kind, Namespace: h.namespace, Name: h.name,
		FieldError: fe,
	})
}

// accepted lists every accepted apiVersion and kind, sorted.
func (d *decoder) accepted() string {
	var all []string
	for gk, byVersion := range d.registry {
		for v := range byVersion {
			all = append(all, schema.GroupVersion{Group: gk.Group, Version: v}.String()+" "+gk.Kind)
		}
	}
	slices.Sort(all)
	return strings.Join(all, ", ")
}

func joinPath(prefix, path string) string {
	switch {
	case prefix == "":
		return path
	case path == "":
		return prefix
	case strings.HasPrefix(path, "["):
		return prefix + path
	default:
		return prefix + "." + path
	}
}

func dotted(prefix string) string {
	if prefix == "" {
		return ""
	}
	return prefix + "."
}

func shortValue(s string) string { return strictyaml.Value(s) }
