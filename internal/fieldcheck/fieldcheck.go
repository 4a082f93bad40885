package fieldcheck

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/Masterminds/semver/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/helmfleet/helmfleet/internal/redact"
	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// FieldError is one problem with one field (see release.FieldError).
type FieldError = strictyaml.FieldError

// ValidationError reports every problem of one object.
type ValidationError struct {
	// Kind, Namespace and Name of the object.
	Kind, Namespace, Name string
	// Errors, in field order.
	Errors []FieldError
}

// Error names the object and lists every problem, one a line.
func (e *ValidationError) Error() string {
	obj := ObjectName(e.Kind, e.Namespace, e.Name)
	if len(e.Errors) == 1 {
		return obj + ": " + e.Errors[0].Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problems:", obj, len(e.Errors))
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// ObjectName renders "Kind namespace/name", leaving out what is empty.
func ObjectName(kind, namespace, name string) string {
	id := name
	if namespace != "" && name != "" {
		id = namespace + "/" + name
	}
	return strings.TrimSpace(kind + " " + id)
}

// Problems collects the FieldErrors of one object.
type Problems struct {
	errs []FieldError
}

// Add records a problem at path with the offending value (shortened) and
// a message formatted from format and args.
func (p *Problems) Add(path, value, format string, args ...any) {
	p.errs = append(p.errs, FieldError{Path: path, Value: strictyaml.Value(value), Message: fmt.Sprintf(format, args...)})
}

// Err returns the problems as a *ValidationError of the object of kind
// and meta, or nil when there are none.
func (p *Problems) Err(kind string, meta metav1.ObjectMeta) error {
	if len(p.errs) == 0 {
		return nil
	}
	return &ValidationError{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Errors: p.errs}
}

// Meta checks metadata.name (required, a DNS-1123 subdomain) and
// metadata.namespace (required, a DNS-1123 label).
func Meta(p *Problems, m metav1.ObjectMeta) {
	if m.Name == "" {
		p.Add("metadata.name", "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			p.Add("metadata.name", m.Name, "%s", msg)
		}
	}
	if m.Namespace == "" {
		p.Add("metadata.namespace", "", "is required (Default sets %q)", metav1.NamespaceDefault)
	} else {
		Namespace(p, "metadata.namespace", m.Namespace)
	}
}

// Namespace checks an optional namespace: empty, or a DNS-1123 label.
func Namespace(p *Problems, path, ns string) {
	if ns == "" {
		return
	}
	for _, msg := range validation.IsDNS1123Label(ns) {
		p.Add(path, ns, "%s", msg)
	}
}

// RefName checks the name (required, a DNS-1123 subdomain) and the
// optional namespace of a reference at path.
func RefName(p *Problems, path, name, namespace string) {
	if name == "" {
		p.Add(path+".name", "", "is required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			p.Add(path+".name", name, "%s", msg)
		}
	}
	Namespace(p, path+".namespace", namespace)
}

// Kind checks a required kind: one of accepted.
func Kind(p *Problems, path, kind string, accepted ...string) {
	for _, a := range accepted {
		if kind == a {
			return
		}
	}
	if kind == "" {
		p.Add(path, "", "is required; one of %s", strings.Join(accepted, ", "))
		return
	}
	p.Add(path, kind, "must be one of %s", strings.Join(accepted, ", "))
}

// Enum accepts "" (the default) and the accepted values.
func Enum(p *Problems, path, v string, accepted ...string) {
	if v == "" {
		return
	}
	for _, a := range accepted {
		if v == a {
			return
		}
	}
	p.Add(path, v, "must be one of %s", strings.Join(accepted, ", "))
}

// Duration refuses a negative duration; nil is accepted.
func Duration(p *Problems, path string, d *metav1.Duration) {
	if d != nil && d.Duration < 0 {
		p.Add(path, d.Duration.String(), "must not be negative")
	}
}

// AnyVersion is the chart version constraint that accepts every version,
// the default of a chart template.
const AnyVersion = "*"

// Version accepts "", an exact version and a Masterminds semver
// constraint, as Flux's version selection does.
func Version(p *Problems, path, v string) {
	if v == "" || v == AnyVersion {
		return
	}
	if _, err := semver.NewVersion(v); err == nil {
		return
	}
	if _, err := semver.NewConstraint(v); err != nil {
		p.Add(path, v, "is neither a version nor a semver constraint: %v", err)
	}
}

// Verify refuses a signature verification the source resolvers cannot
// perform, so that it is never accepted and then ignored: cosign with
// public keys from secretRef, or keyless cosign against the trusted root
// of trustedRootSecretRef with at least one matchOIDCIdentity, is
// verified. rootField is the path of the object's trustedRootSecretRef,
// "" when it has none (a HelmRelease's chart.spec.verify).
func Verify(p *Problems, path, provider string, hasSecret, hasTrustedRoot bool, identities int, rootField string) {
	const refusing = "charts cannot be verified, refusing rather than installing unverified"
	const public = "Sigstore's public-good trusted root is fetched by TUF, which helmfleet cannot reach offline"
	Enum(p, path+".provider", provider, "cosign", "notation")
	switch {
	case provider == "notation":
		p.Add(path+".provider", provider, "notation is not supported yet: %s", refusing)
	case provider != "" && provider != "cosign":
		// Enum named it.
	case hasSecret && identities > 0:
		p.Add(path+".matchOIDCIdentity", "", "applies to keyless verification only (no secretRef); with secretRef it would be ignored: remove it")
	case hasSecret && hasTrustedRoot:
		p.Add(path+".trustedRootSecretRef", "", "applies to keyless verification only (no secretRef); with secretRef it would be ignored: remove it")
	case hasSecret:
	case rootField == "":
		p.Add(path+".secretRef", "", "is required: keyless cosign verification needs a trusted root (trustedRootSecretRef of a HelmChart or OCIRepository), which this object cannot name, and %s: %s", public, refusing)
	case !hasTrustedRoot:
		p.Add(rootField, "", "is required: keyless verification needs %s: %s: %s", rootField, public, refusing)
	case identities == 0:
		p.Add(path+".matchOIDCIdentity", "", "is required: keyless verification needs at least one issuer/subject identity, else any certificate of the trusted root would pass: %s", refusing)
	}
}

// URL checks a required URL of one of schemes, with a host. The URL may
// carry credentials (user:password@, a token in the query): a problem
// shows it redacted, and url.Parse's message, which quotes it, is not
// used.
func URL(p *Problems, path, raw string, schemes ...string) {
	if raw == "" {
		p.Add(path, "", "is required")
		return
	}
	shown := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		p.Add(path, shown, "invalid URL: %s", urlProblem(err))
		return
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	switch {
	case !ok:
		p.Add(path, shown, "scheme must be %s", strings.Join(schemes, " or "))
	case u.Host == "":
		p.Add(path, shown, "must name a host")
	}
}

// urlProblem says what url.Parse found wrong without quoting the URL:
// its message is "parse <quoted URL>: <problem>", and the problem itself
// may quote part of it (an invalid escape, a bad port).
func urlProblem(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return "invalid escape (%XX) sequence"
	case errors.As(err, &host):
		return "invalid character in host name"
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '"'); i >= 0 {
		msg = strings.TrimSpace(strings.TrimSuffix(msg[:i], ":"))
	}
	return msg
}
