package depgraph

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
)

// benchDAG is a random DAG of n nodes in depth levels: every node past the first
// level depends on one node of the level before and on up to four more of any earlier
// level (fan-in up to 5). Durations are in whole milliseconds, mostly 1–10 with one
// node in ten ten times longer, as slow charts are.
type benchDAG struct {
	g         *Graph[int]
	deps      [][]int
	durations []time.Duration
}

func newBenchDAG(n, depth int, seed uint64) *benchDAG {
	rng := rand.New(rand.NewPCG(seed, seed))
	perLevel := n / depth
	b := &benchDAG{g: New[int](), deps: make([][]int, n), durations: make([]time.Duration, n)}
	for i := range n {
		level := i / perLevel
		if level > 0 {
			prev := (level - 1) * perLevel
			b.deps[i] = append(b.deps[i], prev+rng.IntN(perLevel))
			for range rng.IntN(5) {
				b.deps[i] = append(b.deps[i], rng.IntN(level*perLevel))
			}
		}
		ms := 1 + rng.IntN(10)
		if rng.IntN(10) == 0 {
			ms *= 10
		}
		b.durations[i] = time.Duration(ms) * time.Millisecond
		b.g.Add(i, b.deps[i]...)
	}
	return b
}

// bound is the lower bound of any schedule on conc slots: the longer of the critical
// path and the total work spread evenly.
func (b *benchDAG) bound(conc int) time.Duration {
	finish := make([]time.Duration, len(b.deps))
	var critical, total time.Duration
	for i, deps := range b.deps { // nodes come after their dependencies
		var start time.Duration
		for _, d := range deps {
			start = max(start, finish[d])
		}
		finish[i] = start + b.durations[i]
		critical = max(critical, finish[i])
		total += b.durations[i]
	}
	return max(critical, total/time.Duration(conc))
}

// runLevels is the level-barrier baseline (Argo sync waves, helmfile groups, cli-utils
// apply sets): each wave runs with conc slots and the next starts when all of it is
// done.
func runLevels(ctx context.Context, g *Graph[int], fn Func[int], conc int) error {
	waves, err := g.Waves()
	if err != nil {
		return err
	}
	for _, wave := range waves {
		eg, ctx := errgroup.WithContext(ctx)
		eg.SetLimit(conc)
		for _, k := range wave {
			eg.Go(func() error { return fn(ctx, k) })
		}
		if err := eg.Wait(); err != nil {
			return err
		}
	}
	return nil
}

// sim runs node functions in virtual time: a node "works" by waiting for a virtual
// timer, and the driver moves time to the next deadline only when nothing can happen
// in between: no goroutine is between timers and no node that its scheduler may start
// (eligible) waits for a free slot. Eligibility is defined per strategy, so the
// measured makespan is exactly what the scheduling policy yields, free of the noise of
// real sleeps on a shared machine.
type sim struct {
	mu        sync.Mutex
	cond      *sync.Cond
	base      time.Time
	now       time.Duration
	timers    simTimers
	dag       *benchDAG
	limit     int
	barrier   bool
	pending   []int
	entered   int
	exited    int
	blocked   int
	eligible  int
	waveOf    []int
	waveLeft  []int
	waveSizes []int
	wave      int
	stop      bool
}

type simTimer struct {
	at time.Duration
	ch chan struct{}
}

type simTimers []simTimer

func (t simTimers) Len() int           { return len(t) }
func (t simTimers) Less(i, j int) bool { return t[i].at < t[j].at }
func (t simTimers) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *simTimers) Push(x any)        { *t = append(*t, x.(simTimer)) }
func (t *simTimers) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}

func newSim(dag *benchDAG, limit int, barrier bool) *sim {
	n := len(dag.deps)
	s := &sim{base: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), dag: dag, limit: limit, barrier: barrier,
		pending: make([]int, n), waveOf: make([]int, n)}
	s.cond = sync.NewCond(&s.mu)
	waves, _ := dag.g.Waves()
	for w, wave := range waves {
		s.waveSizes = append(s.waveSizes, len(wave))
		s.waveLeft = append(s.waveLeft, len(wave))
		for _, k := range wave {
			s.waveOf[k] = w
		}
	}
	for i, deps := range dag.deps {
		s.pending[i] = len(dedupe(deps))
		if s.pending[i] == 0 && !barrier {
			s.eligible++
		}
	}
	if barrier {
		s.eligible = s.waveSizes[0]
	}
	return s
}

