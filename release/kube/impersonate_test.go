package kube

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
)

func TestImpersonate(t *testing.T) {
	var mu sync.Mutex
	var users []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		users = append(users, r.Header.Get("Impersonate-User"))
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer srv.Close()

	c, err := New(Config{Name: "eu-1", REST: &rest.Config{Host: srv.URL}, FieldManager: "platform"})
	require.NoError(t, err)
	const user = "system:serviceaccount:team-a:deployer"
	got, err := release.ImpersonateAs(c, user)
	require.NoError(t, err)
	ic := got.(*Cluster)
	assert.Equal(t, "eu-1", ic.Name())
	assert.Equal(t, "platform", ic.fieldManager)
	rc, err := ic.RESTConfig()
	require.NoError(t, err)
	assert.Equal(t, user, rc.Impersonate.UserName)
	assert.Equal(t, DefaultQPS, rc.QPS, "the rate limits stay")

	_, _ = ic.kubernetes.CoreV1().Secrets("team-a").Get(t.Context(), "x", metav1.GetOptions{})
	_, _ = c.kubernetes.CoreV1().Secrets("team-a").Get(t.Context(), "x", metav1.GetOptions{})
	mu.Lock()
	assert.Equal(t, []string{user, ""}, users, "the impersonated cluster's requests carry the header; the cluster's own do not")
	mu.Unlock()

	again, err := c.Impersonate(user)
	require.NoError(t, err)
	assert.Same(t, ic, again, "built once per user")
	other, err := c.Impersonate("system:serviceaccount:team-b:deployer")
	require.NoError(t, err)
	assert.NotSame(t, ic, other)

	tests := []struct {
		name    string
		cluster func(t *testing.T) release.Impersonator
		want    string
	}{
		{name: "caller's clients", cluster: func(t *testing.T) release.Impersonator {
			c, err := New(Config{Name: "eu-1", REST: &rest.Config{Host: srv.URL}, Kubernetes: kubefake.NewClientset()})
			require.NoError(t, err)
			return c
		}, want: "cluster eu-1: cannot impersonate u: it was built with the caller's Dynamic or Kubernetes client"},
		{name: "already impersonating", cluster: func(*testing.T) release.Impersonator { return ic },
			want: "cluster eu-1: cannot impersonate u: its config impersonates another user already"},
		{name: "config impersonating", cluster: func(t *testing.T) release.Impersonator {
			c, err := New(Config{Name: "eu-1", REST: &rest.Config{Host: srv.URL, Impersonate: rest.ImpersonationConfig{Groups: []string{"g"}}}})
			require.NoError(t, err)
			return c
		}, want: "cluster eu-1: cannot impersonate u: its config impersonates another user already"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cluster(t).Impersonate("u")
			require.EqualError(t, err, tc.want)
		})
	}
	_, err = c.Impersonate("")
	require.Error(t, err)
}
