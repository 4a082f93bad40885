package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// TestValidationNoStricterThanKarmada: what Karmada's admission takes,
// Validate takes; what Karmada refuses that these cases touch, Validate
// refuses, naming the field.
func TestValidationNoStricterThanKarmada(t *testing.T) {
	const spec = "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n"
	tests := []struct {
		name      string
		placement string
		wantPath  string // "" = valid
		wantText  string
	}{
		{name: "toleration with only an effect", placement: "    clusterTolerations: [{effect: NoSchedule}]\n"},
		{name: "toleration Equal without a key", placement: "    clusterTolerations: [{operator: Equal, effect: NoExecute}]\n"},
		{name: "toleration Lt", placement: "    clusterTolerations: [{key: gpu, operator: Lt, value: \"3\"}]\n",
			wantPath: "spec.placement.clusterTolerations[0].operator", wantText: "Karmada refuses Lt and Gt"},
		{name: "spread by label alone", placement: "    spreadConstraints: [{spreadByLabel: topology.example.com/rack, maxGroups: 2, minGroups: 1}]\n"},
		{name: "spread by region alone", placement: "    spreadConstraints: [{spreadByField: region, maxGroups: 2, minGroups: 1}]\n",
			wantPath: "spec.placement.spreadConstraints", wantText: "a constraint by cluster is required with one by region, zone or provider"},
		{name: "spread by region and cluster", placement: "    spreadConstraints: [{spreadByField: region, maxGroups: 2}, {spreadByField: cluster, maxGroups: 3}]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Decode([]byte(ppHead + spec + tt.placement))
			require.NoError(t, err)
			err = p.(*PropagationPolicy).Validate()
			if tt.wantPath == "" {
				assert.NoError(t, err)
				return
			}
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			require.Len(t, ve.Problems, 1)
			assert.Equal(t, tt.wantPath, ve.Problems[0].Path)
			assert.Contains(t, ve.Problems[0].Reason, tt.wantText)
		})
	}
}

// TestEffectOnlyTolerationToleratesTaintsOfThatEffect: Karmada's sample
// toleration {effect: NoSchedule} tolerates, as in Kubernetes (the empty
// operator is Equal, the empty key any key), the NoSchedule taints without
// a value, and no taint with one.
func TestEffectOnlyTolerationToleratesTaintsOfThatEffect(t *testing.T) {
	e := engine(t, ppHead+"spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n    clusterTolerations: [{effect: NoSchedule}]\n")
	clusters := clusterNames("a", "b", "c")
	clusters[1].Taints = []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectNoSchedule}}
	clusters[2].Taints = []corev1.Taint{{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	p, err := e.Place(objects(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 2}\n"), clusters)
	require.NoError(t, err)
	require.Len(t, p.Objects, 1)
	assert.Equal(t, map[string]int64{"a": 2, "b": 2}, targetsOf(p.Objects[0]))
}

// TestWorkloadAffinity: as Karmada's WorkloadAffinity and
// WorkloadAntiAffinity filters, among the objects of one Place call in the
// order given: a workload goes where the earlier workloads of its
// affinity group went, and not where those of its anti-affinity group
// went; a workload without the label, or in another namespace, is free.
func TestWorkloadAffinity(t *testing.T) {
	e := engine(t, ppHead+`spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    clusterAffinity: {clusterNames: [a, b, c]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    workloadAffinity:
      affinity: {groupByLabelKey: app.group}
      antiAffinity: {groupByLabelKey: app.ha}
`+"---\n"+strings.Replace(ppHead, "namespace: shop", "namespace: other", 1)+`spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    clusterAffinity: {clusterNames: [a, b, c]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    workloadAffinity: {antiAffinity: {groupByLabelKey: app.ha}}
`)
	deploy := func(ns, name, labels string) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %s, namespace: %s, labels: {%s}}\n---\n", name, ns, labels)
	}
	// Each cluster has room for one more than the one after it, so
	// without workload affinity every Deployment would go to a.
	clusters := []Cluster{{Name: "a", AvailableReplicas: 30}, {Name: "b", AvailableReplicas: 20}, {Name: "c", AvailableReplicas: 10}}
	stream := deploy("shop", "db", "app.ha: db") +
		deploy("shop", "db-replica", "app.ha: db") +
		deploy("shop", "db-third", "app.ha: db") +
		deploy("shop", "free", "") +
		deploy("other", "db", "app.ha: db")
	p, err := e.Place(objects(t, stream), clusters)
	require.NoError(t, err)
	got := map[string]map[string]int64{}
	for _, op := range p.Objects {
		require.NoError(t, op.Err)
		got[op.Object.Namespace+"/"+op.Object.Name] = targetsOf(op)
	}
	assert.Equal(t, map[string]map[string]int64{
		"shop/db":         {"a": 1},
		"shop/db-replica": {"b": 1},
		"shop/db-third":   {"c": 1},
		"shop/free":       {"a": 1},
		"other/db":        {"a": 1},
	}, got)

	t.Run("affinity follows the first of the group", func(t *testing.T) {
		e := engine(t, ppHead+`spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    workloadAffinity: {affinity: {groupByLabelKey: app.group}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web-on-c, namespace: shop}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    clusterAffinity: {clusterNames: [c]}
    workloadAffinity: {affinity: {groupByLabelKey: app.group}}
`)
		objs := objects(t, deploy("shop", "web", "app.group: shop")+deploy("shop", "cache", "app.group: shop"))
		p, err := e.Place(objs[1:], clusters)
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{"a": 1}, targetsOf(p.Objects[0]), "alone, cache goes to a")
		p, err = e.Place(objs, clusters)
		require.NoError(t, err)
		assert.Equal(t, "Deployment shop/cache", p.Objects[0].Object.String())
		assert.Equal(t, map[string]int64{"c": 1}, targetsOf(p.Objects[0]), "cache follows web to c")
		assert.Equal(t, map[string]int64{"c": 1}, targetsOf(p.Objects[1]))
	})

	t.Run("anti-affinity with every cluster taken", func(t *testing.T) {
		_, err := e.Place(objects(t, stream+deploy("shop", "db-fourth", "app.ha: db")), clusters)
		var se *ScheduleError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "spec.placement.workloadAffinity", se.Path)
		assert.Equal(t, "the workloads of anti-affinity group app.ha=db placed before it leave none of the 3 clusters that match the affinity", se.Reason)
	})
}

