package policy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// replicaField returns where a workload keeps its replica count and the
// count, defaulted as the API server would (1). ok is false for objects that
// have no replicas; they go to every selected cluster whole.
func replicaField(obj *unstructured.Unstructured, kind string) (path []string, replicas int64, ok bool) {
	switch kind {
	case "Deployment", "StatefulSet", "ReplicaSet":
		path = []string{"spec", "replicas"}
	case "Job":
		path = []string{"spec", "parallelism"}
	default:
		return nil, 0, false
	}
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if !found || err != nil {
		return path, 1, true
	}
	switch t := v.(type) {
	case int64:
		return path, t, true
	case int:
		return path, int64(t), true
	case int32:
		return path, int64(t), true
	case float64:
		return path, int64(t), true
	}
	return path, 1, true
}

// run holds the per-call caches of one Place call.
type run struct {
	e        *Engine
	clusters []Cluster // sorted by name
	feasible map[groupKey][]*Cluster
	spread   map[groupKey]spreadResult
	divided  map[divideKey][]Target
	// workloads are, by workload affinity group, where each object of
	// the group placed so far went.
	workloads map[workloadGroup][]map[string]bool
}

type groupKey struct {
	policy *propPolicy
	group  int
	// overflow: the group's overflowAffinities apply (a workload with
	// replicas, as Karmada has it; other objects use the group alone).
	overflow bool
}

type spreadResult struct {
	clusters []*Cluster
	err      string
}

type divideKey struct {
	g         groupKey
	replicas  int64
	ascending bool
	whole     bool // every cluster gets the object whole (not divided)
}

// scheduleObject chooses target clusters for obj under p, trying the
// affinity groups in order; it returns the group used.
func (r *run) scheduleObject(p *propPolicy, obj *unstructured.Unstructured, key ObjectKey, hasReplicas bool, replicas int64) ([]Target, string, error) {
	var last error
	wgroups := workloadGroups(&p.spec.Placement, obj)
	for gi := range p.groups {
		g := &p.groups[gi]
		gk := groupKey{p, gi, hasReplicas && replicas > 0 && len(g.overflow) > 0}
		feasible := r.feasibleClusters(gk)
		if len(feasible) == 0 {
			last = &ScheduleError{Object: key, Policy: p.ref, Path: g.path, Reason: fmt.Sprintf("no cluster of %d matches the affinity and tolerates its taints", len(r.clusters))}
			continue
		}
		n := len(feasible)
		feasible, why, constrained := r.workloadFilter(wgroups, feasible)
		if len(feasible) == 0 {
			last = &ScheduleError{Object: key, Policy: p.ref, Path: "spec.placement.workloadAffinity",
				Reason: fmt.Sprintf("the workloads of %s placed before it leave none of the %d clusters that match the affinity", why, n)}
			continue
		}
		var sr spreadResult
		if constrained { // the clusters depend on the object: nothing to share
			sr = computeSpread(&p.spec.Placement, feasible)
		} else {
			sr = r.spreadClusters(gk, feasible)
		}
		if sr.err != "" {
			last = &ScheduleError{Object: key, Policy: p.ref, Path: "spec.placement.spreadConstraints", Reason: sr.err}
			continue
		}
		targets, err := r.assign(gk, obj, key, sr.clusters, hasReplicas, replicas, !constrained)
		if err != nil {
			last = err
			continue
		}
		r.recordWorkload(wgroups, targets)
		return targets, g.name, nil
	}
	return nil, "", last
}

// feasibleClusters filters by taints, affinity and the fields spread
// constraints group by, like Karmada's filter plugins.
func (r *run) feasibleClusters(gk groupKey) []*Cluster {
	if f, ok := r.feasible[gk]; ok {
		return f
	}
	p := gk.policy
	pl := &p.spec.Placement
	aff := p.groups[gk.group].affinity
	var out []*Cluster
	for i := range r.clusters {
		c := &r.clusters[i]
		if ok, _ := tolerated(pl.ClusterTolerations, c); !ok {
			continue
		}
		if !aff.matches(c) && (!gk.overflow || p.groups[gk.group].tier(c) < 0) {
			continue
		}
		if !ignoreSpread(pl) && !hasSpreadFields(pl.SpreadConstraints, c) {
			continue
		}
		out = append(out, c)
	}
	r.feasible[gk] = out
	return out
}

func hasSpreadFields(cs []SpreadConstraint, c *Cluster) bool {
	for i := range cs {
		if groupValue(&cs[i], c) == "" {
			return false
		}
	}
	return true
}

// groupValue is the group a cluster belongs to under a constraint; "" when the
// cluster lacks the field.
func groupValue(sc *SpreadConstraint, c *Cluster) string {
	if sc.SpreadByLabel != "" {
		return c.Labels[sc.SpreadByLabel]
	}
	switch sc.SpreadByField {
	case SpreadByFieldRegion:
		return c.Region
	case SpreadByFieldProvider:
		return c.Provider
	case SpreadByFieldZone:
		if len(c.Zones) == 0 {
			return ""
		}
		return slices.Min(c.Zones)
	}
	return c.Name
}

