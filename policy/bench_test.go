package policy

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// workload generates a fleet-sized input: objects of mixed kinds over 50
// namespaces, policies of every selector style, and clusters in 5 regions.
type workload struct {
	objs     []*unstructured.Unstructured
	set      Set
	clusters []Cluster
}

var benchKinds = []struct{ apiVersion, kind string }{
	{"apps/v1", "Deployment"}, {"apps/v1", "StatefulSet"}, {"batch/v1", "Job"}, {"v1", "Service"},
	{"v1", "ConfigMap"}, {"v1", "Secret"}, {"v1", "ServiceAccount"}, {"networking.k8s.io/v1", "Ingress"},
}

func generate(nObjects, nPolicies, nClusters int) workload {
	rng := rand.New(rand.NewPCG(42, 7))
	var w workload
	const namespaces = 50
	ns := func(i int) string { return fmt.Sprintf("ns-%02d", i%namespaces) }
	// The number of apps grows with the objects (50 objects per app, 8
	// kinds), so doubling the objects doubles the apps rather than the
	// Services each workload matches.
	apps := max(1, nObjects/50)
	for i := range nObjects {
		k := benchKinds[i%len(benchKinds)]
		app := fmt.Sprintf("app-%d", (i/len(benchKinds))%apps)
		name := fmt.Sprintf("%s-%d", app, i/(len(benchKinds)*apps))
		o := map[string]any{
			"apiVersion": k.apiVersion, "kind": k.kind,
			"metadata": map[string]any{"name": name, "namespace": ns(i / len(benchKinds)),
				"labels": map[string]any{"app": app, "tier": []string{"fe", "be", "db"}[i%3], "team": fmt.Sprintf("team-%d", i%20)}},
		}
		switch k.kind {
		case "Deployment", "StatefulSet", "Job":
			o["spec"] = map[string]any{"replicas": int64(1 + i%9), "template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": app}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "main", "image": "nginx:1",
					"envFrom": []any{map[string]any{"configMapRef": map[string]any{"name": name}}}}}}}}
		case "Service":
			o["spec"] = map[string]any{"selector": map[string]any{"app": app}}
		}
		w.objs = append(w.objs, &unstructured.Unstructured{Object: o})
	}
	regions := []string{"us-east", "us-west", "eu", "ap", "cn"}
	for i := range nClusters {
		c := Cluster{Name: fmt.Sprintf("c-%03d", i), Region: regions[i%5], Provider: []string{"aws", "gcp"}[i%2],
			Labels: map[string]string{"env": []string{"prod", "stage"}[i%2], "tier": fmt.Sprintf("t%d", i%4)}, AvailableReplicas: int64(10 + i%90)}
		if i%10 == 9 {
			c.Taints = []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}}
		}
		w.clusters = append(w.clusters, c)
	}
	selector := func() ResourceSelector {
		k := benchKinds[rng.IntN(len(benchKinds))]
		s := ResourceSelector{APIVersion: k.apiVersion, Kind: k.kind}
		switch rng.IntN(3) {
		case 0:
			s.Name = fmt.Sprintf("app-%d-0", rng.IntN(200))
		case 1:
			s.LabelSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("app-%d", rng.IntN(200))}}
			if rng.IntN(2) == 0 {
				s.LabelSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"fe", "be"}}}
			}
		}
		return s
	}
	placement := func() PlacementSpec {
		var pl PlacementSpec
		switch rng.IntN(4) {
		case 0:
			pl.ClusterAffinity = &ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
		case 1:
			pl.ClusterAffinity = &ClusterAffinity{FieldSelector: &FieldSelector{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: FieldRegion, Operator: corev1.NodeSelectorOpIn, Values: []string{regions[rng.IntN(5)]}}}}}
			pl.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, WeightPreference: &ClusterPreferences{StaticWeightList: []StaticClusterWeight{
				{TargetCluster: ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "t0"}}}, Weight: 2},
				{TargetCluster: ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, Weight: 1}}}}
		case 2:
			pl.ClusterTolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
			pl.ReplicaScheduling = &ReplicaSchedulingStrategy{ReplicaSchedulingType: ReplicaSchedulingTypeDivided, WeightPreference: &ClusterPreferences{DynamicWeight: DynamicWeightByAvailableReplicas}}
		default:
			pl.SpreadConstraints = []SpreadConstraint{{SpreadByField: SpreadByFieldRegion, MinGroups: 2, MaxGroups: 3}, {SpreadByField: SpreadByFieldCluster, MinGroups: 3, MaxGroups: 6}}
		}
		return pl
	}
	spec := func() PropagationSpec {
		s := PropagationSpec{Placement: placement(), PropagateDeps: rng.IntN(2) == 0}
		for range 1 + rng.IntN(3) {
			s.ResourceSelectors = append(s.ResourceSelectors, selector())
		}
		if rng.IntN(3) == 0 {
			pr := int32(rng.IntN(4))
			s.Priority = &pr
		}
		return s
	}
	nOverride := nPolicies / 10
	nCluster := nPolicies / 4
	for i := range nPolicies - nOverride - nCluster {
		w.set.Propagation = append(w.set.Propagation, PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pp-%d", i), Namespace: ns(rng.IntN(namespaces))}, Spec: spec()})
	}
	for i := range nCluster {
		s := spec()
		if i%3 == 0 {
			s.ResourceSelectors[0].Namespace = ns(rng.IntN(namespaces))
		}
		w.set.ClusterPropagation = append(w.set.ClusterPropagation, ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cpp-%d", i)}, Spec: s})
	}
	rules := []RuleWithCluster{{TargetCluster: &ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		Overriders: Overriders{LabelsOverrider: []LabelAnnotationOverrider{{Operator: OverriderOpAdd, Value: map[string]string{"fleet": "prod"}}}}}}
	for i := range nOverride {
		sel := []ResourceSelector{selector()}
		if i%2 == 0 {
			w.set.Override = append(w.set.Override, OverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("op-%d", i), Namespace: ns(rng.IntN(namespaces))}, Spec: OverrideSpec{ResourceSelectors: sel, OverrideRules: rules}})
		} else {
			w.set.ClusterOverride = append(w.set.ClusterOverride, ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cop-%d", i)}, Spec: OverrideSpec{ResourceSelectors: sel, OverrideRules: rules}})
		}
	}
	return w
}

