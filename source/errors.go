package source

import (
	"errors"
	"fmt"
	"strings"

	"github.com/helmfleet/helmfleet/internal/redact"
)

// Sentinel errors. Every error this package returns for a problem with the
// input or the remote side wraps one of them (test with errors.Is) and, when
// it comes from a resolver, is an *Error that says where (test with
// errors.As).
var (
	// ErrChartNotFound: the repository index or registry has no such chart.
	ErrChartNotFound = errors.New("chart not found")
	// ErrNoMatchingVersion: no version of the chart satisfies the constraint.
	ErrNoMatchingVersion = errors.New("no chart version matches")
	// ErrInvalidConstraint: the version constraint is not valid semver syntax.
	ErrInvalidConstraint = errors.New("invalid version constraint")
	// ErrInvalidIndex: the repository index is not a valid Helm index.
	ErrInvalidIndex = errors.New("invalid repository index")
	// ErrTooLarge: an index or chart archive is larger than the configured cap.
	ErrTooLarge = errors.New("size limit exceeded")
	// ErrDigestMismatch: downloaded bytes do not have the digest the index
	// or the reference promised.
	ErrDigestMismatch = errors.New("digest mismatch")
	// ErrDigestMissing: a repository index entry has no digest to verify
	// its chart archive against, and its HelmRepository does not accept
	// that (see AnnotationAllowMissingDigest).
	ErrDigestMissing = errors.New("digest missing")
	// ErrInvalidArchive: a chart archive is corrupt, escapes its directory or
	// is not a chart; or a chart directory holds a link that leaves it or a
	// special file.
	ErrInvalidArchive = errors.New("invalid chart archive")
	// ErrChartMismatch: the loaded chart's Chart.yaml names another chart or
	// another version than the one it was resolved as. It wraps
	// ErrInvalidArchive.
	ErrChartMismatch = fmt.Errorf("%w: the chart is not the one resolved", ErrInvalidArchive)
	// ErrUnreachable: the repository could not be contacted at all.
	ErrUnreachable = errors.New("repository unreachable")
	// ErrUnauthorized: the repository answered 401.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the repository answered 403.
	ErrForbidden = errors.New("forbidden")
	// ErrNotFound: the repository answered 404 for the index or archive.
	ErrNotFound = errors.New("not found")
	// ErrServer: the repository answered with a 5xx status (or another
	// unexpected one).
	ErrServer = errors.New("repository error")
	// ErrValuesFileMissing: a file listed in valuesFiles is not in the chart.
	ErrValuesFileMissing = errors.New("values file not found in chart")
	// ErrUnsupportedSource: no resolver handles the reference's source.
	ErrUnsupportedSource = errors.New("unsupported chart source")
	// ErrInvalidChartName: the chart name asked of a Helm repository is
	// empty or not of the form Flux accepts (lower-case letters, digits
	// and dashes, parts separated by single slashes or periods).
	ErrInvalidChartName = errors.New("invalid chart name")
)

// Error is the error a resolver returns. It names the source (a repository
// URL without credentials, or a local path), the chart and the version
// constraint, and wraps one of the sentinel errors above.
type Error struct {
	// Op is what failed: "fetch index", "select version", "download chart",
	// "pull chart", "list tags", "load chart", "read values files".
	Op string
	// Source is the repository URL (credentials and query removed) or path.
	Source string
	// Chart is the chart's name, when known.
	Chart string
	// Constraint is the version constraint asked for, when relevant.
	Constraint string
	// StatusCode is the HTTP status the repository answered, if any.
	StatusCode int
	// Err is the cause; it wraps a sentinel error.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("source: ")
	b.WriteString(e.Op)
	if e.Chart != "" {
		fmt.Fprintf(&b, " chart %q", e.Chart)
	}
	if e.Constraint != "" {
		fmt.Fprintf(&b, " version %q", e.Constraint)
	}
	if e.Source != "" {
		fmt.Fprintf(&b, " from %s", e.Source)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// statusError maps an unexpected HTTP status to its sentinel.
func statusError(code int) error {
	switch {
	case code == 401:
		return fmt.Errorf("%w: HTTP %d", ErrUnauthorized, code)
	case code == 403:
		return fmt.Errorf("%w: HTTP %d", ErrForbidden, code)
	case code == 404:
		return fmt.Errorf("%w: HTTP %d", ErrNotFound, code)
	default:
		return fmt.Errorf("%w: HTTP %d", ErrServer, code)
	}
}

// Redact returns raw without user information, query and fragment, so a
// URL can name a repository in errors, logs and Chart.Source without
// leaking credentials or tokens. It is redact.Strip: any string is
// accepted, and one that does not parse as a URL is scrubbed as text (what
// precedes its last "@" after the scheme, and whatever follows the first
// "?" or "#", is dropped). Messages that quote a full URL use the masking
// form instead (https://***@host/x.tgz?sig=***).
func Redact(raw string) string { return redact.Strip(raw) }

// LimitError reports a chart archive or directory beyond one of the caps
// that protect the resolvers from hostile input. It wraps ErrTooLarge; the
// *Error around it names the reference and its source.
type LimitError struct {
	// Chart is the chart's directory in the archive (its name as packaged),
	// or the base name of a chart directory; empty when not known yet.
	Chart string
	// What is capped: LimitEntries or LimitSize.
	What string
	// Limit is the cap that was exceeded.
	Limit int64
}

// The caps a LimitError names.
const (
	// LimitEntries caps the number of entries of an archive (files,
	// directories and any other tar headers) or of files in a directory.
	LimitEntries = "entries"
	// LimitSize caps the bytes an archive expands to (the whole
	// uncompressed tar stream, headers and padding included) or a chart
	// directory's files hold.
	LimitSize = "bytes"
)

// Error implements error.
func (e *LimitError) Error() string {
	name := "the chart"
	if e.Chart != "" {
		name = fmt.Sprintf("chart %q", e.Chart)
	}
	return fmt.Sprintf("%v: %s has more than %d %s", ErrTooLarge, name, e.Limit, e.What)
}

// Unwrap returns ErrTooLarge.
func (e *LimitError) Unwrap() error { return ErrTooLarge }
