package values

import (
	"context"
	"encoding/json"
	"errors"
)

// Kind is the kind of Kubernetes object a Reference reads values from.
type Kind string

const (
	// KindConfigMap reads the key from a ConfigMap's data.
	KindConfigMap Kind = "ConfigMap"
	// KindSecret reads the key from a Secret's data. Every value that comes
	// from a Secret is redacted in all output of this package.
	KindSecret Kind = "Secret"
)

// DefaultValuesKey is the key read from a ConfigMap or Secret when a
// Reference leaves ValuesKey empty, as in Flux.
const DefaultValuesKey = "values.yaml"

// ErrNotFound reports that a ConfigMap or Secret does not exist. Reader
// implementations return an error for which errors.Is(err, ErrNotFound)
// holds; Compose returns it (wrapped in *SourceError) for a missing object or
// key of a Reference that is not optional.
var ErrNotFound = errors.New("not found")

// Reader reads the data of a ConfigMap or Secret in a namespace.
//
// For a ConfigMap it returns the entries of .data (not .binaryData, as Flux);
// for a Secret the decoded bytes of .data. When the object does not exist it
// returns an error matching ErrNotFound. The returned map is not modified.
type Reader interface {
	Read(ctx context.Context, kind Kind, namespace, name string) (map[string][]byte, error)
}

// Reference mirrors Flux's ValuesReference (HelmRelease spec.valuesFrom[]).
type Reference struct {
	// Kind is KindConfigMap or KindSecret.
	Kind Kind
	// Name of the object, in the release's namespace (Request.Namespace).
	Name string
	// ValuesKey is the data key to read; empty means DefaultValuesKey.
	ValuesKey string
	// TargetPath, when set, is a Helm --set path (a.b[0].c, kubernetes\.io/role)
	// and the key's text is the value assigned there, parsed as Helm's --set
	// parses it (a quoted text is a string, as Flux's --set-string fallback).
	// A Secret's text must be one value: an unescaped comma outside a {list}
	// is refused (see the package doc). Empty means the key holds a YAML
	// document merged at the root.
	TargetPath string
	// Literal assigns the key's text at TargetPath verbatim, as
	// helm --set-literal does (no type inference, commas and braces are
	// kept), while TargetPath keeps --set's escapes (kubernetes\.io/role), as
	// Flux's literal does. It requires TargetPath (Flux ignores it without).
	Literal bool
	// Optional skips the reference when the object or the key is missing.
	Optional bool
}

// Key returns ValuesKey, or DefaultValuesKey when it is empty.
func (r Reference) Key() string {
	if r.ValuesKey == "" {
		return DefaultValuesKey
	}
	return r.ValuesKey
}

// File is one chart valuesFiles entry as the source package read it from the
// chart: the name as listed in chart.spec.valuesFiles and the raw YAML bytes.
// Files are parsed here so that errors carry lines and limits apply.
type File struct {
	Name string
	Data []byte
}

// PatchOp is one RFC 6902 JSON patch operation of an Override. Patches
// are applied as Karmada applies plaintext overriders (evanphx/json-patch):
// replace at a missing key adds it.
type PatchOp struct {
	// Op is add, remove, replace, move, copy or test.
	Op string
	// Path is an RFC 6901 pointer into the values, e.g. /image/tag.
	Path string
	// From is the source pointer of move and copy.
	From string
	// Value is the operand of add, replace and test; nil is JSON null.
	Value any
}

// MarshalJSON writes the RFC 6902 form: value only (and always, null
// included) for add, replace and test; from only for move and copy.
func (o PatchOp) MarshalJSON() ([]byte, error) {
	m := map[string]any{"op": o.Op, "path": o.Path}
	switch o.Op {
	case "add", "replace", "test":
		m["value"] = o.Value
	case "move", "copy":
		m["from"] = o.From
	}
	return json.Marshal(m)
}

// Override is a per-cluster change to the composed values, applied after
// everything else: either a deep-merge map, or RFC 6902 patch operations, or
// both (merge first).
type Override struct {
	// Name says where the override comes from, e.g.
	// "OverridePolicy default/prod rule 0 cluster member-1"; it appears in
	// provenance and errors.
	Name string
	// Merge is deep-merged over the values (maps recurse, the rest replaces).
	Merge map[string]any
	// Patch is applied after Merge, in order.
	Patch []PatchOp
}

// Limits bound the work a single source may cause. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	// MaxDocumentBytes is the largest YAML document or --set text accepted.
	MaxDocumentBytes int
	// MaxAliasNodes is the most nodes that YAML aliases may expand to in one
	// document (guards against "billion laughs" alias bombs).
	MaxAliasNodes int
	// MaxReferences is the most valuesFrom references (Request.From) one
	// request may have; more is a *TooManyReferencesError.
	MaxReferences int
}

// DefaultMaxReferences is the cap on valuesFrom references per release
// (Limits.MaxReferences when zero). Real releases have a handful; Flux sets
// no cap, but each reference may be an API read and a document to merge, so
// an unbounded list is a way to make every reconcile slow. 1,000 is far above
// any real release and keeps one composition well under a second. Loaders
// of releases (release.Load) check it too, so that the error comes early.
const DefaultMaxReferences = 1000

// DefaultLimits returns the limits used for zero fields: 3 MiB per document
// (Kubernetes objects are smaller), 100,000 alias-expanded nodes and
// DefaultMaxReferences references.
func DefaultLimits() Limits {
	return Limits{MaxDocumentBytes: 3 << 20, MaxAliasNodes: 100_000, MaxReferences: DefaultMaxReferences}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxDocumentBytes <= 0 {
		l.MaxDocumentBytes = d.MaxDocumentBytes
	}
	if l.MaxAliasNodes <= 0 {
		l.MaxAliasNodes = d.MaxAliasNodes
	}
	if l.MaxReferences <= 0 {
		l.MaxReferences = d.MaxReferences
	}
	return l
}

// Request is everything Compose needs for one release.
type Request struct {
	// Release identifies the release in errors, e.g. "apps/podinfo".
	Release string
	// Namespace is the release's namespace; References are read from it.
	Namespace string
	// Files are the chart's valuesFiles in list order (they replace the
	// chart's values.yaml, which counts only if listed).
	Files []File
	// From are the valuesFrom references in order.
	From []Reference
	// Inline are the release's spec.values. Compose does not modify them.
	Inline map[string]any
	// SecretInline lists places in Inline, as JSON pointers (RFC 6901:
	// "/db/password", "/hosts/0"; "" is all of Inline), whose values are
	// Secret data, e.g. because a Kustomization substituted them from a
	// Secret. Compose treats every leaf there as Secret-sourced, as if it
	// had come from a valuesFrom Secret: Provenance marks it Sensitive,
	// Redacted, String and MarshalJSON mask it and SecretValues lists it.
	// A pointer that is not valid JSON pointer syntax marks all of Inline;
	// one that names nothing marks nothing. It can only add marking: a
	// leaf from a Secret reference stays Secret-sourced.
	SecretInline []string
	// InlineCredits name, as JSON pointers into Inline, the places of
	// Inline that an override policy set (see Credit): their leaves are
	// credited to the policy instead of to the inline values.
	InlineCredits []Credit
	// Overrides are per-cluster overrides, applied last in order.
	Overrides []Override
	// Limits bound each document; zero fields take DefaultLimits.
	Limits Limits
	// RedactionKey, when set, keys the hash in redaction markers (HMAC-SHA256)
	// so that short Secret values cannot be guessed from their marker.
	RedactionKey []byte
}
