package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestRun releases on one real control plane twice (install, then
// upgrade) and on a kubeconfig that points nowhere. The control plane is
// controller-runtime's envtest, with the binaries of $KUBEBUILDER_ASSETS
// (as setup-envtest prints it) or $HELMFLEET_KUBE_BIN.
func TestRun(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = os.Getenv("HELMFLEET_KUBE_BIN")
	}
	if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); assets == "" || err != nil {
		if os.Getenv("HELMFLEET_INTEGRATION") == "1" {
			t.Fatalf("no kube-apiserver in %q: set KUBEBUILDER_ASSETS", assets)
		}
		t.Skipf("no kube-apiserver in %q: set KUBEBUILDER_ASSETS", assets)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	_, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, env.Stop()) })
	admin, err := env.ControlPlane.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	require.NoError(t, err)
	data, err := admin.KubeConfig()
	require.NoError(t, err)
	// run names a cluster by its kubeconfig's current context: call
	// every name in it "demo".
	data = regexp.MustCompile(`(?m)^(\s*(current-context|name|cluster|context): )\S+$`).ReplaceAll(data, []byte("${1}demo"))
	kubeconfig := filepath.Join(t.TempDir(), "demo.kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, data, 0o600))
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