func dedupe(xs []int) map[int]bool {
	m := map[int]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func (s *sim) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.base.Add(s.now)
}

func (s *sim) After(time.Duration) <-chan time.Time {
	panic("the benchmark configures no retries")
}

// work is the node function: wait d of virtual time.
func (s *sim) work(_ context.Context, k int) error {
	s.mu.Lock()
	s.entered++
	s.eligible--
	ch := make(chan struct{})
	heap.Push(&s.timers, simTimer{at: s.now + s.dag.durations[k], ch: ch})
	s.blocked++
	s.cond.Broadcast()
	s.mu.Unlock()
	<-ch
	s.mu.Lock()
	s.exited++
	if s.barrier {
		w := s.waveOf[k]
		s.waveLeft[w]--
		if s.waveLeft[w] == 0 && w+1 < len(s.waveSizes) {
			s.eligible += s.waveSizes[w+1]
		}
	} else {
		for _, d := range s.dependents(k) {
			s.pending[d]--
			if s.pending[d] == 0 {
				s.eligible++
			}
		}
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	return nil
}

func (s *sim) dependents(k int) []int32 { return s.dag.g.compile().dependents[k] }

func (s *sim) quiescent() bool {
	running := s.entered - s.exited
	awake := running - s.blocked
	return awake == 0 && (s.eligible == 0 || running >= s.limit)
}

// drive advances virtual time until stopped.
func (s *sim) drive() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for !s.stop && !(s.quiescent() && s.timers.Len() > 0) {
			s.cond.Wait()
		}
		if s.stop {
			return
		}
		s.now = s.timers[0].at
		for s.timers.Len() > 0 && s.timers[0].at == s.now {
			t := heap.Pop(&s.timers).(simTimer)
			s.blocked--
			close(t.ch)
		}
	}
}

func (s *sim) halt() {
	s.mu.Lock()
	s.stop = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// BenchmarkExecutor measures how close each scheduler gets to the lower bound on a
// 10,000-node random DAG with 16 slots, in virtual time (see sim).
func BenchmarkExecutor(b *testing.B) {
	const conc = 16
	dag := newBenchDAG(10_000, 20, 42)
	bound := dag.bound(conc)
	strategies := []struct {
		name string
		run  func(ctx context.Context, s *sim) error
	}{
		{"helmfleet", func(ctx context.Context, s *sim) error {
			_, err := Run(ctx, dag.g, s.work, Options[int]{Concurrency: conc, Clock: s})
			return err
		}},
		{"level-barrier", func(ctx context.Context, s *sim) error {
			return runLevels(ctx, dag.g, s.work, conc)
		}},
	}
	for _, st := range strategies {
		b.Run(st.name, func(b *testing.B) {
			var ratio float64
			for b.Loop() {
				s := newSim(dag, conc, st.name == "level-barrier")
				var wg sync.WaitGroup
				wg.Go(s.drive)
				err := st.run(b.Context(), s)
				s.halt()
				wg.Wait()
				if err != nil {
					b.Fatal(err)
				}
				ratio = float64(s.now) / float64(bound)
			}
			b.ReportMetric(ratio, "makespan/bound")
		})
	}
}

// BenchmarkSchedulingOverhead runs the same DAG with nodes that do nothing, in real
// time: what remains is the cost of scheduling, per node.
func BenchmarkSchedulingOverhead(b *testing.B) {
	const conc = 16
	dag := newBenchDAG(10_000, 20, 42)
	noop := func(context.Context, int) error { return nil }
	strategies := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"helmfleet", func(ctx context.Context) error {
			_, err := Run(ctx, dag.g, noop, Options[int]{Concurrency: conc})
			return err
		}},
		{"level-barrier", func(ctx context.Context) error { return runLevels(ctx, dag.g, noop, conc) }},
	}
	for _, st := range strategies {
		b.Run(st.name, func(b *testing.B) {
			if err := st.run(b.Context()); err != nil { // compile the graph outside the timing
				b.Fatal(err)
			}
			for b.Loop() {
				if err := st.run(b.Context()); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(dag.deps)), "ns/node")
		})
	}
}
