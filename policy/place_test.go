package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

// fleet is a small fleet with every placement fact set.
func fleet() []Cluster {
	return []Cluster{
		{Name: "aws-east-1", Labels: map[string]string{"env": "prod", "tier": "big"}, Provider: "aws", Region: "us-east", Zones: []string{"us-east-1a"}, AvailableReplicas: 10},
		{Name: "aws-east-2", Labels: map[string]string{"env": "prod"}, Provider: "aws", Region: "us-east", Zones: []string{"us-east-1b", "us-east-1c"}, AvailableReplicas: 4},
		{Name: "gcp-west-1", Labels: map[string]string{"env": "prod"}, Provider: "gcp", Region: "us-west", Zones: []string{"us-west1-a"}, AvailableReplicas: 6},
		{Name: "edge-1", Labels: map[string]string{"env": "dev"}, Provider: "onprem", Region: "eu", AvailableReplicas: 2,
			Taints: []corev1.Taint{{Key: "edge", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "soft-1", Labels: map[string]string{"env": "dev"}, Provider: "onprem", Region: "eu", AvailableReplicas: 1,
			Taints: []corev1.Taint{{Key: "maintenance", Effect: corev1.TaintEffectPreferNoSchedule}}},
	}
}

func placement(placementYAML string) string {
	return "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: web, namespace: shop}\nspec:\n  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}, {apiVersion: v1, kind: ConfigMap}]\n  placement:\n" + indent(placementYAML, "    ")
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n") + "\n"
}

func deployment(replicas int, uid string) string {
	return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop, uid: '" + uid + "'}\nspec: {replicas: " + itoa(replicas) + "}\n"
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name      string
		placement string
		obj       string
		want      map[string]int64
		group     string
		err       string
	}{
		{"no placement: every untainted cluster, duplicated", "{}", deployment(3, ""),
			map[string]int64{"aws-east-1": 3, "aws-east-2": 3, "gcp-west-1": 3, "soft-1": 3}, "", ""},
		{"PreferNoSchedule does not filter, NoSchedule does", "{}", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: shop}\n",
			map[string]int64{"aws-east-1": 0, "aws-east-2": 0, "gcp-west-1": 0, "soft-1": 0}, "", ""},
		{"toleration admits the tainted cluster", "clusterTolerations: [{key: edge, operator: Equal, value: 'true', effect: NoSchedule}]", deployment(1, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1, "gcp-west-1": 1, "edge-1": 1, "soft-1": 1}, "", ""},
		{"toleration with the wrong value does not", "clusterTolerations: [{key: edge, operator: Equal, value: 'false'}]", deployment(1, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1, "gcp-west-1": 1, "soft-1": 1}, "", ""},
		{"clusterNames", "clusterAffinity: {clusterNames: [gcp-west-1, aws-east-1, missing]}", deployment(2, ""),
			map[string]int64{"aws-east-1": 2, "gcp-west-1": 2}, "", ""},
		{"exclude wins over names", "clusterAffinity: {clusterNames: [gcp-west-1, aws-east-1], exclude: [aws-east-1]}", deployment(2, ""),
			map[string]int64{"gcp-west-1": 2}, "", ""},
		{"label selector AND field selector", "clusterAffinity:\n  labelSelector: {matchLabels: {env: prod}}\n  fieldSelector: {matchExpressions: [{key: provider, operator: In, values: [aws]}]}", deployment(1, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1}, "", ""},
		{"region NotIn", "clusterAffinity:\n  fieldSelector: {matchExpressions: [{key: region, operator: NotIn, values: [us-east]}]}", deployment(1, ""),
			map[string]int64{"gcp-west-1": 1, "soft-1": 1}, "", ""},
		{"zone In: one listed zone is enough (Karmada v1.18+)", "clusterAffinity:\n  fieldSelector: {matchExpressions: [{key: zone, operator: In, values: [us-east-1a, us-east-1b]}]}", deployment(1, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1}, "", ""},
		{"fallback group: the first that yields clusters", "clusterAffinities:\n  - {affinityName: onprem, clusterNames: [nowhere]}\n  - {affinityName: cloud, labelSelector: {matchLabels: {tier: big}}}", deployment(2, ""),
			map[string]int64{"aws-east-1": 2}, "cloud", ""},
		{"first group used when it yields", "clusterAffinities:\n  - {affinityName: a, clusterNames: [gcp-west-1]}\n  - {affinityName: b, clusterNames: [aws-east-1]}", deployment(2, ""),
			map[string]int64{"gcp-west-1": 2}, "a", ""},
		{"nothing matches", "clusterAffinity: {clusterNames: [nowhere]}", deployment(2, ""), nil, "",
			"Deployment shop/web: PropagationPolicy shop/web: spec.placement.clusterAffinity: no cluster of 5 matches the affinity and tolerates its taints"},
		{"static weights: 7 over 1:2:2", "clusterAffinity: {clusterNames: [aws-east-1, aws-east-2, gcp-west-1]}\nreplicaScheduling:\n  replicaSchedulingType: Divided\n  replicaDivisionPreference: Weighted\n  weightPreference:\n    staticWeightList:\n      - {targetCluster: {clusterNames: [aws-east-1]}, weight: 1}\n      - {targetCluster: {clusterNames: [aws-east-2, gcp-west-1]}, weight: 2}", deployment(7, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 3, "gcp-west-1": 3}, "", ""},
		{"static weights: max over matching rules, unmatched clusters dropped", "replicaScheduling:\n  replicaSchedulingType: Divided\n  weightPreference:\n    staticWeightList:\n      - {targetCluster: {labelSelector: {matchLabels: {env: prod}}}, weight: 1}\n      - {targetCluster: {clusterNames: [gcp-west-1]}, weight: 3}", deployment(5, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1, "gcp-west-1": 3}, "", ""},
		{"static weights ignore spread constraints", "spreadConstraints: [{spreadByField: cluster, maxGroups: 1}]\nreplicaScheduling:\n  replicaSchedulingType: Divided\n  weightPreference:\n    staticWeightList: [{targetCluster: {labelSelector: {matchLabels: {env: prod}}}, weight: 1}]", deployment(3, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1, "gcp-west-1": 1}, "", ""},
		{"static weights all zero: all weigh 1", "clusterAffinity: {clusterNames: [aws-east-1, gcp-west-1]}\nreplicaScheduling:\n  replicaSchedulingType: Divided\n  weightPreference:\n    staticWeightList: [{targetCluster: {clusterNames: [edge-1]}, weight: 4}]", deployment(4, ""),
			map[string]int64{"aws-east-1": 2, "gcp-west-1": 2}, "", ""},
		{"divided without weights: equal weights, zero-replica clusters dropped", "replicaScheduling: {replicaSchedulingType: Divided}", deployment(3, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1, "gcp-west-1": 1}, "", ""},
		{"divided with zero replicas: every cluster with 0", "replicaScheduling: {replicaSchedulingType: Divided}", deployment(0, ""),
			map[string]int64{"aws-east-1": 0, "aws-east-2": 0, "gcp-west-1": 0, "soft-1": 0}, "", ""},
		{"dynamic weights from available replicas", "clusterAffinity: {clusterNames: [aws-east-1, aws-east-2, gcp-west-1]}\nreplicaScheduling:\n  replicaSchedulingType: Divided\n  replicaDivisionPreference: Weighted\n  weightPreference: {dynamicWeight: AvailableReplicas}", deployment(10, ""),
			map[string]int64{"aws-east-1": 5, "aws-east-2": 2, "gcp-west-1": 3}, "", ""},
		{"aggregated: as few clusters as possible", "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}", deployment(12, ""),
			map[string]int64{"aws-east-1": 7, "gcp-west-1": 5}, "", ""}, // 10:6 ties at 7/4 and the tie goes to fewer seats
		{"aggregated fits in one", "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}", deployment(9, ""),
			map[string]int64{"aws-east-1": 9}, "", ""},
		{"not enough capacity", "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}", deployment(100, ""), nil, "",
			"spec.placement.replicaScheduling: the 4 selected clusters can take 21 of 100 replicas"},
		{"capacity failure falls back to the next group", "clusterAffinities:\n  - {affinityName: small, clusterNames: [soft-1]}\n  - {affinityName: big, clusterNames: [aws-east-1]}\nreplicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}", deployment(5, ""),
			map[string]int64{"aws-east-1": 5}, "big", ""},
		{"spread by cluster: the maxGroups biggest", "spreadConstraints: [{spreadByField: cluster, maxGroups: 2, minGroups: 1}]", deployment(2, ""),
			map[string]int64{"aws-east-1": 2, "gcp-west-1": 2}, "", ""},
		{"spread by cluster: too few", "clusterAffinity: {clusterNames: [aws-east-1]}\nspreadConstraints: [{spreadByField: cluster, minGroups: 2}]", deployment(2, ""), nil, "",
			"spec.placement.spreadConstraints: 1 feasible clusters, fewer than minGroups 2 by cluster"},
		{"spread by region: one per region first, then the biggest", "spreadConstraints:\n  - {spreadByField: region, maxGroups: 2, minGroups: 2}\n  - {spreadByField: cluster, maxGroups: 3, minGroups: 2}", deployment(1, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1, "gcp-west-1": 1}, "", ""},
		{"spread by region: one region is enough when clusters suffice", "spreadConstraints:\n  - {spreadByField: region, maxGroups: 3, minGroups: 1}\n  - {spreadByField: cluster, maxGroups: 2, minGroups: 2}", deployment(1, ""),
			map[string]int64{"aws-east-1": 1, "aws-east-2": 1}, "", ""},
		{"spread by region: too few regions", "clusterAffinity: {clusterNames: [aws-east-1, aws-east-2]}\nspreadConstraints:\n  - {spreadByField: region, minGroups: 2}\n  - {spreadByField: cluster, minGroups: 1}", deployment(1, ""), nil, "",
			"1 feasible region groups, fewer than minGroups 2"},
		{"explicit Duplicated", "replicaScheduling: {replicaSchedulingType: Duplicated}\nclusterAffinity: {clusterNames: [aws-east-1, soft-1]}", deployment(4, ""),
			map[string]int64{"aws-east-1": 4, "soft-1": 4}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, placement(tt.placement))
			p, err := e.Place(objects(t, tt.obj), fleet())
			op := p.Objects[0]
			if tt.err != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrUnschedulable)
				assert.ErrorContains(t, op.Err, tt.err)
				assert.Empty(t, op.Targets)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, targetsOf(op))
			assert.Equal(t, tt.group, op.AffinityGroup)
		})
	}
}

