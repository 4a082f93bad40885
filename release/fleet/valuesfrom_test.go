package fleet_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values"
)

// valuesFromYAML places podinfo, which reads its values from the
// ConfigMap podinfo-values, on every member of the app tier.
const valuesFromYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  valuesFrom:
    - {kind: ConfigMap, name: podinfo-values}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector:
        matchLabels: {tier: apps}
`

// prodReadsOnMember chooses member mode for the prod members' copies
// only, by an annotationsOverrider.
const prodReadsOnMember = `
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-values-from, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {env: prod}}}
      overriders:
        annotationsOverrider:
          - {operator: add, value: {fleet.helmfleet.io/values-from: member}}
`

// valuesFleet is a hub and three members, each holding its own
// podinfo-values ConfigMap (replicas as given; 0 leaves it out).
type valuesFleet struct {
	hub     *memory.Cluster
	members map[string]*memory.Cluster
	list    []release.Member
}

func newValuesFleet(t *testing.T, hubReplicas int, memberReplicas map[string]int) *valuesFleet {
	t.Helper()
	vf := &valuesFleet{hub: memory.New("hub"), members: map[string]*memory.Cluster{}}
	putValues(t, vf.hub, hubReplicas)
	for _, m := range []struct{ name, env string }{{"dev-1", "dev"}, {"prod-eu-1", "prod"}, {"prod-us-1", "prod"}} {
		c := memory.New(m.name)
		putValues(t, c, memberReplicas[m.name])
		vf.members[m.name] = c
		vf.list = append(vf.list, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env, "tier": "apps"}}})
	}
	return vf
}

func putValues(t *testing.T, c *memory.Cluster, replicas int) {
	t.Helper()
	if replicas == 0 {
		return
	}
	_, err := c.Apply(context.Background(), &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "apps", "name": "podinfo-values"},
		"data":     map[string]any{"values.yaml": fmt.Sprintf("replicaCount: %d\n", replicas)},
	}}, release.ApplyOptions{FieldManager: "test"})
	require.NoError(t, err)
}

func (vf *valuesFleet) fleet(t *testing.T, mode fleet.ValuesFrom) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(fleet.Config{
		Members:    vf.list,
		ValuesFrom: mode,
		ReconcilerConfig: &reconcile.Config{
			Charts: fixture.Charts(), Values: release.NewObjectValues(vf.hub), PollInterval: time.Millisecond,
		},
	})
	require.NoError(t, err)
	return f
}

var podinfoOn = func(member string) fleet.Key { return fleet.Key{Cluster: member, Namespace: "apps", Name: "podinfo"} }

func TestValuesFromMemberGivesEachMemberItsOwnValues(t *testing.T) {
	ctx := context.Background()
	want := map[string]int{"dev-1": 1, "prod-eu-1": 3, "prod-us-1": 5}
	vf := newValuesFleet(t, 9, want)
	tests := []struct {
		name   string
		mode   fleet.ValuesFrom
		extra  string
		want   map[string]int
		wantAt map[string]fleet.ValuesFrom
	}{
		{name: "hub by default: one ConfigMap for all", want: map[string]int{"dev-1": 9, "prod-eu-1": 9, "prod-us-1": 9},
			wantAt: map[string]fleet.ValuesFrom{"dev-1": "hub", "prod-eu-1": "hub", "prod-us-1": "hub"}},
		{name: "member by config: each member's own ConfigMap", mode: fleet.ValuesFromMember, want: want,
			wantAt: map[string]fleet.ValuesFrom{"dev-1": "member", "prod-eu-1": "member", "prod-us-1": "member"}},
		{name: "member for prod by an annotationsOverrider", extra: prodReadsOnMember, want: map[string]int{"dev-1": 9, "prod-eu-1": 3, "prod-us-1": 5},
			wantAt: map[string]fleet.ValuesFrom{"dev-1": "hub", "prod-eu-1": "member", "prod-us-1": "member"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := vf.fleet(t, tc.mode)
			plan, err := f.Plan(ctx, decodeInputs(t, valuesFromYAML+tc.extra))
			require.NoError(t, err)
			require.Empty(t, plan.Errors)
			data, err := json.Marshal(plan)
			require.NoError(t, err)
			for member, n := range tc.want {
				it, ok := plan.Item(podinfoOn(member))
				require.True(t, ok, member)
				assert.EqualValues(t, n, it.Values.Values["replicaCount"], member)
				at, ok := plan.ValuesFrom(podinfoOn(member))
				assert.True(t, ok)
				assert.Equal(t, tc.wantAt[member], at, member)
				assert.Regexp(t, member+`\s+apps/podinfo\s+.*\s`+string(at)+`\s`, plan.Table(), "the table says where valuesFrom was read")
				assert.Contains(t, string(data), `"cluster":"`+member+`","namespace":"apps","name":"podinfo"`)
			}
			assert.Contains(t, string(data), `"valuesFrom":"`+string(tc.wantAt["prod-us-1"])+`"`)
		})
	}

	// Applied, each member runs the replicas of its own ConfigMap.
	f := vf.fleet(t, fleet.ValuesFromMember)
	plan, err := f.Plan(ctx, decodeInputs(t, valuesFromYAML))
	require.NoError(t, err)
	_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	for member, n := range want {
		assert.EqualValues(t, n, fixture.Replicas(t, vf.members[member]), member)
	}

	// A member's ConfigMap changes: only that member is upgraded.
	putValues(t, vf.members["prod-us-1"], 6)
	plan, err = f.Plan(ctx, decodeInputs(t, valuesFromYAML))
	require.NoError(t, err)
	for member := range want {
		it, _ := plan.Item(podinfoOn(member))
		if member == "prod-us-1" {
			assert.Equal(t, reconcile.ActionUpgrade, it.Action)
		} else {
			assert.Equal(t, reconcile.ActionNone, it.Action, member)
		}
	}
}

func TestValuesFromErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("a member without the ConfigMap fails alone, named with release and reference", func(t *testing.T) {
		vf := newValuesFleet(t, 9, map[string]int{"dev-1": 1, "prod-eu-1": 3})
		f := vf.fleet(t, fleet.ValuesFromMember)
		plan, err := f.Plan(ctx, decodeInputs(t, valuesFromYAML))
		require.NoError(t, err)
		require.Len(t, plan.Errors, 1)
		msg := plan.Errors[0].Error()
		for _, part := range []string{"member prod-us-1", "release apps/podinfo", "valuesFrom read on member prod-us-1", "ConfigMap/podinfo-values[values.yaml]", "not found"} {
			assert.Contains(t, msg, part)
		}
		var vfe *fleet.ValuesFromError
		require.ErrorAs(t, plan.Errors[0], &vfe)
		assert.Equal(t, podinfoOn("prod-us-1"), vfe.Key)
		assert.Equal(t, fleet.ValuesFromMember, vfe.From)
		assert.ErrorIs(t, plan.Errors[0], values.ErrNotFound)

		rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "member prod-us-1")
		for _, it := range rep.Items {
			if it.Key.Cluster == "prod-us-1" {
				assert.Error(t, it.Err)
			} else {
				assert.NoError(t, it.Err, it.Key.String())
			}
		}
	})
	t.Run("member mode needs a ReconcilerConfig", func(t *testing.T) {
		vf := newValuesFleet(t, 9, nil)
		f, err := fleet.New(fleet.Config{Members: vf.list, ValuesFrom: fleet.ValuesFromMember, Reconciler: fixture.Reconciler(t, release.NewObjectValues(vf.hub))})
		require.NoError(t, err)
		plan, err := f.Plan(ctx, decodeInputs(t, valuesFromYAML))
		require.NoError(t, err)
		require.Len(t, plan.Errors, 3)
		assert.Contains(t, plan.Errors[0].Error(), "member dev-1: release apps/podinfo: valuesFrom is read on the member")
		assert.Contains(t, plan.Errors[0].Error(), "Config.ReconcilerConfig")

		// A release without valuesFrom does not care.
		in := decodeInputs(t, valuesFromYAML)
		in.Releases[0].Spec.ValuesFrom = nil
		plan, err = f.Plan(ctx, in)
		require.NoError(t, err)
		assert.Empty(t, plan.Errors)
		_, ok := plan.ValuesFrom(podinfoOn("dev-1"))
		assert.False(t, ok)
		assert.Regexp(t, `dev-1\s+apps/podinfo\s+.*\s-\s`, plan.Table())
	})
	t.Run("an unknown annotation value", func(t *testing.T) {
		vf := newValuesFleet(t, 9, nil)
		f := vf.fleet(t, "")
		in := decodeInputs(t, valuesFromYAML)
		in.Releases[0].Annotations = map[string]string{fleet.ValuesFromAnnotation: "spoke"}
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		require.Len(t, plan.Errors, 3)
		assert.Equal(t, `member dev-1: release apps/podinfo: metadata.annotations[fleet.helmfleet.io/values-from]: "spoke" is neither "hub" nor "member"`, plan.Errors[0].Error())
	})
	t.Run("config", func(t *testing.T) {
		vf := newValuesFleet(t, 0, nil)
		rc := &reconcile.Config{Charts: fixture.Charts()}
		_, err := fleet.New(fleet.Config{Members: vf.list, ReconcilerConfig: rc, ValuesFrom: "spoke"})
		assert.EqualError(t, err, `fleet: config: ValuesFrom: "spoke" is neither "hub" nor "member"`)
		_, err = fleet.New(fleet.Config{Members: vf.list, ReconcilerConfig: rc, Reconciler: fixture.Reconciler(t, nil)})
		assert.EqualError(t, err, "fleet: config: set Reconciler or ReconcilerConfig, not both")
		_, err = fleet.New(fleet.Config{Members: vf.list})
		assert.EqualError(t, err, "fleet: config: Reconciler or ReconcilerConfig is required")
	})
}

// Secret text read on a member reaches no output, as on the hub (the
// canary suite): neither a plan's errors, table and JSON nor the apply's.
func TestValuesFromMemberSecretReachesNoOutput(t *testing.T) {
	ctx := context.Background()
	vf := newValuesFleet(t, 0, nil)
	for _, c := range vf.members {
		_, err := c.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"namespace": "apps", "name": "ui"},
			"data":     map[string]any{"values.yaml": base64.StdEncoding.EncodeToString([]byte(canary))},
		}}, release.ApplyOptions{FieldManager: "test"})
		require.NoError(t, err)
	}
	f := vf.fleet(t, fleet.ValuesFromMember)
	in := decodeInputs(t, valuesFromYAML)
	in.Releases[0].Spec.ValuesFrom = []release.ValuesReference{{Kind: "Secret", Name: "ui", TargetPath: "ui.message"}}
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Len(t, plan.Errors, 3, "a comma in a value at a targetPath fails every member")
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	outputs := []string{plan.Table(), string(data), fmt.Sprintf("%v %+v", plan.Errors, plan.Errors)}
	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	outputs = append(outputs, err.Error(), rep.Table())
	for _, out := range outputs {
		assert.Contains(t, out, "prod-us-1")
		for _, part := range []string{"CANA", `x"`, "RY,b"} {
			assert.NotContains(t, out, part)
		}
	}
}