// naiveEvaluator is Karmada's detector: every object is checked against every
// policy, label selectors are converted on every check, and nothing computed
// for one object is reused for the next.
func naiveEvaluator(e *Engine) evaluator {
	level := func(obj *unstructured.Unstructured, rs *ResourceSelector, namespace string) MatchLevel {
		ns := rs.Namespace
		if namespace != "" {
			ns = namespace
		}
		if obj.GetAPIVersion() != rs.APIVersion || obj.GetKind() != rs.Kind || (ns != "" && obj.GetNamespace() != ns) {
			return MatchNone
		}
		if rs.Name != "" {
			if rs.Name == obj.GetName() {
				return MatchName
			}
			return MatchNone
		}
		if rs.LabelSelector == nil {
			return MatchAll
		}
		s, err := metav1.LabelSelectorAsSelector(rs.LabelSelector)
		if err != nil || !s.Matches(labels.Set(obj.GetLabels())) {
			return MatchNone
		}
		return MatchLabels
	}
	prop := func(obj *unstructured.Unstructured, _ ObjectKey, _ *scratch) ([]scored, error) {
		var out []scored
		bound, err := e.boundPropagation(obj, obj.GetNamespace(), objectLabels(obj))
		if err != nil {
			return nil, err
		}
		for _, p := range e.props {
			best := MatchNone
			for i := range p.spec.ResourceSelectors {
				best = max(best, level(obj, &p.spec.ResourceSelectors[i], p.ref.Namespace))
			}
			if p == bound {
				best = MatchBinding
			}
			if best != MatchNone {
				out = append(out, scored{p, best})
			}
		}
		return out, nil
	}
	return evaluator{prop: prop, ov: func(obj *unstructured.Unstructured) ([]ovMatch, error) {
		// Overrides are matched the same way in both, so the benchmark
		// compares propagation evaluation and scheduling reuse only.
		return e.matchOverrides(obj)
	}}
}

type placementView struct {
	Object   ObjectKey
	Policy   string
	Level    MatchLevel
	Targets  []Target
	Follows  []ObjectKey
	Err      string
	Override []string
}

func view(p *Placement) []placementView {
	out := make([]placementView, len(p.Objects))
	for i, op := range p.Objects {
		v := placementView{Object: op.Object, Targets: op.Targets, Follows: op.Follows}
		if op.Selection != nil {
			v.Policy, v.Level = op.Selection.Policy.String()+" "+op.Selection.Reason, op.Selection.Level
		}
		if op.Err != nil {
			v.Err = op.Err.Error()
		}
		for _, m := range op.overrides {
			v.Override = append(v.Override, m.p.ref.String())
		}
		out[i] = v
	}
	return out
}

// The index and the caches change nothing: the naive evaluation gives the
// same placement, object by object.
func TestIndexedEqualsNaive(t *testing.T) {
	w := generate(3000, 400, 30)
	e, err := NewEngine(w.set)
	require.NoError(t, err)
	fast, ferr := e.Place(w.objs, w.clusters)
	slow, serr := e.place(w.objs, w.clusters, naiveEvaluator(e))
	assert.Equal(t, fmt.Sprint(serr), fmt.Sprint(ferr))
	assert.Equal(t, view(slow), view(fast))
	assert.Equal(t, slow.Warnings, fast.Warnings)
	placed, followers := 0, 0
	for _, op := range fast.Objects {
		if len(op.Targets) > 0 {
			placed++
		}
		if len(op.Follows) > 0 {
			followers++
		}
	}
	assert.Greater(t, placed, 300, "the generated input places a good share of objects")
	assert.Greater(t, followers, 10, "and some follow their workloads")
}

func BenchmarkEvaluate(b *testing.B) {
	for _, n := range []int{10_000, 20_000} {
		w := generate(n, 1000, 100)
		e, err := NewEngine(w.set)
		require.NoError(b, err)
		b.Run(fmt.Sprintf("objects=%d/helmfleet", n), func(b *testing.B) {
			runtime.GC() // generate's garbage is not this loop's
			start := cpuTime()
			for b.Loop() {
				_, _ = e.Place(w.objs, w.clusters)
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
		b.Run(fmt.Sprintf("objects=%d/naive", n), func(b *testing.B) {
			ev := naiveEvaluator(e)
			runtime.GC()
			start := cpuTime()
			for b.Loop() {
				_, _ = e.place(w.objs, w.clusters, ev)
			}
			b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}
