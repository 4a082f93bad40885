package distribute_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

// deploymentBackOff keeps Deployments from being ready: their image
// cannot be pulled.
func deploymentBackOff(o *unstructured.Unstructured) memory.Health {
	if o.GetKind() == "Deployment" {
		return memory.Health{Message: "image pull back-off"}
	}
	return memory.Health{Ready: true}
}

// TestDistributorWaitHealthCheckExprs: the Distributor waits for every
// member's copy by the HelmRelease's spec.healthCheckExprs before
// kstatus, as helm-controller does: a Deployment kstatus would wait for
// is ready when its current expression holds, and one whose failed
// expression holds fails the install at once, naming member, object and
// expression.
func TestDistributorWaitHealthCheckExprs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		exprs   release.HealthCheckExpressions
		message string
	}{
		{name: "current", exprs: release.HealthCheckExpressions{Current: "has(status.replicas)"}},
		{name: "failed", exprs: release.HealthCheckExpressions{Current: "true", Failed: "status.observedGeneration == metadata.generation"},
			message: "Deployment apps/podinfo Failed: spec.healthCheckExprs[0].failed is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
			f.Members["m2"].SetHealth(deploymentBackOff)
			rec := fixture.Reconciler(t, nil)
			rel := fixture.DistRelease()
			rel.Spec.Timeout = &metav1.Duration{Duration: 300 * time.Millisecond}
			rel.Spec.HealthCheckExprs = []release.CustomHealthCheck{{APIVersion: "apps/v1", Kind: "Deployment", HealthCheckExpressions: tc.exprs}}
			_, err := rec.Reconcile(ctx, f.Dist, rel)
			if tc.message == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, m := range []string{"m1", "m2"} {
				assert.Contains(t, err.Error(), "cluster "+m+": timed out after 300ms waiting for 1 object(s): "+tc.message)
			}
		})
	}
}
