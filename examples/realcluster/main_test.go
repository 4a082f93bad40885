package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/kubeharness"
)

// TestRun releases on one real control plane twice (install, then
// upgrade) and on a kubeconfig that points nowhere.
func TestRun(t *testing.T) {
	bins, err := kubeharness.FindBinaries(kubeharness.BinDir())
	if err != nil {
		if kubeharness.Integration() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	h, err := kubeharness.Start(t.Context(), kubeharness.Options{Binaries: bins, Dir: t.TempDir(), Clusters: []string{"demo"}, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Stop()) })
	kubeconfig := h.Cluster("demo").AdminKubeconfig
	missing := filepath.Join(t.TempDir(), "absent.kubeconfig")
	require.NoError(t, os.WriteFile(missing, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: gone\n  cluster: {server: \"https://127.0.0.1:1\"}\ncontexts:\n- name: gone\n  context: {cluster: gone, user: gone}\nusers:\n- name: gone\n  user: {token: x}\ncurrent-context: gone\n"), 0o600))

	var out bytes.Buffer
	require.True(t, run(t.Context(), &out, []string{kubeconfig}, "demo", "hello", "one"), out.String())
	assert.Regexp(t, `(?m)^demo\s+hello\s+1\s+deployed$`, out.String())

	out.Reset()
	ok := run(t.Context(), &out, []string{missing, kubeconfig}, "demo", "hello", "two")
	assert.False(t, ok)
	t.Log("\n" + out.String())
	assert.Regexp(t, `(?m)^demo\s+hello\s+2\s+deployed$`, out.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^gone\s+hello\s+0\s+error: .*connection refused`), out.String())
}
