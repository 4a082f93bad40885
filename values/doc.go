// Package values computes the values a Helm release installs with, from
// ordered sources, with Flux helm-controller's semantics, and records where
// every value came from without ever printing a Secret.
//
// # Composition
//
// Compose applies, in this order:
//
//  1. Request.Files: the chart's valuesFiles as the source package read
//     them (name and raw bytes; the listed files replace the chart's own
//     values.yaml, which counts only if listed), deep-merged in list order;
//  2. Request.From: Flux valuesFrom references, read through a Reader from
//     the release's namespace. Without TargetPath the key (default
//     values.yaml) holds a YAML map merged at the root. With TargetPath the
//     key's text is assigned at that Helm --set path (a.b[0].c, escaped dots
//     as in kubernetes\.io/role): a text in quotes is a string, anything else
//     is typed as --set types it; Literal assigns the text verbatim as
//     --set-literal does, at a path that keeps --set's escapes
//     (a\.b is the key "a.b"), as Flux's literal does. Optional skips a
//     missing object or key;
//  3. Request.Inline (the release's spec.values), deep-merged;
//  4. the TargetPath assignments, in reference order, so that they win over
//     everything before them, inline values included (Flux's "target path
//     precedence over all");
//  5. Request.Overrides: per-cluster merge maps and RFC 6902 patches.
//
// The deep merge is Merge: maps merge recursively, lists and scalars replace,
// a null stays null. The result is what Helm receives as user-supplied
// values; Helm then coalesces it with the chart's defaults itself (a null
// deletes a default key) — this package does not reimplement that.
//
// YAML is read with Helm's exact reading (chartutil.ReadValues, i.e.
// sigs.k8s.io/yaml over YAML 1.1: yes/on are booleans, numbers are float64,
// keys become strings, merge keys and anchors work) and --set paths with
// Helm's exact parser semantics (strvals); fuzz tests compare both with Helm
// itself. Unlike Helm, a malformed document that Helm's YAML parser reads
// as nothing at all (an anchor name with a comma before an unterminated
// quote), or cuts short (malformed text after a complete flow mapping at the
// top, as in `{a: 1},"`), is refused rather than taken as empty or partial
// values; documents are bounded (Limits: size and alias expansion), a request has at most Limits.MaxReferences valuesFrom
// references (DefaultMaxReferences, 1,000, unless raised; more is a
// *TooManyReferencesError before anything is read), a nil Reader is an error
// (ErrNoReader), and every other failure is a *SourceError naming the
// release, the source (kind/name[key], file or override) and the YAML line.
// Composition costs time and memory linear in the number of references and
// the size of the documents.
//
// Some differences from Flux are deliberate (the README's table "How
// helmfleet differs from Flux and Karmada" lists them with the library's
// others). Flux lets a targetPath value win
// over inline values only through map aliasing, so whether it wins depends on
// which earlier source created the parent map. Here targetPath assignments
// always come after inline values, as Flux documents. A second: yaml.v3
// nodes lose YAML's non-specific tag "!", so "! 1" is a number here and a
// string in Helm. A third: Literal without TargetPath is an error
// (ErrInvalidReference), where Flux ignores the field and merges the
// document at the root; a field that would do nothing is reported, not
// passed over.
//
// # Provenance
//
// Result.Provenance knows, for every leaf (scalar, null, empty map or list),
// which source set it and which sources it overrode. Explain answers
// "where did image.tag come from", String prints the whole tree.
//
// # Secret safety
//
// Values that come from a Secret — merged documents, targetPath values, and
// values a patch copies from them — are printed as a redaction marker with a
// short hash ("<redacted sha256:1a2b3c4d>", keyed with Request.RedactionKey
// when given) in provenance, in Result's String and Format (every fmt verb),
// in its JSON and YAML encodings and in Redacted (use it for plans and
// diffs). Only Result.Values, which Helm needs, and Result.SecretValues,
// which lists them so that rendered manifests can be masked, hold them in
// the clear. Inline values that Request.SecretInline names (a release's
// values substituted from a Secret) are treated the same way, from the
// inline source. Key names are structure and are printed; do not keep secrets in
// key names. The digest covers Secret values too (it must change when they
// change); like Flux's values digest it can confirm a guess of a weak secret
// by someone who knows all other values.
//
// This holds by construction, not by filtering output: a Secret's text
// never reaches an error message. A YAML error in a Secret's document shows
// this package's own fixed message — the line, and the parser's problem only
// when it is one of a fixed list of texts that quote nothing ("did not find
// expected key") — followed by the Secret's namespace/name, the key and the
// redaction marker of the whole text; the parser's error is not kept. A
// Secret's text at a targetPath is never given to the --set line parser: the
// path is applied with a placeholder (errors about the path may show
// "VALUE"), and the text is read on its own as one --set value.
//
// That one value is read as Flux reads it — quotes make a string, {a,b} is a
// list, true and 8080 are typed, a backslash escapes — except for a comma
// outside a list (or text after a list), which helm --set, and so Flux,
// reads as the start of another assignment, creating keys named after the
// rest of the Secret's text ("x,CANARY=1" sets a key CANARY). Such text is
// refused with ErrTargetPath, an error that does not show it; write the comma
// as \, or set Reference.Literal, which takes the text verbatim. Refusing
// rather than reading every Secret literally keeps Flux's typing for the
// values Flux reads as intended, and changes only texts that Flux splits
// into keys, which are mistakes. (One more difference from Helm: an empty
// text, or empty quotes, is the empty string at every path; Helm leaves a
// list element unset.) ConfigMap texts keep Helm's exact --set semantics.
//
// # Fidelity to Helm and Flux
//
// The package's tests run the data-driven cases of Helm's strvals tests (helm/helm
// v3.21.4, whose --set parser is the one Flux v1.6 uses) and of Flux's
// chartutil tests (fluxcd/pkg chartutil/v1.27.1) from testdata/peer, with
// the peers' expected results as the oracle, through Compose. A --set line
// is ported as a ConfigMap's text at a targetPath, the form in which Flux
// hands it to that parser; all of these cases agree. The one documented
// difference among the peers' cases is Literal without TargetPath (above).
// The same targetPath cases run again with the text in a Secret: there the
// texts with a comma outside a list are refused as described under Secret
// safety, helmfleet's own choice, checked and counted apart from the peers'
// cases.
package values
