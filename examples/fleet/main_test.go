package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func embeddedFleet(t *testing.T) fs.FS {
	t.Helper()
	fsys, err := fs.Sub(embedded, "fleet")
	require.NoError(t, err)
	return fsys
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), embeddedFleet(t), &out))
	got := out.String()
	for _, want := range []string{
		"== fleet: 4 releases, 4 helm repositories, 5 policies from apps.yaml, data.yaml, infrastructure.yaml, overrides.yaml, sources.yaml",
		// The plan: dev gets the pre-releases, prod the stable versions.
		"dev-eu-1   apps/podinfo                 Absent  install  podinfo@6.6.0-rc.1 ",
		"dev-eu-1   cert-manager/cert-manager    Absent  install  cert-manager@1.15.0-beta.1 ",
		"prod-us-1  cert-manager/cert-manager    Absent  install  cert-manager@1.14.5 ",
		"data-eu-1  data/database                Absent  install  postgresql@15.5.0 ",
		// One Apply, two waves, the gate asked once between them.
		"gate after wave dev [data-eu-1 dev-eu-1]: 4 succeeded, 0 failed: go on",
		"wave dev [data-eu-1 dev-eu-1]: 4 succeeded, 0 failed\n",
		"wave prod [prod-eu-1 prod-us-1]: 6 succeeded, 0 failed\n",
		"prod  prod-eu-1  apps/podinfo                 succeeded  install  1",
		// The graph: podinfo after both add-ons and the database.
		"flowchart LR",
		"n0 --> n7",
		// What Helm and the members show afterwards.
		"dev-eu-1   cert-manager/cert-manager cert-manager-1.15.0-beta.1 deployed revision 1",
		"data-eu-1  data/database postgresql-15.5.0 deployed revision 1",
		"prod-us-1  apps/podinfo podinfo-6.5.0 deployed revision 1",
		"dev-eu-1   crd certificates.cert-manager.io, podinfo 2 replicas ghcr.io/stefanprodan/podinfo:6.6.0-rc.1, host podinfo.dev.example.com",
		"prod-eu-1  crd certificates.cert-manager.io, podinfo 4 replicas ghcr.io/stefanprodan/podinfo:6.5.0, host podinfo.eu.example.com",
		"data-eu-1  database statefulset data/database",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "data-eu-1  crd", "the data cluster runs no add-ons")
	assert.Equal(t, 1, strings.Count(got, "gate after wave"), "no gate after the last wave")
}

// copyFleet writes the embedded YAML to a directory, with edit applied to
// the file name, for the -dir path.
func copyFleet(t *testing.T, name string, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, fs.WalkDir(embeddedFleet(t), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(embeddedFleet(t), p)
		if err != nil {
			return err
		}
		s := string(data)
		if p == name {
			s = edit(s)
		}
		return os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644)
	}))
	return dir
}

func TestRunHaltsAfterABrokenDevWave(t *testing.T) {
	// Dev's podinfo names a chart no repository serves: the dev wave
	// fails, the rollout halts, and prod is never touched.
	dir := copyFleet(t, "apps.yaml", func(s string) string {
		return strings.Replace(s, "chart: podinfo", "chart: podinfo-typo", 1)
	})
	var out bytes.Buffer
	err := run(context.Background(), os.DirFS(dir), &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `dev-eu-1:apps/podinfo`)
	assert.Contains(t, err.Error(), `no chart "podinfo-typo"`)
	assert.Contains(t, err.Error(), "rollout halted after wave dev")
	got := out.String()
	assert.Contains(t, got, "HALTED")
	assert.Contains(t, got, "prod-eu-1  apps/podinfo                 not-started")
	assert.Contains(t, got, "prod-us-1  cert-manager/cert-manager    not-started")
	assert.NotContains(t, got, "gate after wave", "a failed wave never reaches the gate")
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := copyFleet(t, "data.yaml", func(s string) string {
		return strings.Replace(s, "storage: 20Gi", "storage: 20Gi\n  valuse: {}", 1)
	})
	_, _, err := load(os.DirFS(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "data.yaml")
	assert.Contains(t, err.Error(), "valuse")

	_, _, err = load(os.DirFS(t.TempDir()))
	require.EqualError(t, err, "no *.yaml files in the fleet directory")
}
