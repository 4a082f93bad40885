package memory

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
)

func TestImpersonate(t *testing.T) {
	denied := errors.New("forbidden: cannot impersonate")
	c := New("m1", WithImpersonation(func(user string) error {
		if user == "system:serviceaccount:kube-system:default" {
			return denied
		}
		return nil
	}))
	const user = "system:serviceaccount:team-a:deployer"
	v, err := release.ImpersonateAs(c, user)
	require.NoError(t, err)
	assert.Equal(t, "m1", v.Name())
	again, err := c.Impersonate(user)
	require.NoError(t, err)
	assert.Same(t, v, again, "one view per user")

	_, err = v.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "team-a"})
	require.NoError(t, err)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "team-a"}}}
	_, err = v.Apply(t.Context(), cm, release.ApplyOptions{FieldManager: "t"})
	require.NoError(t, err)
	require.NoError(t, v.Delete(t.Context(), release.RefOf(cm), release.DeleteOptions{}))
	_, err = c.HelmConfig(t.Context(), release.HelmScope{StorageNamespace: "kube-system"})
	require.NoError(t, err)
	assert.Equal(t, []Impersonation{
		{User: user, Call: "Apply", Namespace: "team-a"},
		{User: user, Call: "Delete", Namespace: "team-a"},
		{User: user, Call: "HelmConfig", Namespace: "team-a"},
	}, c.Impersonations(), "the cluster's own calls are not impersonations")

	_, err = c.Impersonate("system:serviceaccount:kube-system:default")
	require.ErrorIs(t, err, denied)
	_, err = v.(release.Impersonator).Impersonate("other")
	require.EqualError(t, err, "cluster m1: cannot impersonate other: it acts as "+user+" already")
	_, err = c.Impersonate("")
	require.Error(t, err)
}
