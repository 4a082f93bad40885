package release

import (
	"context"
	"errors"
	"strings"
)

// ErrWithheld is matched (errors.Is) by every error whose text was withheld
// because it may contain Secret values.
var ErrWithheld = errors.New("text withheld: it may contain Secret values")

// WithheldError stands for an error whose text was produced from
// Secret-derived data (values read from a Secret through valuesFrom, a
// Kustomization's postBuild.substituteFrom Secret, a rendered Secret
// object) and so may quote a Secret value in any form: verbatim, quoted,
// upper-cased, base64-encoded, cut by YAML. helmfleet never shows such text
// and never filters it: it shows this error instead, which names where the
// text came from and nothing else.
//
// The original error is not kept: neither Error nor Unwrap can reach its
// text. errors.Is still reports the context's Canceled and DeadlineExceeded
// when the original error was one of them, and ErrWithheld always.
type WithheldError struct {
	// Object names the object the text was produced for, as
	// "HelmRelease apps/podinfo" or "Kustomization flux-system/apps".
	Object string
	// Step is what produced the text, as "render", "install", "upgrade",
	// "substitute".
	Step string
	// Origin says where in the object's inputs the text came from, as far
	// as it can be told without reading the text's Secret part: the chart
	// and version, the template file and line ("chart podinfo 6.5.0,
	// template podinfo/templates/configmap.yaml line 12"), or the file of a
	// Kustomization. Empty when nothing more is known.
	Origin string

	cause error // context.Canceled or context.DeadlineExceeded, or nil
}

// Withhold returns a *WithheldError for err (nil for nil). It keeps of err
// only whether it was a cancellation or a deadline, for errors.Is.
func Withhold(err error, object, step, origin string) error {
	if err == nil {
		return nil
	}
	w := &WithheldError{Object: object, Step: step, Origin: origin}
	switch {
	case errors.Is(err, context.Canceled):
		w.cause = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		w.cause = context.DeadlineExceeded
	}
	return w
}

// Error says where the withheld text came from and why it is not shown.
func (e *WithheldError) Error() string {
	var b strings.Builder
	if e.Object != "" {
		b.WriteString(e.Object)
		b.WriteString(": ")
	}
	if e.Step != "" {
		b.WriteString(e.Step)
		b.WriteString(" failed")
	} else {
		b.WriteString("failed")
	}
	if e.Origin != "" {
		b.WriteString(" at ")
		b.WriteString(e.Origin)
	}
	b.WriteString(": the error text is withheld because it may contain Secret values")
	if e.cause != nil {
		b.WriteString(" (")
		b.WriteString(e.cause.Error())
		b.WriteString(")")
	}
	return b.String()
}

// Is reports ErrWithheld, and the context error the original was.
func (e *WithheldError) Is(target error) bool {
	return target == ErrWithheld || (e.cause != nil && target == e.cause)
}
