package fleet_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
)

// TestPlanTableSaysAnItemErrorOnce: a unit's error is in its row's note,
// and not again below the table; units in sync show the action none.
func TestPlanTableSaysAnItemErrorOnce(t *testing.T) {
	failed := func(o *unstructured.Unstructured) memory.Health {
		if o.GetKind() == "Deployment" {
			return memory.Health{Failed: true, Message: "image pull failed"}
		}
		return memory.Health{Ready: true}
	}
	tf := newTestFleet(t, map[string]memory.HealthFunc{"dev-1": failed})
	in := strings.Replace(fleetYAML, "interval: 10m", "interval: 10m\n  timeout: 2s", 1)
	plan, err := tf.fleet.Plan(context.Background(), decodeInputs(t, in))
	require.NoError(t, err)
	_, err = tf.fleet.Apply(context.Background(), plan, fleet.ApplyOptions{})
	require.Error(t, err)

	plan, err = tf.fleet.Plan(context.Background(), decodeInputs(t, in))
	require.NoError(t, err)
	require.Len(t, plan.Errors, 1)
	table := plan.Table()
	assert.Equal(t, 1, strings.Count(table, "stalled (RetriesExceeded)"), table)
	assert.Regexp(t, `(?m)^dev-1\s+apps/podinfo\s+Failed\s+none\s.*stalled \(RetriesExceeded\)`, table)
	assert.Regexp(t, `(?m)^prod-eu-1\s+apps/podinfo\s+InSync\s+none\s`, table)
}