func TestPlaceUIDTieBreak(t *testing.T) {
	e := engine(t, placement("clusterAffinity: {clusterNames: [aws-east-1, gcp-west-1]}\nreplicaScheduling: {replicaSchedulingType: Divided}"))
	p, err := e.Place(objects(t, deployment(1, "")), fleet())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"aws-east-1": 1}, targetsOf(p.Objects[0]))
	p, err = e.Place(objects(t, deployment(1, oddUID(t))), fleet())
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"gcp-west-1": 1}, targetsOf(p.Objects[0]))
}

func TestPlaceOneFailureDoesNotStopOthers(t *testing.T) {
	e := engine(t, placement("replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}"))
	objs := objects(t, deployment(100, "")+"---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: api, namespace: shop}\nspec: {replicas: 2}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bound, namespace: shop, labels: {propagationpolicy.karmada.io/name: nope}}\n")
	p, err := e.Place(objs, fleet())
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnschedulable)
	assert.ErrorIs(t, err, ErrPolicyNotFound)
	assert.Equal(t, map[string]int64{"aws-east-1": 2}, targetsOf(p.Get(ObjectKey{"apps/v1", "Deployment", "shop", "api"})))
	assert.Error(t, p.Get(ObjectKey{"apps/v1", "Deployment", "shop", "web"}).Err)
	assert.Error(t, p.Get(ObjectKey{"apps/v1", "Deployment", "shop", "bound"}).Err)
}

func TestPlaceBadInput(t *testing.T) {
	e := engine(t, placement("{}"))
	_, err := e.Place(objects(t, deployment(1, "")), []Cluster{{Name: "a"}, {Name: "a"}})
	assert.ErrorContains(t, err, `cluster "a" is given twice`)
	_, err = e.Place(objects(t, deployment(1, "")+"---\n"+deployment(2, "")), fleet())
	assert.ErrorContains(t, err, "Deployment shop/web is given twice")
	_, err = e.Place(nil, []Cluster{{}})
	assert.ErrorContains(t, err, "a cluster has no name")
}

func TestReplicaField(t *testing.T) {
	tests := []struct {
		doc  string
		want int64
		ok   bool
	}{
		{"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: a}\n", 1, true},
		{"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: a}\nspec: {replicas: 4}\n", 4, true},
		{"apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\nspec: {parallelism: 3}\n", 3, true},
		{"apiVersion: v1\nkind: Service\nmetadata: {name: a}\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.doc, func(t *testing.T) {
			o := object(t, tt.doc)
			_, n, ok := replicaField(o, o.GetKind())
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, n)
		})
	}
}