// ignoreSpread: Karmada ignores spread constraints under static weights.
func ignoreSpread(pl *PlacementSpec) bool {
	rs := pl.ReplicaScheduling
	return len(pl.SpreadConstraints) == 0 || (rs != nil && divided(rs) && rs.ReplicaDivisionPreference != ReplicaDivisionPreferenceAggregated &&
		rs.WeightPreference != nil && len(rs.WeightPreference.StaticWeightList) > 0 && rs.WeightPreference.DynamicWeight == "")
}

func divided(rs *ReplicaSchedulingStrategy) bool {
	return rs.ReplicaSchedulingType == ReplicaSchedulingTypeDivided || rs.ReplicaSchedulingType == ""
}

// byCapacity orders clusters as Karmada does when scores tie: more available
// replicas first, then by name.
func byCapacity(a, b *Cluster) int {
	return cmp.Or(cmp.Compare(b.AvailableReplicas, a.AvailableReplicas), strings.Compare(a.Name, b.Name))
}

// spreadClusters applies spread constraints: with only a cluster constraint,
// the best maxGroups clusters; with a group constraint (region, zone,
// provider or label), the fewest best groups that hold minGroups clusters,
// the best cluster of each, then the best remaining clusters up to the
// cluster maxGroups.
func (r *run) spreadClusters(gk groupKey, feasible []*Cluster) spreadResult {
	if s, ok := r.spread[gk]; ok {
		return s
	}
	s := computeSpread(&gk.policy.spec.Placement, feasible)
	r.spread[gk] = s
	return s
}

func computeSpread(pl *PlacementSpec, feasible []*Cluster) spreadResult {
	if ignoreSpread(pl) {
		return spreadResult{clusters: feasible}
	}
	var byCluster SpreadConstraint
	var group *SpreadConstraint
	for i := range pl.SpreadConstraints {
		sc := &pl.SpreadConstraints[i]
		if spreadKey(sc) == SpreadByFieldCluster {
			byCluster = *sc
		} else {
			group = sc
		}
	}
	sorted := slices.Clone(feasible)
	slices.SortFunc(sorted, byCapacity)
	limit := func(n, maxGroups int) int {
		if maxGroups > 0 && n > maxGroups {
			return maxGroups
		}
		return n
	}
	if len(sorted) < byCluster.MinGroups {
		return spreadResult{err: fmt.Sprintf("%d feasible clusters, fewer than minGroups %d by cluster", len(sorted), byCluster.MinGroups)}
	}
	var chosen []*Cluster
	if group == nil {
		chosen = sorted[:limit(len(sorted), byCluster.MaxGroups)]
	} else {
		type grp struct {
			name     string
			avail    int64
			clusters []*Cluster
		}
		idx := map[string]*grp{}
		var groups []*grp
		for _, c := range sorted {
			v := groupValue(group, c)
			g := idx[v]
			if g == nil {
				g = &grp{name: v}
				idx[v] = g
				groups = append(groups, g)
			}
			g.clusters = append(g.clusters, c)
			g.avail += max(c.AvailableReplicas, 0)
		}
		slices.SortFunc(groups, func(a, b *grp) int {
			return cmp.Or(cmp.Compare(b.avail, a.avail), strings.Compare(a.name, b.name))
		})
		what := string(spreadKey(group))
		if len(groups) < group.MinGroups {
			return spreadResult{err: fmt.Sprintf("%d feasible %s groups, fewer than minGroups %d", len(groups), what, group.MinGroups)}
		}
		var picked []*grp
		for n := max(group.MinGroups, 1); n <= limit(len(groups), group.MaxGroups); n++ {
			total := 0
			for _, g := range groups[:n] {
				total += len(g.clusters)
			}
			if total >= byCluster.MinGroups {
				picked = groups[:n]
				break
			}
		}
		if picked == nil {
			return spreadResult{err: fmt.Sprintf("no choice of at most %d %s groups holds minGroups %d clusters", limit(len(groups), group.MaxGroups), what, byCluster.MinGroups)}
		}
		var rest []*Cluster
		for _, g := range picked {
			chosen = append(chosen, g.clusters[0])
			rest = append(rest, g.clusters[1:]...)
		}
		slices.SortFunc(rest, byCapacity)
		need := limit(len(chosen)+len(rest), byCluster.MaxGroups) - len(chosen)
		if need > 0 {
			chosen = append(chosen, rest[:need]...)
		}
	}
	out := slices.Clone(chosen)
	slices.SortFunc(out, func(a, b *Cluster) int { return strings.Compare(a.Name, b.Name) })
	return spreadResult{clusters: out}
}

