// Package testchart ships the small podinfo-like chart that helmfleet's
// tests, benchmarks and examples install: a Deployment, Service,
// ConfigMap, Secret, Ingress and a test hook Pod.
package testchart

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

//go:embed testdata/podinfo testdata/podinfo/templates/_helpers.tpl
var files embed.FS

// Name is the chart's name.
const Name = "podinfo"

// Load returns the chart with its version (and appVersion) set to version;
// an empty version keeps the chart's own 6.5.0.
func Load(version string) (*chart.Chart, error) {
	var bfs []*loader.BufferedFile
	err := fs.WalkDir(files, "testdata/podinfo", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := relPath("testdata/podinfo", p)
		bfs = append(bfs, &loader.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, err
	}
	ch, err := loader.LoadFiles(bfs)
	if err != nil {
		return nil, fmt.Errorf("testchart: %w", err)
	}
	if version != "" {
		ch.Metadata.Version = version
		ch.Metadata.AppVersion = version
	}
	return ch, nil
}

// MustLoad is Load for tests and examples; it panics on error, which can
// only come from a broken embedded chart.
func MustLoad(version string) *chart.Chart {
	ch, err := Load(version)
	if err != nil {
		panic(err)
	}
	return ch
}

// Dir is the chart's directory inside FS.
const Dir = "testdata/podinfo"

// FS returns the chart's files, e.g. to write them to disk or to package
// them for a repository.
func FS() fs.FS { return files }

func relPath(base, p string) (string, error) {
	if len(p) <= len(base)+1 {
		return "", fmt.Errorf("testchart: %s is not under %s", p, base)
	}
	return path.Clean(p[len(base)+1:]), nil
}

// Grown returns the chart with extra more ConfigMaps (extra-00, extra-01,
// …) beside its own objects: a bigger release for benchmarks.
func Grown(extra int) *chart.Chart {
	ch := MustLoad("")
	for i := 0; i < extra; i++ {
		ch.Templates = append(ch.Templates, &chart.File{
			Name: fmt.Sprintf("templates/extra-%02d.yaml", i),
			Data: []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-extra-%02d\ndata:\n  index: %q\n", i, fmt.Sprint(i))),
		})
	}
	return ch
}
