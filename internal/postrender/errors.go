package postrender

import (
	"fmt"
	"strings"
)

// Error says which post-renderer failed and, for a kustomize
// post-renderer, which patch or image. Build, Validate and every Run return
// errors of this type; use errors.As to read them.
type Error struct {
	// Path is the field path of what failed, in the HelmRelease spec's
	// terms: "postRenderers[0].kustomize.patches[1]",
	// "postRenderers[2].kustomize.images[0]", "postRenderers[0].kustomize"
	// (the manifests it was given could not be read) or "commonMetadata".
	// A Kustomize run on its own, outside Build, has no
	// "postRenderers[i]." prefix.
	Path string
	// Target is the failing patch's target selector; nil when the patch
	// has none or the error is not about a patch.
	Target *Selector
	// Value is the offending patch text or image name; "" when the error is
	// not about one entry.
	Value string
	// Err is the cause, usually kustomize's own error.
	Err error
}

// maxValueInError bounds how much of a patch an error message quotes.
const maxValueInError = 80

// Error reads "<path> (target <selector>) \"<value>\": <cause>", the target
// and value only when set, the value cut after 80 bytes.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Target != nil {
		fmt.Fprintf(&b, " (target %s)", e.Target)
	}
	if e.Value != "" {
		v := e.Value
		if len(v) > maxValueInError {
			v = v[:maxValueInError] + "..."
		}
		fmt.Fprintf(&b, " %q", v)
	}
	b.WriteString(": ")
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("failed")
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// String renders the selector's non-empty fields, e.g.
// "kind=Deployment,name=web", in Flux's field order.
func (s Selector) String() string {
	var parts []string
	for _, f := range []struct{ k, v string }{
		{"group", s.Group}, {"version", s.Version}, {"kind", s.Kind},
		{"namespace", s.Namespace}, {"name", s.Name},
		{"annotationSelector", s.AnnotationSelector}, {"labelSelector", s.LabelSelector},
	} {
		if f.v != "" {
			parts = append(parts, f.k+"="+f.v)
		}
	}
	if len(parts) == 0 {
		return "all objects"
	}
	return strings.Join(parts, ",")
}

// withPrefix returns err with prefix added to the Path of the *Error it is,
// or err unchanged.
func withPrefix(prefix string, err error) error {
	if e, ok := err.(*Error); ok {
		c := *e
		c.Path = prefix + c.Path
		return &c
	}
	return err
}
