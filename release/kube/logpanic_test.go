package kube

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmrelease "helm.sh/helm/v3/pkg/release"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
)

// Helm calls Config.Log on its own goroutines: a panicking Log is turned
// off instead of ending the process, and the next HelmConfig says so,
// once.
func TestPanickingLogIsReportedOnce(t *testing.T) {
	var calls atomic.Int32
	c, err := New(Config{
		Name:       "test",
		REST:       &rest.Config{Host: "https://127.0.0.1:1"},
		Kubernetes: kubefake.NewClientset(),
		Log: func(string, ...any) {
			calls.Add(1)
			panic("log sink bug")
		},
	})
	require.NoError(t, err)
	cfg, err := c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "store"})
	require.NoError(t, err)
	for v := 1; v <= 2; v++ {
		rel := &helmrelease.Release{Name: "web", Namespace: "store", Version: v, Info: &helmrelease.Info{Status: helmrelease.StatusDeployed}}
		require.NotPanics(t, func() { require.NoError(t, cfg.Releases.Create(rel)) }, "Helm's storage logs every write")
	}
	assert.Equal(t, int32(1), calls.Load(), "the log is off after its panic")

	_, err = c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "store"})
	var pe *release.CallbackPanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "kube.Config.Log", pe.Callback)
	assert.EqualError(t, err, "cluster test: helm config: kube.Config.Log panicked: log sink bug")
	_, err = c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "store"})
	assert.NoError(t, err, "reported once")
}
