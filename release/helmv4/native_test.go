package helmv4_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/kubeharness"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// realCluster starts one real API server (internal/kubeharness) and
// returns release/kube's cluster for it; the test is skipped when the
// binaries are absent (a failure with HELMFLEET_INTEGRATION=1).
func realCluster(t *testing.T) *kube.Cluster {
	t.Helper()
	bins, err := kubeharness.FindBinaries(kubeharness.BinDir())
	if err != nil {
		if kubeharness.Integration() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := kubeharness.Start(ctx, kubeharness.Options{Binaries: bins, Dir: t.TempDir(), Clusters: []string{"member1"}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Stop() })
	c, err := kube.New(kube.Config{Name: "member1", REST: h.Cluster("member1").Admin})
	require.NoError(t, err)
	return c
}

// helmManagers lists the managedFields entries of Helm's field manager
// of obj, as operation names. Helm v3 and v4 both name it after the
// program (os.Args[0]) unless the program sets another.
func helmManagers(obj *unstructured.Unstructured) []string {
	var ops []string
	for _, m := range obj.GetManagedFields() {
		if m.Manager == filepath.Base(os.Args[0]) {
			ops = append(ops, string(m.Operation))
		}
	}
	return ops
}

// On a real API server, Helm v4's own kube client (NativeKubeClient)
// applies server-side: a release Helm v3 installed (client-side, Helm's
// manager with Update) is upgraded server-side by Helm v4, which converts
// Helm v3's field manager (the Deployment is then owned by Helm's manager
// with Apply only), and Helm v3 rolls it back.
func TestNativeServerSideApplyOnRealAPIServer(t *testing.T) {
	c := realCluster(t)
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "apps"}}}
	_, err := c.Apply(t.Context(), ns, release.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)

	v3, v4 := reconciler(t, nil), reconciler(t, helmv4.Engine{NativeKubeClient: true})
	rel := podinfo()
	// No kubelet, no controllers: nothing becomes ready, no test pod runs.
	rel.Spec.Test = nil
	rel.Spec.Install = &release.Install{DisableWait: true}
	rel.Spec.Upgrade = &release.Upgrade{DisableWait: true}
	rel.Spec.Rollback = &release.Rollback{DisableWait: true}
	dep := release.ObjectRef{GroupVersionKind: appsV1Deployment, Namespace: "apps", Name: "podinfo"}

	_, err = v3.Reconcile(t.Context(), c, rel)
	require.NoError(t, err)
	live, err := c.Get(t.Context(), dep)
	require.NoError(t, err)
	assert.Equal(t, []string{string(metav1.ManagedFieldsOperationUpdate)}, helmManagers(live))

	rel.Spec.Values["replicaCount"] = 2
	rel.Spec.Upgrade.ServerSideApply = release.ServerSideApplyEnabled
	rel.Generation++
	res, err := v4.Reconcile(t.Context(), c, rel)
	require.NoError(t, err)
	require.Equal(t, reconcile.ActionUpgrade, res.Actions[0])
	assert.Equal(t, "ssa", res.Helm.Labels[helmv4.ApplyMethodLabel])
	live, err = c.Get(t.Context(), dep)
	require.NoError(t, err)
	assert.Equal(t, []string{string(metav1.ManagedFieldsOperationApply)}, helmManagers(live))
	replicas, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
	assert.Equal(t, int64(2), replicas)

	require.NoError(t, v3.RollbackToPrevious(t.Context(), c, rel))
	live, err = c.Get(t.Context(), dep)
	require.NoError(t, err)
	replicas, _, _ = unstructured.NestedInt64(live.Object, "spec", "replicas")
	assert.Equal(t, int64(1), replicas)

	_, err = v4.Uninstall(t.Context(), c, rel)
	require.NoError(t, err)
	_, err = c.Get(t.Context(), dep)
	assert.True(t, errors.Is(err, release.ErrNotFound), "%v", err)
}
