package fleettest

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// Chart is a chart written in code.
type Chart struct {
	// Name and Version are the chart's; both are required.
	Name, Version string
	// AppVersion is the chart's appVersion; empty: Version.
	AppVersion string
	// Templates maps file names under templates/ (e.g. "deployment.yaml")
	// to their text.
	Templates map[string]string
	// CRDs maps file names under crds/ to CustomResourceDefinitions,
	// installed before the templates and never templated, as Helm does.
	CRDs map[string]string
	// Values are the chart's default values (values.yaml).
	Values map[string]any
	// Files maps other file names (e.g. "values-prod.yaml") to their text.
	Files map[string]string
}

// Build returns the chart loaded as Helm loads a chart directory.
func (c Chart) Build() (*chart.Chart, error) {
	if c.Name == "" || c.Version == "" {
		return nil, fmt.Errorf("fleettest: chart %q version %q: name and version are required", c.Name, c.Version)
	}
	app := c.AppVersion
	if app == "" {
		app = c.Version
	}
	bfs := []*loader.BufferedFile{{
		Name: "Chart.yaml",
		Data: fmt.Appendf(nil, "apiVersion: v2\nname: %s\nversion: %q\nappVersion: %q\n", c.Name, c.Version, app),
	}}
	if c.Values != nil {
		data, err := yaml.Marshal(c.Values)
		if err != nil {
			return nil, fmt.Errorf("fleettest: chart %s %s: values: %w", c.Name, c.Version, err)
		}
		bfs = append(bfs, &loader.BufferedFile{Name: "values.yaml", Data: data})
	}
	add := func(dir string, files map[string]string) {
		for name, text := range files {
			bfs = append(bfs, &loader.BufferedFile{Name: path.Join(dir, name), Data: []byte(text)})
		}
	}
	add("templates", c.Templates)
	add("crds", c.CRDs)
	add("", c.Files)
	sort.Slice(bfs, func(i, j int) bool { return bfs[i].Name < bfs[j].Name })
	ch, err := loader.LoadFiles(bfs)
	if err != nil {
		return nil, fmt.Errorf("fleettest: chart %s %s: %w", c.Name, c.Version, err)
	}
	return ch, nil
}

// LoadDir loads the chart in dir of fsys (an embed.FS, or os.DirFS of a
// chart directory with dir "."), as `helm package` reads a directory.
// A version other than "" replaces the chart's version and appVersion.
func LoadDir(fsys fs.FS, dir, version string) (*chart.Chart, error) {
	var bfs []*loader.BufferedFile
	err := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		name := p
		if dir != "." {
			name = p[len(dir)+1:]
		}
		bfs = append(bfs, &loader.BufferedFile{Name: name, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fleettest: chart directory %s: %w", dir, err)
	}
	ch, err := loader.LoadFiles(bfs)
	if err != nil {
		return nil, fmt.Errorf("fleettest: chart directory %s: %w", dir, err)
	}
	if version != "" {
		ch.Metadata.Version, ch.Metadata.AppVersion = version, version
	}
	return ch, nil
}

// PodinfoName is the name of the Podinfo chart.
const PodinfoName = "podinfo"

// Podinfo returns a small podinfo-like chart (a Deployment "<release>", a
// Service, a ConfigMap, a Secret, an Ingress when enabled and a test hook
// Pod) at version, which is also its appVersion; "" keeps its own 6.5.0.
// Its values follow podinfo's: replicaCount, image.repository and
// image.tag, ui.message. Each call returns a new chart.
func Podinfo(version string) *chart.Chart { return testchart.MustLoad(version) }

// Charts serves charts to a reconciler: a release gets the chart its
// spec.chart.spec.chart names, at the newest version its
// spec.chart.spec.version admits, chosen as Flux's source-controller does
// (source.SelectVersion: "" or "*" is the newest release, "6.5.x" a
// range, pre-releases only when the constraint admits them). Each
// GetChart returns its own copy of the chart's metadata, so a caller that
// changes it does not change the set.
type Charts struct {
	byName map[string][]*chart.Chart
}

var _ reconcile.ChartGetter = (*Charts)(nil)

// NewCharts returns the set of charts; a name and version given twice
// keeps the last.
func NewCharts(charts ...*chart.Chart) *Charts {
	s := &Charts{byName: map[string][]*chart.Chart{}}
	for _, ch := range charts {
		list := s.byName[ch.Name()]
		for i, old := range list {
			if old.Metadata.Version == ch.Metadata.Version {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		s.byName[ch.Name()] = append(list, ch)
	}
	return s
}

// GetChart returns the release's chart, or an error naming the release,
// the field and the chart or version it cannot serve.
func (s *Charts) GetChart(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
	spec := rel.Spec.Chart.Spec
	if len(s.byName[spec.Chart]) == 0 {
		return nil, fmt.Errorf("release %s/%s: spec.chart.spec.chart: no chart %q", rel.Namespace, rel.Name, spec.Chart)
	}
	ch, err := s.Get(spec.Chart, spec.Version)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s: spec.chart.spec.version: %w", rel.Namespace, rel.Name, err)
	}
	return &reconcile.Chart{Chart: ch}, nil
}

// Get returns a copy of the chart called name at the newest version
// constraint admits.
func (s *Charts) Get(name, constraint string) (*chart.Chart, error) {
	list := s.byName[name]
	if len(list) == 0 {
		return nil, fmt.Errorf("no chart %q", name)
	}
	cands := make([]source.Candidate, len(list))
	for i, ch := range list {
		cands[i] = source.Candidate{Version: ch.Metadata.Version}
	}
	i, err := source.SelectVersion(constraint, cands)
	if err != nil {
		return nil, fmt.Errorf("version %q of chart %s: %w", constraint, name, err)
	}
	out := *list[i]
	md := *out.Metadata
	out.Metadata = &md
	return &out, nil
}
