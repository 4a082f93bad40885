package depgraph

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzGraph builds graphs from bytes, unknown and self dependencies and cycles
// included, and checks the invariants of Validate, Waves, Reverse and Run.
func FuzzGraph(f *testing.F) {
	f.Add([]byte{4, 1, 0, 2, 1, 3, 2})
	f.Add([]byte{3, 0, 1, 1, 2, 2, 0})
	f.Add([]byte{5, 0, 0, 1, 7, 2, 1, 2, 1})
	f.Add([]byte{8, 7, 6, 6, 5, 5, 7, 3, 1, 1, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0])%12 + 1
		deps := make([][]int, n)
		for i := 1; i+1 < len(data); i += 2 {
			k := int(data[i]) % n
			deps[k] = append(deps[k], int(data[i+1])%(n+2)) // n and n+1 are unknown
		}
		g := New[int]()
		for k := range n {
			g.Add(k, deps[k]...)
		}
		err := g.Validate()
		waves, werr := g.Waves()
		require.Equal(t, err, werr)

		wave := map[int]int{}
		for w, ws := range waves {
			for _, k := range ws {
				_, dup := wave[k]
				require.False(t, dup, "node %d in two waves", k)
				wave[k] = w
			}
		}
		placedAll := len(wave) == n
		for k, w := range wave {
			deepest := -1
			for _, d := range deps[k] {
				if d < n && d != k {
					dw, ok := wave[d]
					require.True(t, ok, "%d placed but its dependency %d is not", k, d)
					require.Less(t, dw, w)
					deepest = max(deepest, dw)
				}
			}
			require.Equal(t, deepest+1, w, "node %d", k)
		}

		var cycles []*CycleError[int]
		for _, e := range joined(err) {
			if ce, ok := e.(*CycleError[int]); ok {
				cycles = append(cycles, ce)
			}
		}
		require.Equal(t, placedAll, len(cycles) == 0, "nodes left out of the waves iff there is a cycle")
		for _, ce := range cycles {
			require.GreaterOrEqual(t, len(ce.Cycle), 2)
			seen := map[int]bool{}
			for j, k := range ce.Cycle {
				require.False(t, seen[k], "cycle repeats %d", k)
				seen[k] = true
				next := ce.Cycle[(j+1)%len(ce.Cycle)]
				require.Contains(t, deps[k], next, "%d → %d is not an edge", k, next)
			}
			require.Equal(t, waves, ce.Rest)
		}

		// The reversed graph has the same nodes and the edges turned around.
		r := g.Reverse()
		rerr := r.Validate()
		require.Equal(t, err == nil, rerr == nil)
		if err != nil {
			return
		}
		rwaves, _ := r.Waves()
		require.Len(t, rwaves, len(waves))

		var mu sync.Mutex
		done := map[int]bool{}
		res, runErr := Run(t.Context(), g, func(_ context.Context, k int) error {
			mu.Lock()
			defer mu.Unlock()
			for _, d := range deps[k] {
				if !done[d] {
					return errors.New("started before a dependency")
				}
			}
			done[k] = true
			return nil
		}, Options[int]{Concurrency: 3})
		require.NoError(t, runErr)
		require.Len(t, res.Keys(Succeeded), n)
	})
}

func joined(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return slices.Clone(j.Unwrap())
	}
	return []error{err}
}

// TestExecutorNearBound keeps the benchmark's claim under test: on a random DAG the
// executor's makespan stays within 10% of the lower bound, and below the level-barrier
// baseline's.
func TestExecutorNearBound(t *testing.T) {
	const conc = 8
	dag := newBenchDAG(2000, 20, 1)
	bound := dag.bound(conc)
	ratio := func(barrier bool) float64 {
		s := newSim(dag, conc, barrier)
		var wg sync.WaitGroup
		wg.Go(s.drive)
		var err error
		if barrier {
			err = runLevels(t.Context(), dag.g, s.work, conc)
		} else {
			_, err = Run(t.Context(), dag.g, s.work, Options[int]{Concurrency: conc, Clock: s})
		}
		s.halt()
		wg.Wait()
		require.NoError(t, err)
		return float64(s.now) / float64(bound)
	}
	helmfleet, levels := ratio(false), ratio(true)
	t.Logf("makespan/bound: helmfleet %.3f, level-barrier %.3f", helmfleet, levels)
	require.GreaterOrEqual(t, helmfleet, 1.0)
	require.LessOrEqual(t, helmfleet, 1.10)
	require.Less(t, helmfleet, levels)
}
