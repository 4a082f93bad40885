package source

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
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
	// ErrInvalidArchive: a chart archive is corrupt, escapes its directory or
	// is not a chart.
	ErrInvalidArchive = errors.New("invalid chart archive")
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

// Redact returns raw with user information and query removed, so a URL can
// appear in errors and logs without leaking credentials or tokens. A string
// that does not parse as a URL is returned with anything up to an "@" that
// precedes the first "/" after the scheme removed.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		scheme, rest, ok := strings.Cut(raw, "://")
		if !ok {
			return raw
		}
		host, path, _ := strings.Cut(rest, "/")
		if i := strings.LastIndex(host, "@"); i >= 0 {
			host = host[i+1:]
		}
		if path != "" {
			return scheme + "://" + host + "/" + path
		}
		return scheme + "://" + host
	}
	u.User = nil
	u.RawQuery = ""
	u.ForceQuery = false
	u.Fragment = ""
	return u.String()
}
