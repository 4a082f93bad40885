package policy

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func oddUID(t testing.TB) string {
	for i := 0; ; i++ {
		uid := fmt.Sprintf("uid-%d", i)
		h := fnv.New32a()
		_, _ = h.Write([]byte(uid))
		if h.Sum32()%2 == 1 {
			return uid
		}
	}
}

func TestDivide(t *testing.T) {
	w := func(pairs ...any) []Weight {
		var out []Weight
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, Weight{Cluster: pairs[i].(string), Weight: int64(pairs[i+1].(int))})
		}
		return out
	}
	tests := []struct {
		name     string
		replicas int64
		weights  []Weight
		uid      string
		want     []Target
	}{
		{"7 over 1:2:2 (Karmada doc)", 7, w("A", 1, "B", 2, "C", 2), "", []Target{{"A", 1}, {"B", 3}, {"C", 3}}},
		{"5 over 170/110/60 (Webster, not floor+remainder 3/2/0)", 5, w("A", 170, "B", 110, "C", 60), "", []Target{{"A", 2}, {"B", 2}, {"C", 1}}},
		{"tie goes to the smaller name with empty uid", 1, w("A", 1, "B", 1), "", []Target{{"A", 1}}},
		{"tie goes to the larger name with odd uid hash", 1, w("A", 1, "B", 1), oddUID(t), []Target{{"B", 1}}},
		{"weight 0 drops the cluster", 4, w("A", 0, "B", 1, "C", 1), "", []Target{{"B", 2}, {"C", 2}}},
		{"all weights 0 means all weigh 1", 3, w("A", 0, "B", 0, "C", 0), "", []Target{{"A", 1}, {"B", 1}, {"C", 1}}},
		{"zero-replica clusters are removed", 2, w("A", 1, "B", 1, "C", 1), "", []Target{{"A", 1}, {"B", 1}}},
		{"zero replicas gives nothing", 0, w("A", 1), "", nil},
		{"no clusters gives nothing", 5, nil, "", nil},
		{"output sorted by name whatever the input order", 3, w("c", 1, "a", 1, "b", 1), "", []Target{{"a", 1}, {"b", 1}, {"c", 1}}},
		{"huge weights compare exactly", 3, w("A", 1<<62, "B", 1<<62-1), "", []Target{{"A", 2}, {"B", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Divide(tt.replicas, tt.weights, tt.uid)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDivideErrors(t *testing.T) {
	_, err := Divide(-1, nil, "")
	assert.ErrorContains(t, err, "negative replicas -1")
	_, err = Divide(1, []Weight{{"A", -2}}, "")
	assert.ErrorContains(t, err, `cluster "A" has negative weight -2`)
	_, err = Divide(1, []Weight{{"A", 1}, {"A", 1}}, "")
	assert.ErrorContains(t, err, `cluster "A" is listed twice`)
}

// Growing the total never takes a replica away from a cluster.
func TestDivideMonotone(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(8)
		ws := make([]Weight, n)
		for i := range ws {
			ws[i] = Weight{Cluster: fmt.Sprintf("c%d", i), Weight: rng.Int64N(300)}
		}
		uid := fmt.Sprintf("u%d", trial)
		prev := map[string]int64{}
		for r := int64(0); r <= 40; r++ {
			got, err := Divide(r, ws, uid)
			require.NoError(t, err)
			cur := map[string]int64{}
			var sum int64
			for _, tg := range got {
				cur[tg.Cluster] = tg.Replicas
				sum += tg.Replicas
			}
			require.Equal(t, r, sum, "trial %d replicas %d", trial, r)
			for c, v := range prev {
				require.GreaterOrEqual(t, cur[c], v, "trial %d: cluster %s lost a replica going to %d", trial, c, r)
			}
			prev = cur
		}
	}
}

// linearDivide is the textbook Webster loop that scans every cluster for
// every replica: the baseline for BenchmarkDivide and a cross-check.
func linearDivide(replicas int64, ws []Weight, ascending bool) map[string]int64 {
	seats := make([]int64, len(ws))
	for range replicas {
		best := -1
		for i, w := range ws {
			if w.Weight == 0 {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			b := ws[best]
			l, r := w.Weight*(2*seats[best]+1), b.Weight*(2*seats[i]+1)
			switch {
			case l > r:
				best = i
			case l == r && seats[i] < seats[best]:
				best = i
			case l == r && seats[i] == seats[best] && (ascending == (w.Cluster < b.Cluster)):
				best = i
			}
		}
		seats[best]++
	}
	out := map[string]int64{}
	for i, w := range ws {
		if seats[i] > 0 {
			out[w.Cluster] = seats[i]
		}
	}
	return out
}

func TestDivideMatchesLinear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 300 {
		n := 1 + rng.IntN(12)
		ws := make([]Weight, n)
		for i := range ws {
			ws[i] = Weight{Cluster: fmt.Sprintf("c%02d", rng.IntN(1000)*100+i), Weight: 1 + rng.Int64N(5)}
		}
		r := rng.Int64N(60)
		asc := trial%2 == 0
		got := divide(r, ws, asc)
		m := map[string]int64{}
		for _, tg := range got {
			m[tg.Cluster] = tg.Replicas
		}
		want := linearDivide(r, ws, asc)
		if r == 0 {
			want = map[string]int64{}
		}
		require.Equal(t, want, m, "trial %d", trial)
	}
}

func BenchmarkDivide(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		ws := make([]Weight, n)
		for i := range ws {
			ws[i] = Weight{Cluster: fmt.Sprintf("cluster-%04d", i), Weight: int64(1 + i%7)}
		}
		replicas := int64(10 * n)
		b.Run(fmt.Sprintf("clusters=%d/helmfleet", n), func(b *testing.B) {
			for b.Loop() {
				_, _ = Divide(replicas, ws, "")
			}
		})
		b.Run(fmt.Sprintf("clusters=%d/linear", n), func(b *testing.B) {
			for b.Loop() {
				linearDivide(replicas, ws, true)
			}
		})
	}
}
