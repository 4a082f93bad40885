package release

import (
	"fmt"
	"sort"

	"github.com/helmfleet/helmfleet/policy"
)

// Member is one member cluster of a fleet: its backend and the placement
// facts policies decide on (labels, provider, region, zones, taints,
// available replicas), as plain data the caller supplies.
type Member struct {
	// Cluster is the backend.
	Cluster Cluster
	// Facts are the placement facts; Facts.Name is taken from
	// Cluster.Name() when empty and must equal it otherwise.
	Facts policy.Cluster
}

// SortMembers validates members (each has a cluster; names are unique
// and agree with their facts) and returns a sorted copy, by name, with
// Facts.Name filled in: what a layer over several members (a fleet, a
// distributor) starts from. The error names the index of the bad member.
func SortMembers(members []Member) ([]Member, error) {
	out := make([]Member, len(members))
	seen := map[string]bool{}
	for i, m := range members {
		if m.Cluster == nil {
			return nil, fmt.Errorf("members[%d]: cluster is nil", i)
		}
		name := m.Cluster.Name()
		if m.Facts.Name == "" {
			m.Facts.Name = name
		}
		if m.Facts.Name != name {
			return nil, fmt.Errorf("members[%d]: facts name %q differs from cluster name %q", i, m.Facts.Name, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("members[%d]: duplicate cluster name %q", i, name)
		}
		seen[name] = true
		out[i] = m
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Facts.Name < out[j].Facts.Name })
	return out, nil
}

// FactsOf returns the placement facts of members, in their order, for
// package policy.
func FactsOf(members []Member) []policy.Cluster {
	out := make([]policy.Cluster, len(members))
	for i, m := range members {
		out[i] = m.Facts
	}
	return out
}