// TestWorkloadAffinityValidation: Karmada's own checks.
func TestWorkloadAffinityValidation(t *testing.T) {
	p, err := Decode([]byte(ppHead + "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n    workloadAffinity:\n      affinity: {groupByLabelKey: app.group}\n      antiAffinity: {groupByLabelKey: app.group}\n"))
	require.NoError(t, err)
	err = p.(*PropagationPolicy).Validate()
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Len(t, ve.Problems, 1)
	assert.Equal(t, "spec.placement.workloadAffinity", ve.Problems[0].Path)
	assert.Equal(t, "affinity and antiAffinity must not use the same groupByLabelKey", ve.Problems[0].Reason)

	p, err = Decode([]byte(ppHead + "spec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]\n  placement:\n    workloadAffinity:\n      affinity: {groupByLabelKey: \"bad key\"}\n"))
	require.NoError(t, err)
	require.ErrorAs(t, p.(*PropagationPolicy).Validate(), &ve)
	assert.Equal(t, "spec.placement.workloadAffinity.affinity.groupByLabelKey", ve.Problems[0].Path)
}

const overflowPolicy = ppHead + `spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}, {apiVersion: v1, kind: ConfigMap}]
  placement:
    clusterAffinities:
      - affinityName: on-prem
        clusterNames: [dc1, dc2]
        overflowAffinities:
          - affinityName: cloud
            clusterNames: [cloud1]
          - affinityName: far
            clusterNames: [far1, cloud1]
      - affinityName: fallback
        clusterNames: [big]
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
`

