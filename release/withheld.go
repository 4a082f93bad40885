package release

import (
	"context"
	"errors"
	"path"
	"strings"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/helmfleet/helmfleet/values"
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

// secretDerived reports whether text Helm produces for this run may hold
// Secret data: the composed values hold a leaf read from a Secret, or
// spec.valuesFrom names a Secret (which also covers the steps that run
// without composing values: uninstall, health, a drift check, and a
// release whose stored manifest holds values of a Secret since dropped),
// or SecretFieldsAnnotation marks part of the HelmRelease as Secret data.
func (ru *run) secretDerived() bool {
	if _, marked := ru.rel.secretFields(); marked {
		return true
	}
	for _, ref := range ru.rel.Spec.ValuesFrom {
		if ref.Kind == string(values.KindSecret) {
			return true
		}
	}
	if ru.d == nil || ru.d.values == nil {
		return false
	}
	for _, o := range ru.d.values.Provenance().Origins() {
		if o.Sensitive {
			return true
		}
	}
	return false
}

// helmErr is the one place where an error Helm returned for step
// ("render", "install", "upgrade", "test", "rollback", "uninstall",
// "drift") leaves Helm: for a release whose values hold Secret data it
// becomes a *WithheldError naming the HelmRelease, the chart and, when
// Helm's error names them, the template file and line; other releases
// keep Helm's full text. ReconcilerConfig.InsecureHelmErrorText keeps the
// full text always.
func (ru *run) helmErr(step string, err error) error {
	if err == nil || ru.r.insecureErrors || !ru.secretDerived() {
		return err
	}
	return Withhold(err, "HelmRelease "+ru.rel.ref(), step, ru.origin(err))
}

// origin says where a withheld error of Helm arose, from what is known
// without its text: the chart and version, the template file and line
// (only the location prefix of Helm's message is read, and only a file
// of the chart is accepted) and, for a readiness wait, how long it
// lasted.
func (ru *run) origin(err error) string {
	var parts []string
	var ch *chart.Chart
	if ru.d != nil && ru.d.chart != nil {
		ch = ru.d.chart.Chart
	} else if ru.res != nil && ru.res.Helm != nil {
		ch = ru.res.Helm.Chart
	}
	switch cur := ru.rel.Status.History.Latest(); {
	case ch != nil && ch.Metadata != nil:
		parts = append(parts, "chart "+ch.Metadata.Name+" "+ch.Metadata.Version)
		if loc, ok := parseTemplateLocation(err.Error(), chartFiles(ch)); ok {
			parts = append(parts, loc.String())
		}
	case cur != nil && cur.ChartName != "":
		// An uninstall, a health check: the chart the history records.
		parts = append(parts, "chart "+cur.ChartName+" "+cur.ChartVersion)
	}
	var nr *NotReadyError
	if errors.As(err, &nr) {
		if nr.Timeout > 0 {
			parts = append(parts, "while waiting for readiness ("+nr.Timeout.String()+")")
		} else {
			parts = append(parts, "while checking readiness")
		}
	}
	return strings.Join(parts, ", ")
}

// chartFiles reports whether a name is one of the template files of ch
// or its subcharts, as Helm's engine names them
// ("podinfo/templates/deployment.yaml", "app/charts/db/templates/x.yaml").
func chartFiles(ch *chart.Chart) func(string) bool {
	names := map[string]bool{}
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, t := range c.Templates {
			if t != nil {
				names[path.Join(c.ChartFullPath(), t.Name)] = true
			}
		}
		for _, dep := range c.Dependencies() {
			walk(dep)
		}
	}
	walk(ch)
	return func(name string) bool { return names[name] }
}
