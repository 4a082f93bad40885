package reconcile

import (
	"errors"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
	"helm.sh/helm/v3/pkg/chart"
	"path"
	"strings"
)

// secretDerived reports whether text Helm produces for this run may hold
// Secret data: the composed values hold a leaf read from a Secret, or
// spec.valuesFrom names a Secret (which also covers the steps that run
// without composing values: uninstall, health, a drift check, and a
// release whose stored manifest holds values of a Secret since dropped),
// or SecretFieldsAnnotation marks part of the HelmRelease as Secret data.
func (ru *run) secretDerived() bool {
	if _, marked := secretFields(ru.rel); marked {
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
// keep Helm's full text. Config.InsecureHelmErrorText keeps the
// full text always.
func (ru *run) helmErr(step string, err error) error {
	if err == nil || ru.r.insecureErrors || !ru.secretDerived() {
		return err
	}
	return release.Withhold(err, "HelmRelease "+refOf(ru.rel), step, ru.origin(err))
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
	var nr *release.NotReadyError
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
