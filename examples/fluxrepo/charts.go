package main

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

//go:embed all:charts
var chartFiles embed.FS

// offered are the versions the example's chart repositories offer, per
// chart: what a HelmRepository's index.yaml would list.
var offered = map[string][]string{
	"cert-manager": {"1.14.5", "1.15.3", "1.16.0-beta.1"},
	"podinfo":      {"6.5.0", "6.5.1", "6.6.0-rc.1"},
}

// charts serves the releases' charts from code, choosing the version as
// Flux's source-controller does (source.SelectVersion over the offered
// versions: "1.15.x" is the newest 1.15 release, ">=1.16.0-0" admits
// pre-releases): cert-manager is a small stand-in kept in charts/,
// podinfo helmfleet's embedded test chart. A real program resolves charts
// with package source instead.
func charts() reconcile.ChartGetter {
	return reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		spec := rel.Spec.Chart.Spec
		versions, ok := offered[spec.Chart]
		if !ok {
			return nil, fmt.Errorf("release %s/%s: spec.chart.spec.chart: no chart %q in this example", rel.Namespace, rel.Name, spec.Chart)
		}
		cands := make([]source.Candidate, len(versions))
		for i, v := range versions {
			cands[i] = source.Candidate{Version: v}
		}
		i, err := source.SelectVersion(spec.Version, cands)
		if err != nil {
			return nil, fmt.Errorf("release %s/%s: spec.chart.spec.version %q of chart %s: %w", rel.Namespace, rel.Name, spec.Version, spec.Chart, err)
		}
		version := versions[i]
		var ch *chart.Chart
		if spec.Chart == testchart.Name {
			ch, err = testchart.Load(version)
		} else {
			ch, err = loadDir(path.Join("charts", spec.Chart), version)
		}
		if err != nil {
			return nil, err
		}
		return &reconcile.Chart{Chart: ch}, nil
	})
}

// loadDir loads the chart in dir of chartFiles at version (appVersion
// "v" + version, as cert-manager tags its images).
func loadDir(dir, version string) (*chart.Chart, error) {
	var bfs []*loader.BufferedFile
	err := fs.WalkDir(chartFiles, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartFiles.ReadFile(p)
		if err != nil {
			return err
		}
		bfs = append(bfs, &loader.BufferedFile{Name: p[len(dir)+1:], Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFiles(bfs)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", dir, err)
	}
	ch.Metadata.Version, ch.Metadata.AppVersion = version, "v"+version
	return ch, nil
}
