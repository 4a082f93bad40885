package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release/kube"
)

// A kubeconfig Secret's config sets no rate limit: the cluster built for
// it is not throttled at client-go's 5 QPS; the manager's own keeps its.
func TestKubeClusterRateLimits(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       rest.Config
		wantQPS   float32
		wantBurst int
	}{
		{name: "kubeconfig", cfg: rest.Config{Host: "https://member.invalid"}, wantQPS: kube.DefaultQPS, wantBurst: kube.DefaultBurst},
		{name: "manager's", cfg: rest.Config{Host: "https://hub.invalid", QPS: 20, Burst: 30}, wantQPS: 20, wantBurst: 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := KubeCluster("c", &tc.cfg)
			require.NoError(t, err)
			kc, ok := c.(*kube.Cluster)
			require.True(t, ok, "%T", c)
			got, err := kc.RESTConfig()
			require.NoError(t, err)
			assert.Equal(t, tc.wantQPS, got.QPS)
			assert.Equal(t, tc.wantBurst, got.Burst)
		})
	}
}