// assign hands replicas to the selected clusters.
// Results are shared across objects by gk when share is true.
func (r *run) assign(gk groupKey, obj *unstructured.Unstructured, key ObjectKey, selected []*Cluster, hasReplicas bool, replicas int64, share bool) ([]Target, error) {
	p := gk.policy
	rs := p.spec.Placement.ReplicaScheduling
	if !hasReplicas || replicas == 0 || rs == nil || !divided(rs) {
		if !hasReplicas {
			replicas = 0
		}
		dk := divideKey{g: gk, replicas: replicas, whole: true}
		if t, ok := r.divided[dk]; ok && share {
			return t, nil
		}
		out := make([]Target, len(selected))
		for i, c := range selected {
			out[i] = Target{Cluster: c.Name, Replicas: replicas}
		}
		if share {
			r.divided[dk] = out
		}
		return out, nil
	}
	dk := divideKey{g: gk, replicas: replicas, ascending: ascendingTieBreak(string(obj.GetUID()))}
	if t, ok := r.divided[dk]; ok && share {
		return t, nil
	}
	div := divideFor
	if gk.overflow {
		div = p.groups[gk.group].divideOverflow
	}
	t, err := div(gk.policy, key, selected, rs, replicas, dk.ascending)
	if err != nil {
		return nil, err
	}
	if share {
		r.divided[dk] = t
	}
	return t, nil
}

func divideFor(p *propPolicy, key ObjectKey, selected []*Cluster, rs *ReplicaSchedulingStrategy, replicas int64, ascending bool) ([]Target, error) {
	weights := make([]Weight, 0, len(selected))
	dynamic := rs.ReplicaDivisionPreference == ReplicaDivisionPreferenceAggregated ||
		(rs.WeightPreference != nil && rs.WeightPreference.DynamicWeight != "")
	if !dynamic {
		for _, c := range selected {
			var w int64
			if rs.WeightPreference == nil {
				w = 1
			}
			for _, cw := range p.weights {
				if cw.weight > w && cw.affinity.matches(c) {
					w = cw.weight
				}
			}
			weights = append(weights, Weight{Cluster: c.Name, Weight: w})
		}
		return divide(replicas, weights, ascending), nil
	}
	var total int64
	for _, c := range selected {
		total += max(c.AvailableReplicas, 0)
	}
	if total < replicas {
		return nil, &ScheduleError{Object: key, Policy: p.ref, Path: "spec.placement.replicaScheduling",
			Reason: fmt.Sprintf("the %d selected clusters can take %d of %d replicas", len(selected), total, replicas)}
	}
	pool := selected
	if rs.ReplicaDivisionPreference == ReplicaDivisionPreferenceAggregated {
		// As few clusters as possible: the largest first, until they suffice.
		pool = slices.Clone(selected)
		slices.SortFunc(pool, byCapacity)
		var sum int64
		for i, c := range pool {
			sum += max(c.AvailableReplicas, 0)
			if sum >= replicas {
				pool = pool[:i+1]
				break
			}
		}
	}
	for _, c := range pool {
		weights = append(weights, Weight{Cluster: c.Name, Weight: max(c.AvailableReplicas, 0)})
	}
	return divide(replicas, weights, ascending), nil
}

// tier returns 0 when the group's own affinity selects c, i+1 when the
// first overflow affinity that does is the i-th, and -1 when none does.
func (g *affinityGroup) tier(c *Cluster) int {
	if g.affinity.matches(c) {
		return 0
	}
	for i, a := range g.overflow {
		if a.matches(c) {
			return i + 1
		}
	}
	return -1
}

// divideOverflow divides replicas as Karmada does for a group with
// overflowAffinities: the group's own clusters take as many as they have
// available replicas for, divided among them by rs; then each overflow
// group in order takes as many of the rest as its clusters can, until
// none are left. Replicas that no tier can take are a *ScheduleError.
func (g *affinityGroup) divideOverflow(p *propPolicy, key ObjectKey, selected []*Cluster, rs *ReplicaSchedulingStrategy, replicas int64, ascending bool) ([]Target, error) {
	tiers := make([][]*Cluster, len(g.overflow)+1)
	for _, c := range selected {
		if t := g.tier(c); t >= 0 {
			tiers[t] = append(tiers[t], c)
		}
	}
	var out []Target
	remaining := replicas
	for _, tier := range tiers {
		var avail int64
		for _, c := range tier {
			avail += max(c.AvailableReplicas, 0)
		}
		n := min(remaining, avail)
		if n == 0 {
			continue
		}
		t, err := divideFor(p, key, tier, rs, n, ascending)
		if err != nil {
			return nil, err
		}
		out = append(out, t...)
		remaining -= n
	}
	if remaining > 0 {
		return nil, &ScheduleError{Object: key, Policy: p.ref, Path: g.path + ".overflowAffinities",
			Reason: fmt.Sprintf("the clusters of group %q and of its overflow groups can take %d of %d replicas", g.name, replicas-remaining, replicas)}
	}
	slices.SortFunc(out, func(a, b Target) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out, nil
}

// compileOverflow compiles a group's overflowAffinities, in order.
func compileOverflow(os []OverflowClusterAffinity) []*compiledAffinity {
	var out []*compiledAffinity
	for i := range os {
		out = append(out, compileAffinity(&os[i].ClusterAffinity))
	}
	return out
}
