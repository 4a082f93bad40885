// Package redact removes credentials from URLs, and from error messages that
// quote URLs, before they are printed.
//
// Every URL that helmfleet puts in an error, a log line or a status field
// goes through this package. A repository URL may carry a user and password
// (https://user:pass@host/charts) and a chart or index URL a signed query
// (?token=…, ?sig=…, S3's X-Amz-Signature=…); Go's own printing is not
// enough: (*url.URL).Redacted and the *url.Error that net/http returns mask
// the password only, and keep the user name and the whole query.
//
// # Two forms
//
// URL is the form for messages: it shows where secrets were without
// showing them. The user information becomes "***" (user name included: a
// token is often sent as the user name), the value of every query
// parameter becomes "***" (keys are kept, so a reader can tell
// "?token=***&sig=***" from no query at all; a parameter without "=" is
// masked whole) and a non-empty fragment becomes "***":
//
//	https://bob:s3cret@charts.example.com/app-1.0.0.tgz?token=T&sig=S#x
//	https://***@charts.example.com/app-1.0.0.tgz?token=***&sig=***#***
//
// Strip is the form for identifiers (a repository named in Source fields,
// map keys, metrics labels): the user information, query and fragment are
// removed altogether:
//
//	https://charts.example.com/app-1.0.0.tgz
//
// Scheme, host, port and path are kept as they are in both forms: a secret
// placed in the path or in a query key is not recognised.
//
// # Text that is not a valid URL
//
// Both forms accept any string. One that net/url cannot parse
// (https://user:s3cret@host/%zz) is scrubbed more bluntly: everything
// between the scheme's "://" and the LAST "@" of the string is taken for
// user information, so that an unescaped "/", "?" or "#" in a password
// cannot leak it, at the cost of a mangled host when such a URL has an "@"
// in its path or query (when that "@" follows a "?" or "#", the text up to
// the next "?" or "#" after it is masked too: it may be a query value). A
// string without "scheme://" or "//" is read the
// same way: everything before its last "@" is user information, which
// covers "user:pass@registry/chart", how an OCI reference with credentials
// looks. The query and fragment start at the first "?" and "#", as net/url
// reads them. Every other byte is kept as it is.
//
// # Errors
//
// Error wraps an error so that its message (Error(), and so fmt's %v, %s and
// %+v) has every URL in it redacted with URL, while errors.Is and errors.As
// still reach the original chain. It is meant for errors of net/http,
// net/url and the clients built on them, which quote the URL they failed
// on — including redirect targets the caller never saw. See Error for what
// is and is not rewritten.
package redact
