// Package drift compares what a release should have put in a cluster with
// what is there, explains the difference, and plans its correction. It is
// pure: the caller lists the live objects (one list request per kind is
// enough) and passes them in; nothing here talks to a cluster, reads a
// clock or starts a goroutine.
//
// # Comparing the way server-side apply does
//
// Only fields the desired object sets count. Server defaults, status, and
// fields that other managers added are not drift; a field the desired
// object sets that live lacks or holds with another value is. Of
// metadata, only labels and annotations are compared, and of those only
// keys the desired object sets: a key others added is not drift, a key of
// ours that was changed or removed is. Lists that Kubernetes merges by key
// (containers, env, volumes, ports, …) are matched by that key, so a
// sidecar injected by a webhook is not drift; other lists are compared by
// position and must keep their length. Keyed lists are matched through an
// index, so a reordered list costs time linear in its length. An empty value (false, 0, "", {},
// [] or null) that the desired object sets and live lacks is not drift,
// since typed API fields drop empty values when they are stored; in
// ConfigMap and Secret data, labels and annotations every key counts.
// Resource quantities compare by
// value ("0.5" equals "500m"), numbers by value, and a Secret's stringData
// is compared as the base64 data the API server stores.
//
// # Helm ownership and overridden field managers
//
// With Options.HelmRelease, each desired object carries the metadata
// Helm writes on what it creates (app.kubernetes.io/managed-by: Helm,
// meta.helm.sh/release-name and meta.helm.sh/release-namespace), so a live
// object that lost or changed them has drifted. Options.OverrideManagers
// is helm-controller's --override-manager (empty by default, as there): a
// live field desired does not set, owned by those managers (and at most
// Options.FieldManager), is drift whose correction removes it: an edit
// by kubectl, say, that added a key. So is a live field that
// Options.FieldManager's own Apply entry alone owns and desired no
// longer sets, as a server-side apply of desired would drop it (Flux's
// dry-run apply does); fields it owns through Update operations, as
// Helm's creates and patches record them, are never removed. Only such
// fields are ever removed: below maps, and in keyed lists whole elements
// whose key desired lacks (the correction removes those last, highest
// index first, so that the indices hold).
//
// # Ignore rules
//
// Compile takes Flux's driftDetection.ignore[] rules (IgnoreRule): RFC 6901
// pointers into the desired object, applied to the objects a Selector
// targets (group, version, kind, name and namespace as anchored regular
// expressions, plus label and annotation selectors); the pointer ""
// excludes the whole object. Every rule that targets an object applies —
// Flux keeps rules in a map keyed by their selector, so several rules
// without a target collapse to the last one; here they all count. An
// object labelled or annotated helm.toolkit.fluxcd.io/driftDetection:
// disabled (on either side) is excluded. ManagerRule adds Argo CD's ignore
// by field manager: a difference in a field that a named manager owns in
// the live object's managedFields is listed as ignored, not as drift.
// A list element's entry in a manager's field set is the one the API
// server writes for it (its merge key, as the server spells it), looked
// up directly, so that naming the managers of a changed element costs
// the same in a list of ten or of ten thousand; only a set not written
// that way (another spelling, several entries for one element) is
// indexed whole, and then the least matching entry counts.
//
// # Reports and corrections
//
// Detect returns a Report: each object Missing, Modified (with the field
// list, the JSON patch from live to desired, and the live field managers
// owning each changed field), Unchanged, Excluded or, with Options.Extra,
// Extra (live objects of the release that nothing desired names). The
// Report also says which objects each rule selected and which rules
// selected nothing. Report.Corrections plans, in ModeEnabled only, a
// create per missing object and a JSON patch per modified one; patches
// add or replace fields desired sets, remove only the fields described
// above, and leave ignored paths as live has them. With
// Options.Rationalize, as helm-controller configures jsondiff, the
// changes below a map or list become one replace of it when that is the
// shorter patch (counted as jsondiff v0.6.1 counts it).
//
// Secret data and stringData values are masked everywhere a person may
// read them (ObjectResult.Changes and Patch, Report.String,
// Correction.String), while Correction.Patch and Correction.Create keep the
// real values that the cluster needs. Masking always works on copies, so
// it cannot leak into the correction (Flux once shipped masked values
// into a patch). Printing a Report or an ObjectResult with fmt, whatever
// the verb, or marshalling it shows no real Secret value either, and a
// Correction formats as its masked String (%#v as a masked GoString).
//
// # Fidelity to Flux
//
// Drift follows helm-controller v1.6.3's diff and the fluxcd/pkg
// ssa/jsondiff v0.76.1 it requires; their data-driven tests run as the
// package's peer suite (testdata/peer/flux), each case marked agree,
// documented difference or skipped with its reason, and run with the
// options that express Flux's configuration (helm-controller's Diff
// rationalizes, overrides its --override-manager managers and applies as
// its field manager). Corrections are ordered as fluxcd/pkg/ssa orders
// kinds (Namespaces and CRDs first).
//
// Where helmfleet differs, deliberately (SEMANTICS.md §6), and why (the
// README's table "How helmfleet differs from Flux and Karmada" lists these
// with the library's other differences):
//
//   - Ignore rules without a target. Flux keys compiled rules by their
//     selector, nil for every rule without one, so the last such rule
//     replaces the others; here every rule applies, since a user who
//     writes two rules means both.
//   - Masking. Flux masks a Secret's patch for its log in place, and once
//     shipped that masked patch as the correction; here masking works on
//     copies, so the correction keeps the real values. Flux can turn
//     masking off (MaskSecrets(false)) and, in a rationalized replace of a
//     data map, leaves the new value of an unchanged key unmasked; here
//     every Secret value in a report is masked, and the real patch is only
//     in Report.Corrections.
//   - Rationalized replaces. Flux may replace the object's root or its
//     metadata whole (the metadata it compares holds only name, labels
//     and annotations, so such a replace would drop the rest), and removes
//     ignored paths from both sides before it rationalizes, so a replaced
//     map loses the ignored keys live has; here the root, metadata and
//     any map or list holding an ignored path are never replaced whole.
//
// # Limits
//
// Detect and Compare refuse, with a *LimitError (ErrTooLarge) naming the
// object and the JSON pointer at fault, a keyed list longer than
// MaxKeyedListLength and a compared value nested deeper than MaxDepth:
// limits far beyond what an API server stores, which bound the work a
// hostile manifest can cause.
package drift
