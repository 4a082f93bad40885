package values

import (
	"errors"
	"fmt"
	"strings"
)

// Reasons a source fails. A *SourceError matches exactly one of them with
// errors.Is (ErrNotFound for a missing object).
var (
	// ErrRead: the Reader failed for another reason than a missing object.
	ErrRead = errors.New("reading the object failed")
	// ErrKeyNotFound: the object exists but has no such data key.
	ErrKeyNotFound = errors.New("key not found")
	// ErrUnsupportedKind: a Reference kind other than ConfigMap or Secret.
	ErrUnsupportedKind = errors.New("unsupported values reference kind")
	// ErrInvalidYAML: the text is not valid YAML or holds values that cannot be
	// Helm values (NaN, a map used as a key, …).
	ErrInvalidYAML = errors.New("invalid YAML")
	// ErrNotMap: the YAML document is valid but not a map at the top.
	ErrNotMap = errors.New("YAML document is not a map")
	// ErrTooLarge: the document exceeds Limits.MaxDocumentBytes.
	ErrTooLarge = errors.New("document too large")
	// ErrAliasLimit: YAML aliases expand to more than Limits.MaxAliasNodes nodes.
	ErrAliasLimit = errors.New("YAML aliases expand beyond the limit")
	// ErrTargetPath: the targetPath (with its value) cannot be applied in
	// Helm --set syntax.
	ErrTargetPath = errors.New("invalid targetPath")
	// ErrInvalidReference: the reference itself is malformed (e.g. literal
	// without targetPath, empty name).
	ErrInvalidReference = errors.New("invalid values reference")
	// ErrPatch: an override's JSON patch cannot be applied.
	ErrPatch = errors.New("override patch failed")
	// ErrNoReader: Compose was given a nil Reader and a reference to read.
	ErrNoReader = errors.New("no Reader to read values references with")
	// ErrTooManyReferences: Request.From has more entries than
	// Limits.MaxReferences. Compose returns it as a *TooManyReferencesError.
	ErrTooManyReferences = errors.New("too many valuesFrom references")
)

// SourceError is the error Compose returns for a source that cannot be used.
// It names the release, the source (kind, name, key or file, target path),
// the YAML line when known, and the reason.
//
// It never holds text taken from a Secret, by construction: for a Secret
// source, Detail is a fixed message of this package (what is wrong, never
// which text), followed by the Secret's namespace/name, the key and a
// redaction marker (a short hash of the whole text, as in provenance), and
// the parser's own error is not kept. Parser messages are never filtered
// after the fact.
type SourceError struct {
	// Release is Request.Release.
	Release string
	// Source is the failing source.
	Source Source
	// Line is the 1-based YAML line, 0 when not applicable.
	Line int
	// Reason is one of the Err… sentinels of this package.
	Reason error
	// Detail says what exactly is wrong; may be empty.
	Detail string
	// Err is the underlying cause (e.g. the Reader's error), if any. It is
	// never a parser error about Secret text.
	Err error
}

// Error implements error.
func (e *SourceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "release %q: values from %s", e.Release, e.Source)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason.Error())
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the reason and the underlying cause, so errors.Is works
// with both.
func (e *SourceError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Reason}
	}
	return []error{e.Reason, e.Err}
}

// TooManyReferencesError reports a request with more valuesFrom references
// than Limits.MaxReferences (DefaultMaxReferences unless raised). Compose
// returns it before reading anything; errors.Is(err, ErrTooManyReferences)
// holds.
type TooManyReferencesError struct {
	// Release is Request.Release.
	Release string
	// Count is len(Request.From).
	Count int
	// Limit is the cap that applied.
	Limit int
}

// Error implements error.
func (e *TooManyReferencesError) Error() string {
	return fmt.Sprintf("release %q: %d valuesFrom references, more than the limit of %d", e.Release, e.Count, e.Limit)
}

// Unwrap returns ErrTooManyReferences.
func (e *TooManyReferencesError) Unwrap() error { return ErrTooManyReferences }
