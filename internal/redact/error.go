package redact

import (
	"errors"
	"net/url"
)

// Error returns err with its message redacted by Text(err.Error(), known...),
// or err itself when there is nothing to redact (and nil for nil).
//
// The result's Error method, and so fmt's %v, %s and %+v and any error that
// wraps it with %w, prints the redacted message. Its Unwrap returns err, so
// errors.Is and errors.As reach the original chain (a timeout is still a
// net.Error, a cancelled request still context.Canceled), with one
// exception: errors.As(result, &urlErr), for a chain holding a *url.Error
// (as net/http and net/url return), gives a copy of it whose URL field is
// redacted with URL and whose Err is redacted with Error(Err, known...). Other errors of the chain keep their own text: a
// caller that unwraps a cause and prints it on its own must redact it
// again.
func Error(err error, known ...string) error {
	if err == nil {
		return nil
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		red, inner := URL(urlErr.URL), Error(urlErr.Err, known...)
		_, innerRedacted := inner.(*redactedError)
		if red != urlErr.URL || innerRedacted {
			urlErr = &url.Error{Op: urlErr.Op, URL: red, Err: inner}
		} else {
			urlErr = nil
		}
	}
	msg := err.Error()
	red := Text(msg, known...)
	if red == msg && urlErr == nil {
		return err
	}
	return &redactedError{msg: red, err: err, urlErr: urlErr}
}

// redactedError prints a redacted message and unwraps to the original
// chain.
type redactedError struct {
	msg    string
	err    error
	urlErr *url.Error // the chain's first *url.Error, its URL redacted; or nil
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }

// As hands out the redacted copy of the chain's *url.Error.
func (e *redactedError) As(target any) bool {
	if p, ok := target.(**url.Error); ok && e.urlErr != nil {
		*p = e.urlErr
		return true
	}
	return false
}
