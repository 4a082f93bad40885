package policy

import (
	"container/heap"
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

type seatHeap struct {
	items     []*seat
	ascending bool
}

func (h *seatHeap) Len() int { return len(h.items) }
func (h *seatHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	// Compare a.w/(2a.s+1) with b.w/(2b.s+1) exactly in 128 bits.
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
	if h.ascending {
		return a.name < b.name
	}
	return a.name > b.name
}
func (h *seatHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *seatHeap) Push(x any)    { h.items = append(h.items, x.(*seat)) }
func (h *seatHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
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
	h := &seatHeap{items: make([]*seat, len(all)), ascending: ascending}
	for i := range all {
		h.items[i] = &all[i]
	}
	heap.Init(h)
	for range replicas {
		h.items[0].seats++
		heap.Fix(h, 0)
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
