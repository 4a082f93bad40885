package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

// The status the simulated controllers show is what kstatus needs to
// judge each kind a community chart creates: Current when the scripted
// health says ready, InProgress while it does not, Failed when it failed
// (for the kinds kstatus can see failing).
func TestSimulatedStatusPerKind(t *testing.T) {
	spec := func(s map[string]any) map[string]any { return map[string]any{"spec": s} }
	tests := []struct {
		obj             *unstructured.Unstructured
		unready, failed kstatus.Status
		kstatusBlind    bool // kstatus reads nothing the health changes
	}{
		{obj: object("apps/v1", "Deployment", "apps", "d", spec(map[string]any{"replicas": int64(2)})), unready: kstatus.InProgressStatus, failed: kstatus.FailedStatus},
		{obj: object("apps/v1", "StatefulSet", "apps", "s", spec(map[string]any{"replicas": int64(2)})), unready: kstatus.InProgressStatus, failed: kstatus.InProgressStatus},
		{obj: object("apps/v1", "DaemonSet", "apps", "ds", spec(map[string]any{})), unready: kstatus.InProgressStatus, failed: kstatus.InProgressStatus},
		{obj: object("apps/v1", "ReplicaSet", "apps", "rs", spec(map[string]any{"replicas": int64(1)})), unready: kstatus.InProgressStatus, failed: kstatus.InProgressStatus},
		{obj: object("batch/v1", "Job", "apps", "j", spec(map[string]any{})), unready: kstatus.InProgressStatus, failed: kstatus.FailedStatus},
		// kstatus counts a failed Pod as completed.
		{obj: object("v1", "Pod", "apps", "p", spec(map[string]any{"containers": []any{map[string]any{"name": "c", "image": "i"}}})), unready: kstatus.InProgressStatus, failed: kstatus.CurrentStatus},
		{obj: object("v1", "PersistentVolumeClaim", "apps", "pvc", spec(map[string]any{})), unready: kstatus.InProgressStatus, failed: kstatus.InProgressStatus},
		// kstatus asks a LoadBalancer for its cluster IP only, and reads
		// no condition of an APIService (Available): as on a real cluster,
		// it judges them Current whatever the health.
		{obj: object("v1", "Service", "apps", "lb", spec(map[string]any{"type": "LoadBalancer", "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}})), kstatusBlind: true},
		{obj: object("apiregistration.k8s.io/v1", "APIService", "", "v1.example.com", spec(map[string]any{"group": "example.com", "version": "v1"})), kstatusBlind: true},
		{obj: object("policy/v1", "PodDisruptionBudget", "apps", "pdb", spec(map[string]any{})), unready: kstatus.InProgressStatus, failed: kstatus.FailedStatus},
		{obj: widgetCRD("example.com", map[string]bool{"v1": true}), unready: kstatus.InProgressStatus, failed: kstatus.InProgressStatus},
		{obj: object("example.com/v1", "Widget", "apps", "w", spec(map[string]any{})), unready: kstatus.InProgressStatus, failed: kstatus.FailedStatus},
	}
	var health memory.Health
	c := memory.New("c", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "CustomResourceDefinition" && u.GetName() != "widgets.example.com" {
			return memory.Health{Ready: true}
		}
		return health
	}))
	health = memory.Health{Ready: true}
	for _, tt := range tests {
		_, err := c.Apply(t.Context(), tt.obj, applyOpts)
		require.NoError(t, err, tt.obj.GetKind())
	}
	states := []struct {
		name   string
		health memory.Health
		want   func(tt int) kstatus.Status
	}{
		{"ready", memory.Health{Ready: true}, func(int) kstatus.Status { return kstatus.CurrentStatus }},
		{"not ready", memory.Health{Message: "waiting"}, func(i int) kstatus.Status { return tests[i].unready }},
		{"failed", memory.Health{Failed: true, Message: "crashed"}, func(i int) kstatus.Status { return tests[i].failed }},
	}
	for _, st := range states {
		t.Run(st.name, func(t *testing.T) {
			health = st.health
			for i, tt := range tests {
				live, err := c.Get(t.Context(), release.RefOf(tt.obj))
				require.NoError(t, err)
				res, err := kstatus.Compute(live)
				require.NoError(t, err)
				want := st.want(i)
				if tt.kstatusBlind {
					want = kstatus.CurrentStatus
				}
				assert.Equal(t, want, res.Status, "%s: %s", tt.obj.GetKind(), res.Message)
			}
		})
	}
}
