package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// A rest.Config without rate limits (a plain kubeconfig's) gets the
// defaults, or Config's; one with its own keeps them; the caller's config
// is not changed.
func TestRESTRateLimits(t *testing.T) {
	limiter := flowcontrol.NewTokenBucketRateLimiter(1, 1)
	for _, tc := range []struct {
		name      string
		rest      rest.Config
		qps       float32
		burst     int
		wantQPS   float32
		wantBurst int
	}{
		{name: "unset: defaults", wantQPS: DefaultQPS, wantBurst: DefaultBurst},
		{name: "unset: Config's", qps: 20, burst: 40, wantQPS: 20, wantBurst: 40},
		{name: "unset: Config's QPS, default burst", qps: 20, wantQPS: 20, wantBurst: DefaultBurst},
		{name: "caller's kept", rest: rest.Config{QPS: 7, Burst: 9}, qps: 20, wantQPS: 7, wantBurst: 9},
		{name: "caller's limiter kept", rest: rest.Config{RateLimiter: limiter}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.rest
			in.Host = "https://example.invalid"
			before := *rest.CopyConfig(&in)
			c, err := New(Config{Name: "c", REST: &in, QPS: tc.qps, Burst: tc.burst})
			require.NoError(t, err)
			got, err := c.RESTConfig()
			require.NoError(t, err)
			assert.Equal(t, tc.wantQPS, got.QPS, "QPS")
			assert.Equal(t, tc.wantBurst, got.Burst, "Burst")
			assert.Equal(t, before.QPS, in.QPS, "caller's QPS unchanged")
			assert.Equal(t, before.Burst, in.Burst, "caller's Burst unchanged")
		})
	}
}
