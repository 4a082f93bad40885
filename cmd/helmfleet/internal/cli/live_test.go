package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/helmfleet/helmfleet/internal/kubeharness"
)

// startLive starts one real kube-apiserver for the test, or skips it
// when the binaries are absent and the integration suite is not asked for.
func startLive(t *testing.T) *kubeharness.ControlPlane {
	t.Helper()
	bins, err := kubeharness.FindBinaries(kubeharness.BinDir())
	if err != nil {
		if kubeharness.Integration() {
			t.Fatalf("%s=1 but %v", kubeharness.EnvIntegration, err)
		}
		t.Skipf("no kube-apiserver: %v (set %s=1 to make this a failure)", err, kubeharness.EnvIntegration)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := kubeharness.Start(ctx, kubeharness.Options{Binaries: bins, Dir: t.TempDir(), Clusters: []string{"live-1"}, Logf: t.Logf})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, h.Stop()) })
	return h.Cluster("live-1")
}

// A member named by a kubeconfig context: plan plans against the live
// cluster and writes nothing to it; build renders on an in-memory
// stand-in with the live cluster's Kubernetes version.
func TestLiveMembers(t *testing.T) {
	cp := startLive(t)
	ctx := context.Background()
	cs, err := kubernetes.NewForConfig(cp.Admin)
	require.NoError(t, err)
	// What Cluster API puts on a new cluster, as the fleet file's objects
	// do for in-memory members.
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("flux-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars"},
		Data:       map[string]string{"cluster_name": "live-1", "cluster_domain": "live-1.prod.example.com"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps("kube-system").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cert-manager-values"},
		Data:       map[string]string{"values.yaml": "clusterIssuer:\n  email: platform@example.com\n  dnsZone: live-1.prod.example.com\n"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	version, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)

	bootstrap, err := filepath.Abs(filepath.Join(testdata, "bootstrap.yaml"))
	require.NoError(t, err)
	dir := t.TempDir()
	fleet := filepath.Join(dir, "fleet.yaml")
	require.NoError(t, os.WriteFile(fleet, []byte(fmt.Sprintf(`bootstrap: %s
kubeconfig: %s
members:
  - name: prod-live
    labels: {env: prod}
    context: live-1
    # The stand-in's copy of what the live cluster holds (build, diff, test).
    objects:
      - {apiVersion: v1, kind: ConfigMap, metadata: {namespace: flux-system, name: cluster-vars},
         data: {cluster_name: live-1, cluster_domain: live-1.prod.example.com}}
      - apiVersion: v1
        kind: ConfigMap
        metadata: {namespace: kube-system, name: cert-manager-values}
        data:
          values.yaml: |
            clusterIssuer: {email: platform@example.com, dnsZone: live-1.prod.example.com}
`, bootstrap, cp.AdminKubeconfig)), 0o600))
	before := liveInventory(t, cs)

	out, code := runErr(t, "plan", exampleRepo, "--fleet", fleet, "--chart-cache", chartDir)
	assert.Equal(t, ExitChanges, code, out.stdout)
	assert.Contains(t, out.stderr, "member prod-live: live cluster of context live-1")
	assert.Contains(t, out.stderr, "member prod-live: its 2 objects are for the in-memory stand-in")
	assert.Contains(t, out.stdout, "prod-live")
	assert.Contains(t, out.stdout, "Kustomization flux-system/apps")
	assert.Equal(t, before, liveInventory(t, cs), "plan wrote to the live cluster")

	// build runs a stand-in that renders for the live cluster's version.
	out, code = runErr(t, "build", exampleRepo, "--fleet", fleet, "--chart-cache", chartDir)
	assert.Equal(t, ExitOK, code, out.stderr)
	want := strings.TrimPrefix(version.GitVersion, "v")
	assert.Contains(t, out.stderr, "member prod-live: in-memory stand-in for context live-1 (Kubernetes "+want)
	assert.Contains(t, out.stdout, "# HelmRelease apps/podinfo")
	assert.Equal(t, before, liveInventory(t, cs), "build wrote to the live cluster")

	// A context the kubeconfig lacks is an error naming member and context.
	require.NoError(t, os.WriteFile(fleet, []byte(fmt.Sprintf(`bootstrap: %s
kubeconfig: %s
members:
  - {name: prod-live, context: nope}
`, bootstrap, cp.AdminKubeconfig)), 0o600))
	out, code = runErr(t, "plan", exampleRepo, "--fleet", fleet, "--chart-cache", chartDir)
	assert.Equal(t, ExitError, code)
	assert.Contains(t, out.stderr, `member prod-live: context "nope"`)
}

// outputs are a run's stdout and stderr.
type outputs struct{ stdout, stderr string }

// runErr runs the command line and returns both outputs.
func runErr(t *testing.T, args ...string) (outputs, int) {
	t.Helper()
	var out, errb strings.Builder
	code := Main(context.Background(), args, &out, &errb)
	t.Logf("helmfleet %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, errb.String())
	return outputs{out.String(), errb.String()}, code
}

// liveInventory lists what the live cluster holds that a plan or build
// could have written: namespaces, Secrets and ConfigMaps by name.
func liveInventory(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ns := range nss.Items {
		out = append(out, "ns/"+ns.Name)
	}
	secrets, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range secrets.Items {
		out = append(out, "secret/"+s.Namespace+"/"+s.Name)
	}
	cms, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, c := range cms.Items {
		out = append(out, "configmap/"+c.Namespace+"/"+c.Name+"@"+c.ResourceVersion)
	}
	return out
}
