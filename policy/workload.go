package policy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// workloadGroup is one of Karmada's workload affinity groups: the
// workloads of one namespace whose label groupByLabelKey has one value
// ("key=value"), under affinity or anti-affinity.
type workloadGroup struct {
	namespace, group string
	anti             bool
}

// workloadGroups are the groups obj joins under pl.WorkloadAffinity, as
// Karmada's detector finds them: a term counts only when obj has the
// label.
func workloadGroups(pl *PlacementSpec, obj *unstructured.Unstructured) []workloadGroup {
	wa := pl.WorkloadAffinity
	if wa == nil {
		return nil
	}
	var out []workloadGroup
	labels := obj.GetLabels()
	for _, t := range []struct {
		term *WorkloadAffinityTerm
		anti bool
	}{{wa.Affinity, false}, {wa.AntiAffinity, true}} {
		if t.term == nil {
			continue
		}
		if v, ok := labels[t.term.GroupByLabelKey]; ok {
			out = append(out, workloadGroup{namespace: obj.GetNamespace(), group: t.term.GroupByLabelKey + "=" + v, anti: t.anti})
		}
	}
	return out
}

// workloadFilter keeps the clusters that the objects placed earlier in
// this evaluation leave to obj's workload groups, as Karmada's
// WorkloadAffinity and WorkloadAntiAffinity filters do: under affinity,
// only clusters that every earlier member of the group was placed on (the
// first member goes anywhere); under anti-affinity, none that an earlier
// member was placed on. active is false when no earlier member constrains
// obj, and then clusters is returned as it is.
func (r *run) workloadFilter(groups []workloadGroup, clusters []*Cluster) (out []*Cluster, why string, active bool) {
	for _, g := range groups {
		if len(r.workloads[g]) > 0 {
			active = true
		}
	}
	if !active {
		return clusters, "", false
	}
	for _, c := range clusters {
		if r.workloadAllows(groups, c.Name) {
			out = append(out, c)
		}
	}
	var names []string
	for _, g := range groups {
		if len(r.workloads[g]) > 0 {
			kind := "affinity group"
			if g.anti {
				kind = "anti-affinity group"
			}
			names = append(names, fmt.Sprintf("%s %s", kind, g.group))
		}
	}
	return out, strings.Join(names, " and "), true
}

func (r *run) workloadAllows(groups []workloadGroup, cluster string) bool {
	for _, g := range groups {
		for _, placed := range r.workloads[g] {
			if placed[cluster] == g.anti {
				return false
			}
		}
	}
	return true
}

// recordWorkload notes where an object of groups was placed.
func (r *run) recordWorkload(groups []workloadGroup, targets []Target) {
	if len(groups) == 0 {
		return
	}
	placed := make(map[string]bool, len(targets))
	for _, t := range targets {
		placed[t.Cluster] = true
	}
	if r.workloads == nil {
		r.workloads = map[workloadGroup][]map[string]bool{}
	}
	for _, g := range groups {
		r.workloads[g] = append(r.workloads[g], placed)
	}
}
