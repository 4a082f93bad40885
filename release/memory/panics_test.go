package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/kube"
	helmrelease "helm.sh/helm/v3/pkg/release"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

// Helm reads the results of its kube client's Create, Update and Delete
// on failure too: the in-memory client returns one on every path.
func TestKubeClientResultsOnFailure(t *testing.T) {
	lost := errors.New("connection refused")
	c := memory.New("m1")
	rel, err := install(t, c)
	require.NoError(t, err)
	kc := helmConfig(t, c).KubeClient
	rl, err := kc.Build(strings.NewReader(rel.Manifest), false)
	require.NoError(t, err)
	require.NotEmpty(t, rl)
	c.SetUnreachable(lost)

	res, err := kc.Create(rl)
	assert.ErrorIs(t, err, lost)
	assert.NotNil(t, res, "Create")
	res, err = kc.Update(rl, rl, false)
	assert.ErrorIs(t, err, lost)
	assert.NotNil(t, res, "Update")
	res, errs := kc.Delete(rl)
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], lost)
	assert.NotNil(t, res, "Delete")
	res, errs = kc.(kube.InterfaceDeletionPropagation).DeleteWithPropagationPolicy(rl, metav1.DeletePropagationForeground)
	require.Len(t, errs, 1)
	assert.NotNil(t, res, "DeleteWithPropagationPolicy")
}

// A cluster lost between Helm's pending record and its Update fails the
// upgrade; before, Helm dereferenced the nil result of Update on its own
// goroutine and the process died.
func TestHelmUpgradeOnClusterLostBeforeUpdate(t *testing.T) {
	lost := errors.New("connection refused")
	c := memory.New("m1")
	_, err := install(t, c)
	require.NoError(t, err)
	c.SetFaults(func(op memory.Operation, _ release.ObjectRef) error {
		if op == memory.OpStorageCreate {
			c.SetUnreachable(lost)
		}
		return nil
	})
	up := action.NewUpgrade(helmConfig(t, c))
	up.Namespace, up.CleanupOnFail = "apps", true
	require.NotPanics(t, func() {
		_, err = up.RunWithContext(context.Background(), "web", testchart.MustLoad("6.5.1"), nil)
	})
	assert.ErrorIs(t, err, lost)
	assert.Equal(t, helmrelease.StatusFailed, lastStatus(t, c))
}

// A panic of a Fault or a HealthFunc, which run on Helm's goroutines,
// is an error of the call it was asked about.
func TestPanickingFaultAndHealthAreErrors(t *testing.T) {
	t.Run("Fault", func(t *testing.T) {
		c := memory.New("m1")
		c.SetFaults(func(op memory.Operation, ref release.ObjectRef) error {
			if op == memory.OpHelmCreate && ref.Kind == "Deployment" {
				panic("fault script bug")
			}
			return nil
		})
		var err error
		require.NotPanics(t, func() { _, err = install(t, c) })
		var pe *release.CallbackPanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "memory.Fault", pe.Callback)
		assert.ErrorContains(t, err, "cluster m1: helm create apps/v1 Deployment apps/web-podinfo: injected: memory.Fault panicked: fault script bug")
		assert.Equal(t, helmrelease.StatusFailed, lastStatus(t, c))
	})
	t.Run("HealthFunc", func(t *testing.T) {
		c := memory.New("m1", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
			if u.GetKind() == "Deployment" {
				panic("health script bug")
			}
			return memory.Health{Ready: true}
		}))
		var err error
		require.NotPanics(t, func() { _, err = install(t, c) })
		assert.ErrorContains(t, err, "memory.HealthFunc panicked: health script bug", "the Deployment reads as failed, with the panic as its message")
		assert.Equal(t, helmrelease.StatusFailed, lastStatus(t, c))
	})
}
