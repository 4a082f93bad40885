package policy

import (
	"fmt"
	"hash/fnv"
	"math/bits"
	"slices"
	"strings"
)

// Weight is a cluster's weight for Divide.
type Weight struct {
	// Cluster name.
	Cluster string
	// Weight is not negative; 0 means the cluster gets nothing.
	Weight int64
}

// Target is a cluster an object goes to, with its share of the replicas.
type Target struct {
	// Cluster name.
	Cluster string
	// Replicas for this cluster; 0 for an object without replicas.
	Replicas int64
}

// Divide hands out replicas by the Webster (Sainte-Laguë) method, one at a
// time, to the cluster with the highest weight/(2*seats+1). Ties go to the
// cluster with fewer seats, then by name: ascending when the FNV-32a hash of
// uid is even or uid is empty, descending otherwise (Karmada's tie-break, so
// that equal objects do not all pile onto the same cluster).
//
// Clusters with weight 0 get nothing; if every weight is 0 all weigh 1. The
// result is sorted by cluster name and omits clusters with no replicas. Growing
// replicas never lowers any cluster's share (divisor methods are house
// monotone). Cost is O(replicas · log clusters).
func Divide(replicas int64, weights []Weight, uid string) ([]Target, error) {
	if replicas < 0 {
		return nil, fmt.Errorf("policy: Divide: negative replicas %d", replicas)
	}
	seen := make(map[string]bool, len(weights))
	for _, w := range weights {
		if w.Weight < 0 {
			return nil, fmt.Errorf("policy: Divide: cluster %q has negative weight %d", w.Cluster, w.Weight)
		}
		if seen[w.Cluster] {
			return nil, fmt.Errorf("policy: Divide: cluster %q is listed twice", w.Cluster)
		}
		seen[w.Cluster] = true
	}
	return divide(replicas, weights, ascendingTieBreak(uid)), nil
}

// ascendingTieBreak reports whether ties between equal clusters go to the
// smaller name.
func ascendingTieBreak(uid string) bool {
	if uid == "" {
		return true
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return h.Sum32()%2 == 0
}

type seat struct {
	name   string
	weight uint64
	seats  uint64
}

// before reports whether a gets the next replica before b: the higher
// weight/(2*seats+1), compared exactly in 128 bits; then fewer seats; then the
// name in tie-break order.
func before(a, b *seat, ascending bool) bool {
	ah, al := bits.Mul64(a.weight, 2*b.seats+1)
	bh, bl := bits.Mul64(b.weight, 2*a.seats+1)
	if ah != bh {
		return ah > bh
	}
	if al != bl {
		return al > bl
	}
	if a.seats != b.seats {
		return a.seats < b.seats
	}
	if ascending {
		return a.name < b.name
	}
	return a.name > b.name
}

// siftDown restores the heap order of h below index i.
func siftDown(h []*seat, i int, ascending bool) {
	n := len(h)
	for {
		best := i
		if l := 2*i + 1; l < n && before(h[l], h[best], ascending) {
			best = l
		}
		if r := 2*i + 2; r < n && before(h[r], h[best], ascending) {
			best = r
		}
		if best == i {
			return
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
}

// divide assumes validated, non-negative weights with unique names.
func divide(replicas int64, weights []Weight, ascending bool) []Target {
	all := make([]seat, 0, len(weights))
	var sum int64
	for _, w := range weights {
		sum += w.Weight
	}
	for _, w := range weights {
		wt := uint64(w.Weight)
		if sum == 0 {
			wt = 1
		}
		if wt > 0 {
			all = append(all, seat{name: w.Cluster, weight: wt})
		}
	}
	if len(all) == 0 || replicas == 0 {
		return nil
	}
	h := make([]*seat, len(all))
	for i := range all {
		h[i] = &all[i]
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, ascending)
	}
	for range replicas {
		h[0].seats++
		siftDown(h, 0, ascending)
	}
	out := make([]Target, 0, len(all))
	for i := range all {
		if all[i].seats > 0 {
			out = append(out, Target{Cluster: all[i].name, Replicas: int64(all[i].seats)})
		}
	}
	slices.SortFunc(out, func(a, b Target) int { return strings.Compare(a.Cluster, b.Cluster) })
	return out
}
