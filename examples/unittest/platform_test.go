package unittest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/examples/unittest"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
)

func TestRolloutPlatform(t *testing.T) {
	const (
		ok      = depgraph.Succeeded
		failed  = depgraph.Failed
		waiting = depgraph.NotStarted
	)
	tests := []struct {
		name string
		// health scripts readiness per member.
		health map[string]memory.HealthFunc
		// installed is the version rolled out (and checked healthy)
		// before the rollout under test; "" starts from empty members.
		installed string
		// version is what the rollout under test rolls out.
		version string
		// inject breaks something right before the rollout under test.
		inject func(tf *fleettest.Fleet)

		wantErr     string
		wantStates  map[string]depgraph.State
		wantWaves   []string
		wantHistory map[string][]string
		wantReady   map[string]string
		// wantRolledBack are the members the halted rollout rolled back.
		wantRolledBack []string
		// wantObjects is Cluster.Summary per member.
		wantObjects map[string][]string
		// then runs after the checks: what happens next.
		then func(t *testing.T, tf *fleettest.Fleet)
	}{
		{
			name:       "healthy rollout reaches every member, dev first",
			version:    "6.5.0",
			wantStates: map[string]depgraph.State{"dev-1": ok, "prod-eu-1": ok, "prod-us-1": ok},
			wantWaves:  []string{"dev", "prod-canary", "prod"},
			wantHistory: map[string][]string{
				"dev-1": {"6.5.0 deployed"}, "prod-eu-1": {"6.5.0 deployed"}, "prod-us-1": {"6.5.0 deployed"},
			},
			wantReady:   map[string]string{"dev-1": "True", "prod-eu-1": "True", "prod-us-1": "True"},
			wantObjects: map[string][]string{"prod-us-1": podinfoObjects},
		},
		{
			name:      "a Deployment that never becomes ready on the prod canary halts the rollout and rolls the canary back",
			health:    map[string]memory.HealthFunc{"prod-eu-1": fleettest.ChartNeverReady("podinfo", "6.5.1")},
			installed: "6.5.0",
			version:   "6.5.1",
			wantErr:   "rollout halted after wave prod-canary",
			wantStates: map[string]depgraph.State{
				"dev-1": ok, "prod-eu-1": failed, "prod-us-1": waiting,
			},
			wantWaves: []string{"dev", "prod-canary"},
			wantHistory: map[string][]string{
				"dev-1":     {"6.5.0 superseded", "6.5.1 deployed"},
				"prod-eu-1": {"6.5.0 superseded", "6.5.1 failed", "6.5.0 deployed"},
				"prod-us-1": {"6.5.0 deployed"},
			},
			// The canary stays on the failed revision's status (Ready False,
			// Stalled) until the next change, but runs 6.5.0 again.
			wantReady:      map[string]string{"dev-1": "True", "prod-eu-1": "False", "prod-us-1": "True"},
			wantRolledBack: []string{"prod-eu-1"},
			then: func(t *testing.T, tf *fleettest.Fleet) {
				st, ok := tf.Status(fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "podinfo"})
				require.True(t, ok)
				rem := st.GetCondition(release.ConditionRemediated)
				require.NotNil(t, rem)
				assert.Equal(t, release.ReasonRollbackSucceeded, rem.Reason)
				assert.Contains(t, st.GetCondition(release.ConditionReady).Message, "crash loop back-off", "Ready says why")
				assert.Equal(t, int64(3), replicas(t, tf.Cluster("prod-eu-1")))
			},
		},
		{
			name:    "an unreachable prod canary fails only its own part and halts before the rest of prod",
			version: "6.5.0",
			inject: func(tf *fleettest.Fleet) {
				tf.Cluster("prod-eu-1").SetUnreachable(errors.New("dial tcp 10.0.0.7:6443: connect: connection refused"))
			},
			wantErr:     "prod-eu-1:apps/podinfo",
			wantStates:  map[string]depgraph.State{"dev-1": ok, "prod-eu-1": failed, "prod-us-1": waiting},
			wantWaves:   []string{"dev", "prod-canary"},
			wantHistory: map[string][]string{"dev-1": {"6.5.0 deployed"}, "prod-us-1": nil},
			wantReady:   map[string]string{"dev-1": "True", "prod-us-1": ""},
			wantObjects: map[string][]string{"prod-us-1": {}},
			then: func(t *testing.T, tf *fleettest.Fleet) {
				// The member comes back: the next rollout converges to the
				// fault-free end state.
				tf.Cluster("prod-eu-1").SetUnreachable(nil)
				rep, err := unittest.RolloutPlatform(context.Background(), tf.Fleet, platform(t, "6.5.0"), bake)
				require.NoError(t, err)
				for _, it := range rep.Items {
					assert.Equal(t, depgraph.Succeeded, it.State, it.Key.String())
				}
				for _, name := range tf.Names() {
					c := tf.Cluster(name)
					assert.Equal(t, []string{"6.5.0 deployed"}, history(t, c), name)
					assert.Equal(t, podinfoObjects, c.Summary(), name)
					assert.Equal(t, "True", tf.Ready(name, "apps", "podinfo"), name)
				}
			},
		},
		{
			name:        "drift made by another field manager is found and corrected",
			version:     "6.5.0",
			wantStates:  map[string]depgraph.State{"dev-1": ok, "prod-eu-1": ok, "prod-us-1": ok},
			wantWaves:   []string{"dev", "prod-canary", "prod"},
			wantHistory: map[string][]string{"prod-us-1": {"6.5.0 deployed"}},
			wantReady:   map[string]string{"prod-us-1": "True"},
			then: func(t *testing.T, tf *fleettest.Fleet) {
				ctx := context.Background()
				c := tf.Cluster("prod-us-1")
				// Someone scales podinfo down with kubectl edit.
				dep := podinfoDeployment(t, c)
				delete(dep.Object, "status")
				require.NoError(t, unstructured.SetNestedField(dep.Object, int64(1), "spec", "replicas"))
				_, err := c.Update(ctx, dep, "kubectl-edit")
				require.NoError(t, err)
				require.Equal(t, int64(1), replicas(t, c))

				healed, err := unittest.HealDrift(ctx, tf.Fleet)
				require.NoError(t, err)
				assert.Equal(t, []fleet.Key{{Cluster: "prod-us-1", Namespace: "apps", Name: "podinfo"}}, healed)
				assert.Equal(t, int64(3), replicas(t, c), "back to prod's value")
				assert.Equal(t, []string{"6.5.0 deployed"}, history(t, c), "a drift correction makes no Helm revision")
				assert.Equal(t, podinfoObjects, c.Summary())

				healed, err = unittest.HealDrift(ctx, tf.Fleet)
				require.NoError(t, err)
				assert.Empty(t, healed, "nothing left to heal")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			tf := newTestFleet(t, tc.health)
			if tc.installed != "" {
				_, err := unittest.RolloutPlatform(ctx, tf.Fleet, platform(t, tc.installed), bake)
				require.NoError(t, err, "the version installed before")
			}
			if tc.inject != nil {
				tc.inject(tf)
			}

			rep, err := unittest.RolloutPlatform(ctx, tf.Fleet, platform(t, tc.version), bake)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			require.NotNil(t, rep)
			states := map[string]depgraph.State{}
			for _, it := range rep.Items {
				states[it.Key.Cluster] = it.State
			}
			assert.Equal(t, tc.wantStates, states)
			var waves []string
			for _, w := range rep.Waves {
				waves = append(waves, w.Name)
			}
			assert.Equal(t, tc.wantWaves, waves)
			assert.Equal(t, tc.wantErr != "", rep.Halted, "the rollout halts exactly when it fails")
			var rolledBack []string
			for _, it := range rep.Items {
				if it.RolledBack {
					rolledBack = append(rolledBack, it.Key.Cluster)
				}
			}
			assert.Equal(t, tc.wantRolledBack, rolledBack)
			for name, want := range tc.wantHistory {
				assert.Equal(t, want, history(t, tf.Cluster(name)), "helm history on %s", name)
			}
			for name, want := range tc.wantReady {
				assert.Equal(t, want, tf.Ready(name, "apps", "podinfo"), "Ready on %s", name)
			}
			for name, want := range tc.wantObjects {
				assert.Equal(t, want, tf.Cluster(name).Summary(), "objects on %s", name)
			}
			if tc.then != nil {
				tc.then(t, tf)
			}
		})
	}
}

// podinfoObjects are the objects the test chart leaves on a member.
var podinfoObjects = []string{
	"ConfigMap apps/podinfo", "Deployment apps/podinfo", "Ingress apps/podinfo",
	"Secret apps/podinfo", "Service apps/podinfo",
}

func TestRolloutPlatformPlanErrors(t *testing.T) {
	tf := newTestFleet(t, nil)
	in := platform(t, "6.5.0")
	// An override that cannot apply on prod members: the plan fails there
	// and nothing is written anywhere.
	in.Policies.Override[0].Spec.OverrideRules[0].Overriders.Plaintext = append(
		in.Policies.Override[0].Spec.OverrideRules[0].Overriders.Plaintext, plaintextRemove("/spec/chart/spec/nosuchfield"))
	rep, err := unittest.RolloutPlatform(context.Background(), tf.Fleet, in, bake)
	require.Error(t, err)
	assert.Nil(t, rep)
	var pe *unittest.PlanError
	require.ErrorAs(t, err, &pe)
	assert.Contains(t, err.Error(), "prod-eu-1")
	for _, name := range tf.Names() {
		assert.Empty(t, tf.Cluster(name).Summary(), "nothing applied on %s", name)
	}
}