// TestOverflowAffinities: as Karmada's scheduler, the group's own clusters
// take what they have room for; the overflow groups, in order, take the
// rest; objects without replicas use the group's own clusters only.
func TestOverflowAffinities(t *testing.T) {
	e := engine(t, overflowPolicy)
	clusters := []Cluster{{Name: "big", AvailableReplicas: 100}, {Name: "cloud1", AvailableReplicas: 4}, {Name: "dc1", AvailableReplicas: 3}, {Name: "dc2", AvailableReplicas: 1}, {Name: "far1", AvailableReplicas: 10}}
	deploy := func(n int) string {
		return fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: %d}\n", n)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf, namespace: shop}\n"
	tests := []struct {
		replicas int
		want     map[string]int64
	}{
		{replicas: 4, want: map[string]int64{"dc1": 3, "dc2": 1}},
		{replicas: 6, want: map[string]int64{"dc1": 3, "dc2": 1, "cloud1": 2}},
		{replicas: 11, want: map[string]int64{"dc1": 3, "dc2": 1, "cloud1": 4, "far1": 3}},
		{replicas: 18, want: map[string]int64{"dc1": 3, "dc2": 1, "cloud1": 4, "far1": 10}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.replicas), func(t *testing.T) {
			p, err := e.Place(objects(t, deploy(tt.replicas)+"---\n"+cm), clusters)
			require.NoError(t, err)
			require.Len(t, p.Objects, 2)
			require.NoError(t, p.Objects[1].Err)
			assert.Equal(t, tt.want, targetsOf(p.Objects[1]), p.Table())
			assert.Equal(t, map[string]int64{"dc1": 0, "dc2": 0}, targetsOf(p.Objects[0]), "a ConfigMap uses the group's own clusters")
		})
	}
	t.Run("more replicas than every tier holds: the next group", func(t *testing.T) {
		p, err := e.Place(objects(t, deploy(30)), clusters)
		require.NoError(t, err)
		require.NoError(t, p.Objects[0].Err)
		assert.Equal(t, map[string]int64{"big": 30}, targetsOf(p.Objects[0]))
		assert.Equal(t, "fallback", p.Objects[0].AffinityGroup)
	})
}

// TestOverflowAffinitiesShortOfCapacity: replicas that neither the group
// nor its overflow groups can take are an error at overflowAffinities.
func TestOverflowAffinitiesShortOfCapacity(t *testing.T) {
	e := engine(t, strings.Replace(overflowPolicy, "      - affinityName: fallback\n        clusterNames: [big]\n", "", 1))
	_, err := e.Place(objects(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 30}\n"),
		[]Cluster{{Name: "cloud1", AvailableReplicas: 4}, {Name: "dc1", AvailableReplicas: 3}, {Name: "far1", AvailableReplicas: 10}})
	var se *ScheduleError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "spec.placement.clusterAffinities[0].overflowAffinities", se.Path)
	assert.Equal(t, `the clusters of group "on-prem" and of its overflow groups can take 17 of 30 replicas`, se.Reason)
}

// TestOverflowAffinitiesValidation: Karmada's own rules for
// overflowAffinities.
func TestOverflowAffinitiesValidation(t *testing.T) {
	doc := strings.Replace(overflowPolicy, "      replicaDivisionPreference: Weighted\n      weightPreference: {dynamicWeight: AvailableReplicas}\n", "", 1)
	doc = strings.Replace(doc, "affinityName: far\n", "affinityName: on-prem\n", 1)
	p, err := Decode([]byte(doc))
	require.NoError(t, err)
	err = p.(*PropagationPolicy).Validate()
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	var got []string
	for _, fe := range ve.Problems {
		got = append(got, fe.Path+": "+fe.Reason)
	}
	assert.Equal(t, []string{
		"spec.placement.clusterAffinities[0].overflowAffinities: can only be used together with dynamic weight or aggregated scheduling",
		"spec.placement.clusterAffinities[0].overflowAffinities[1].affinityName: must be unique and must not be the group's own affinityName",
	}, got)
}

// TestNoPathAbsentWarningForRemoveAfterAdd: a remove that follows an add of
// the same path in one rule finds what the add wrote.
func TestNoPathAbsentWarningForRemoveAfterAdd(t *testing.T) {
	e := engine(t, ppHead+"spec: {resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]}\n---\n"+opHead+`spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  overrideRules:
    - overriders:
        plaintext:
          - {path: /metadata/annotations, operator: add, value: {a: b}}
          - {path: /metadata/annotations, operator: remove}
          - {path: /spec/paused, operator: remove}
`)
	p, err := e.Place(objects(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec: {replicas: 1}\n"), clusterNames("a"))
	require.NoError(t, err)
	var got []string
	for _, w := range p.Warnings {
		got = append(got, w.String())
	}
	assert.Equal(t, []string{
		"OverridePathAbsent: OverridePolicy shop/tune spec.overrideRules[0].overriders.plaintext[2].path: remove /spec/paused finds no such path on kind Deployment (e.g. Deployment shop/web)",
	}, got)
}
