package controller

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// writeKubeconfig writes a kubeconfig whose current context has namespace
// ns ("" for none) and returns its path.
func writeKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	y := "apiVersion: v1\nkind: Config\ncurrent-context: dev\n" +
		"clusters: [{name: dev, cluster: {server: 'https://127.0.0.1:1'}}]\n" +
		"users: [{name: dev, user: {token: t}}]\n" +
		"contexts: [{name: dev, context: {cluster: dev, user: dev, namespace: '" + ns + "'}}]\n"
	p := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(p, []byte(y), 0o600))
	return p
}

func TestLeaderElectionNamespace(t *testing.T) {
	kubeconfig := func(path string) clientcmd.ClientConfig {
		return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{})
	}
	noPod := filepath.Join(t.TempDir(), "absent")
	pod := filepath.Join(t.TempDir(), "namespace")
	require.NoError(t, os.WriteFile(pod, []byte("flux-system"), 0o600))

	assert.Equal(t, "team-a", leaderElectionNamespace(noPod, kubeconfig(writeKubeconfig(t, "team-a"))), "outside a cluster: the kubeconfig context's namespace")
	assert.Equal(t, "default", leaderElectionNamespace(noPod, kubeconfig(writeKubeconfig(t, ""))), "a context without a namespace")
	assert.Equal(t, "default", leaderElectionNamespace(noPod, kubeconfig(filepath.Join(t.TempDir(), "none"))), "no kubeconfig")
	assert.Equal(t, "flux-system", leaderElectionNamespace(pod, kubeconfig(writeKubeconfig(t, "team-a"))), "in a pod: the pod's namespace")
}

// The README's manager, with leader election, builds outside a cluster
// (no service-account namespace file) when its options name
// LeaderElectionNamespace().
func TestManagerWithLeaderElectionOutsideACluster(t *testing.T) {
	if _, err := os.Stat(inClusterNamespaceFile); err == nil {
		t.Skip("running in a pod")
	}
	t.Setenv("KUBECONFIG", writeKubeconfig(t, "team-a"))
	opts := ctrl.Options{Scheme: testScheme(t), LeaderElection: true, LeaderElectionID: LeaderElectionID(""),
		Metrics: metricsserver.Options{BindAddress: "0"}}
	restConfig := &rest.Config{Host: "https://127.0.0.1:1"}
	_, err := ctrl.NewManager(restConfig, opts)
	require.ErrorContains(t, err, "unable to find leader election namespace", "what the README's snippet did")

	opts.LeaderElectionNamespace = LeaderElectionNamespace()
	assert.Equal(t, "team-a", opts.LeaderElectionNamespace)
	_, err = ctrl.NewManager(restConfig, opts)
	require.NoError(t, err)
}
