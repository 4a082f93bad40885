package depgraph

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// recorder collects events; Run calls it one event at a time.
type recorder[K comparable] struct {
	events []Event[K]
}

func (r *recorder[K]) record(e Event[K]) { r.events = append(r.events, e) }

func (r *recorder[K]) lines() []string {
	var out []string
	for _, e := range r.events {
		line := fmt.Sprintf("%s %v", e.Kind, e.Key)
		if e.Kind == EventSkipped {
			line += fmt.Sprintf(" (cause %v)", e.Cause)
		}
		out = append(out, line)
	}
	return out
}

func states[K comparable](res *Result[K]) map[K]State {
	out := map[K]State{}
	for _, n := range res.Nodes {
		out[n.Key] = n.State
	}
	return out
}

func TestRunOrderAndResult(t *testing.T) {
	g := build(e("app", "db", "cache"), e("db", "ns"), e("cache", "ns"), e("ns"))
	rec := &recorder[string]{}
	clock := newFakeClock()
	res, err := Run(t.Context(), g, func(context.Context, string) error { return nil },
		Options[string]{Concurrency: 1, Events: rec.record, Clock: clock})
	require.NoError(t, err)
	goleak.VerifyNone(t)
	assert.Equal(t, []string{
		"started ns", "succeeded ns",
		"started db", "succeeded db",
		"started cache", "succeeded cache",
		"started app", "succeeded app",
	}, rec.lines())
	assert.Equal(t, []string{"app", "db", "cache", "ns"}, res.Keys(Succeeded))
	n, ok := res.Get("db")
	require.True(t, ok)
	assert.Equal(t, NodeResult[string]{Key: "db", State: Succeeded, Attempts: 1,
		Started: clock.Now(), Applied: clock.Now(), Finished: clock.Now()}, n)
	_, ok = res.Get("nope")
	assert.False(t, ok)
}

func TestRunEmptyGraph(t *testing.T) {
	res, err := Run(t.Context(), New[int](), func(context.Context, int) error { panic("not called") }, Options[int]{})
	require.NoError(t, err)
	assert.Empty(t, res.Nodes)
}

func TestRunInvalidGraphRunsNothing(t *testing.T) {
	for name, g := range map[string]*Graph[string]{
		"cycle":     build(e("a", "b"), e("b", "a"), e("c")),
		"missing":   build(e("a", "x"), e("c")),
		"self":      build(e("a", "a"), e("c")),
		"duplicate": build(e("a"), e("a"), e("c")),
	} {
		t.Run(name, func(t *testing.T) {
			var calls atomic.Int32
			res, err := Run(t.Context(), g, func(context.Context, string) error { calls.Add(1); return nil }, Options[string]{})
			require.Error(t, err)
			assert.Equal(t, g.Validate(), err)
			assert.Nil(t, res)
			assert.Zero(t, calls.Load())
		})
	}
}

// A node starts as soon as its own dependencies succeeded, while an unrelated node of
// the same wave is still running: no level barrier.
func TestRunNoLevelBarrier(t *testing.T) {
	g := build(e("slow"), e("fast"), e("after-fast", "fast"), e("after-slow", "slow"))
	release := make(chan struct{})
	res, err := Run(t.Context(), g, func(ctx context.Context, k string) error {
		switch k {
		case "slow":
			select { // finishes only once after-fast has run
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
		case "after-fast":
			close(release)
		}
		return nil
	}, Options[string]{})
	require.NoError(t, err)
	assert.Len(t, res.Keys(Succeeded), 4)
}

func TestRunConcurrencyLimits(t *testing.T) {
	tests := []struct {
		name       string
		opts       Options[string]
		wantTotal  int
		wantGroups map[string]int
	}{
		{name: "overall", opts: Options[string]{Concurrency: 3}, wantTotal: 3,
			wantGroups: map[string]int{"eu": 3, "us": 3, "": 3}},
		{name: "per group", opts: Options[string]{GroupConcurrency: 2}, wantTotal: 2 + 2 + 12,
			wantGroups: map[string]int{"eu": 2, "us": 2, "": 12}},
		{name: "group override", opts: Options[string]{GroupConcurrency: 2, GroupLimits: map[string]int{"us": 1}},
			wantTotal: 2 + 1 + 12, wantGroups: map[string]int{"eu": 2, "us": 1, "": 12}},
		{name: "both", opts: Options[string]{Concurrency: 4, GroupConcurrency: 1}, wantTotal: 4,
			wantGroups: map[string]int{"eu": 1, "us": 1, "": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New[string]()
			for i := range 12 {
				for _, grp := range []string{"eu", "us", ""} {
					g.AddNode(Node[string]{Key: fmt.Sprintf("%s-%d", grp, i), Group: grp})
				}
			}
			var mu sync.Mutex
			cur, peak := map[string]int{}, map[string]int{}
			total, peakTotal := 0, 0
			groupOf := map[string]string{}
			for _, n := range g.Nodes() {
				groupOf[n.Key] = n.Group
			}
			// Each node holds its slot for a few milliseconds, long enough for the
			// scheduler to fill every free slot.
			res, err := Run(t.Context(), g, func(ctx context.Context, k string) error {
				grp := groupOf[k]
				mu.Lock()
				cur[grp]++
				total++
				peak[grp] = max(peak[grp], cur[grp])
				peakTotal = max(peakTotal, total)
				mu.Unlock()
				time.Sleep(3 * time.Millisecond)
				mu.Lock()
				cur[grp]--
				total--
				mu.Unlock()
				return nil
			}, tt.opts)
			require.NoError(t, err)
			assert.Len(t, res.Keys(Succeeded), 36)
			assert.LessOrEqual(t, peakTotal, tt.wantTotal)
			for grp, want := range tt.wantGroups {
				assert.LessOrEqual(t, peak[grp], want, "group %q", grp)
			}
			assert.Equal(t, tt.wantTotal, peakTotal, "the limit is used in full")
		})
	}
}

func TestRunFailureIsolation(t *testing.T) {
	// a fails: b and c (behind it) and e (behind c) skip; d and f go on.
	g := build(e("a"), e("b", "a"), e("c", "b"), e("d"), e("e", "d", "c"), e("f", "d"))
	boom := errors.New("boom")
	rec := &recorder[string]{}
	res, err := Run(t.Context(), g, func(_ context.Context, k string) error {
		if k == "a" {
			return boom
		}
		return nil
	}, Options[string]{Concurrency: 1, Events: rec.record, Clock: newFakeClock()})
	require.Error(t, err)
	assert.ErrorIs(t, err, boom)
	var ne *NodeError[string]
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "a", ne.Key)
	assert.EqualError(t, err, `depgraph: node "a": boom`)
	assert.Equal(t, map[string]State{"a": Failed, "b": Skipped, "c": Skipped, "d": Succeeded, "e": Skipped, "f": Succeeded}, states(res))
	for _, k := range []string{"b", "c", "e"} {
		n, _ := res.Get(k)
		assert.Equal(t, "a", n.Cause, k)
		assert.Zero(t, n.Attempts, k)
	}
	a, _ := res.Get("a")
	assert.Equal(t, boom, a.Err)
	assert.Equal(t, []string{
		"started a", "failed a", "skipped b (cause a)", "skipped c (cause a)", "skipped e (cause a)",
		"started d", "succeeded d", "started f", "succeeded f",
	}, rec.lines())
}

func TestRunRetries(t *testing.T) {
	tests := []struct {
		name         string
		retries      int
		failures     int
		wantState    State
		wantAttempts int
	}{
		{name: "succeeds on the third attempt", retries: 3, failures: 2, wantState: Succeeded, wantAttempts: 3},
		{name: "retries exhausted", retries: 2, failures: 5, wantState: Failed, wantAttempts: 3},
		{name: "no retries", retries: 0, failures: 1, wantState: Failed, wantAttempts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			rec := &recorder[string]{}
			var calls atomic.Int32
			done := make(chan struct{})
			var res *Result[string]
			var err error
			go func() {
				defer close(done)
				res, err = Run(t.Context(), build(e("a"), e("b", "a")), func(_ context.Context, k string) error {
					if k == "a" && int(calls.Add(1)) <= tt.failures {
						return fmt.Errorf("attempt %d", calls.Load())
					}
					return nil
				}, Options[string]{Retries: tt.retries, Clock: clock, Events: rec.record,
					Backoff: ExponentialBackoff(10*time.Second, 15*time.Second)})
			}()
			for range min(tt.failures, tt.retries) {
				clock.BlockUntil(1)
				clock.Advance(15 * time.Second)
			}
			<-done
			n, _ := res.Get("a")
			assert.Equal(t, tt.wantState, n.State)
			assert.Equal(t, tt.wantAttempts, n.Attempts)
			var delays []time.Duration
			for _, ev := range rec.events {
				if ev.Kind == EventRetrying {
					delays = append(delays, ev.Delay)
					assert.Error(t, ev.Err)
				}
			}
			assert.Len(t, delays, tt.wantAttempts-1)
			if len(delays) >= 2 {
				assert.Equal(t, []time.Duration{10 * time.Second, 15 * time.Second}, delays[:2])
			}
			if tt.wantState == Failed {
				assert.EqualError(t, n.Err, fmt.Sprintf("attempt %d", tt.wantAttempts))
				require.Error(t, err)
				b, _ := res.Get("b")
				assert.Equal(t, Skipped, b.State)
			} else {
				require.NoError(t, err)
				assert.Equal(t, time.Duration(tt.failures)*15*time.Second, n.Finished.Sub(n.Started))
			}
		})
	}
}

func TestRunUnlimitedRetriesStopOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	clock := newFakeClock()
	done := make(chan struct{})
	var res *Result[string]
	var err error
	go func() {
		defer close(done)
		res, err = Run(ctx, build(e("a")), func(context.Context, string) error { return errors.New("flaky") },
			Options[string]{Retries: -1, Clock: clock, Backoff: func(int) time.Duration { return time.Hour }})
	}()
	for range 3 {
		clock.BlockUntil(1)
		clock.Advance(time.Hour)
	}
	clock.BlockUntil(1)
	cancel()
	<-done
	goleak.VerifyNone(t)
	a, _ := res.Get("a")
	assert.Equal(t, Failed, a.State)
	assert.Equal(t, 4, a.Attempts)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "flaky")
}

func TestRunReadiness(t *testing.T) {
	g := build(e("db"), e("app", "db"), e("other"))
	ready := make(chan error)
	rec := &recorder[string]{}
	var order []string
	var mu sync.Mutex
	done := make(chan struct{})
	var res *Result[string]
	var err error
	go func() {
		defer close(done)
		res, err = Run(t.Context(), g, func(_ context.Context, k string) error {
			mu.Lock()
			order = append(order, k)
			mu.Unlock()
			return nil
		}, Options[string]{
			Concurrency: 1, // other can run only because db's slot is free while it waits
			Events:      rec.record,
			Ready: func(ctx context.Context, k string) error {
				if k != "db" {
					return nil
				}
				select {
				case err := <-ready:
					return err
				case <-ctx.Done():
					return ctx.Err()
				}
			},
		})
	}()
	// db ran and waits for readiness; other runs meanwhile; app does not start.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 2
	}, 5*time.Second, time.Millisecond)
	mu.Lock()
	assert.Equal(t, []string{"db", "other"}, order)
	mu.Unlock()
	ready <- nil
	<-done
	require.NoError(t, err)
	assert.Equal(t, []string{"db", "other", "app"}, order)
	assert.Equal(t, []string{
		"started db", "applied db", "started other", "applied other", "succeeded other",
		"succeeded db", "started app", "applied app", "succeeded app",
	}, rec.lines())
	db, _ := res.Get("db")
	assert.True(t, !db.Applied.After(db.Finished) && !db.Applied.Before(db.Started))
}

func TestRunNotReadyFailsAndSkips(t *testing.T) {
	g := build(e("db"), e("app", "db"))
	timeout := errors.New("rollout timed out")
	res, err := Run(t.Context(), g, func(context.Context, string) error { return nil },
		Options[string]{Ready: func(_ context.Context, k string) error {
			if k == "db" {
				return timeout
			}
			return nil
		}})
	assert.ErrorIs(t, err, ErrNotReady)
	assert.ErrorIs(t, err, timeout)
	assert.EqualError(t, err, `depgraph: node "db": not ready: rollout timed out`)
	assert.Equal(t, map[string]State{"db": Failed, "app": Skipped}, states(res))
}

func TestRunPanicIsAFailure(t *testing.T) {
	res, err := Run(t.Context(), build(e("a"), e("b", "a"), e("c")), func(_ context.Context, k string) error {
		if k == "a" {
			panic("kaboom")
		}
		return nil
	}, Options[string]{})
	assert.ErrorIs(t, err, ErrPanic)
	assert.ErrorContains(t, err, "kaboom")
	assert.Equal(t, map[string]State{"a": Failed, "b": Skipped, "c": Succeeded}, states(res))
}

func TestRunCancel(t *testing.T) {
	// Three slots: root, hog and quick start; quick's slot goes to queued; last and
	// behind-root never start. root and queued honour the cancellation, hog finishes
	// its work anyway.
	g := build(e("root"), e("behind-root", "root"), e("hog"), e("quick"), e("queued"), e("last"))
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan string, 10)
	done := make(chan struct{})
	var res *Result[string]
	var err error
	go func() {
		defer close(done)
		res, err = Run(ctx, g, func(ctx context.Context, k string) error {
			started <- k
			if k == "quick" {
				return nil
			}
			<-ctx.Done()
			if k == "hog" {
				return nil
			}
			return ctx.Err()
		}, Options[string]{Concurrency: 3})
	}()
	seen := map[string]bool{}
	for len(seen) < 4 {
		seen[<-started] = true
	}
	require.Equal(t, map[string]bool{"root": true, "hog": true, "quick": true, "queued": true}, seen)
	begin := time.Now()
	cancel()
	<-done
	assert.Less(t, time.Since(begin), time.Second, "Run returns promptly")
	goleak.VerifyNone(t)
	assert.Equal(t, map[string]State{
		"root": Failed, "behind-root": NotStarted, "hog": Succeeded,
		"quick": Succeeded, "queued": Failed, "last": NotStarted,
	}, states(res))
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "2 of 6 nodes not started")
	var ne *NodeError[string]
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "root", ne.Key)
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := Run(ctx, build(e("a"), e("b", "a")), func(context.Context, string) error { panic("not called") }, Options[string]{})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"a", "b"}, res.Keys(NotStarted))
}

func TestRunReverseForTeardown(t *testing.T) {
	g := build(e("ns"), e("db", "ns"), e("cache", "ns"), e("app", "db", "cache"))
	var order []string
	_, err := Run(t.Context(), g.Reverse(), func(_ context.Context, k string) error {
		order = append(order, k)
		return nil
	}, Options[string]{Concurrency: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"app", "db", "cache", "ns"}, order)
}

func TestRunPrefersLongestChain(t *testing.T) {
	// With one slot, the head of the longer chain goes before the earlier-added leaf;
	// between equals, the one added first.
	g := build(e("leaf"), e("c1"), e("c2", "c1"), e("c3", "c2"))
	var order []string
	_, err := Run(t.Context(), g, func(_ context.Context, k string) error {
		order = append(order, k)
		return nil
	}, Options[string]{Concurrency: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"c1", "c2", "leaf", "c3"}, order)
}

func TestRunEventTimings(t *testing.T) {
	clock := newFakeClock()
	rec := &recorder[string]{}
	t0 := clock.Now()
	_, err := Run(t.Context(), build(e("a"), e("b", "a")), func(_ context.Context, k string) error {
		clock.Advance(map[string]time.Duration{"a": 3 * time.Second, "b": 5 * time.Second}[k])
		return nil
	}, Options[string]{Clock: clock, Events: rec.record})
	require.NoError(t, err)
	type timing struct {
		kind    EventKind
		key     string
		at      time.Duration
		elapsed time.Duration
	}
	var got []timing
	for _, ev := range rec.events {
		got = append(got, timing{ev.Kind, ev.Key, ev.Time.Sub(t0), ev.Elapsed})
	}
	assert.Equal(t, []timing{
		{EventStarted, "a", 0, 0},
		{EventSucceeded, "a", 3 * time.Second, 3 * time.Second},
		{EventStarted, "b", 3 * time.Second, 0},
		{EventSucceeded, "b", 8 * time.Second, 5 * time.Second},
	}, got)
}

// A chain of ten nodes finishes in ten node-durations plus a few milliseconds; Flux,
// which rechecks a dependency every 30 s, would take minutes. The node-durations are
// measured, so that the sleeps' own overshoot on a busy machine does not count against
// the scheduler.
func TestChainFinishesWithinNodeDurations(t *testing.T) {
	const depth, d, slack = 10, 20 * time.Millisecond, 5 * time.Millisecond
	g := New[int]()
	g.Add(0)
	for i := 1; i < depth; i++ {
		g.Add(i, i-1)
	}
	var work atomic.Int64
	begin := time.Now()
	res, err := Run(t.Context(), g, func(context.Context, int) error {
		start := time.Now()
		time.Sleep(d)
		work.Add(int64(time.Since(start)))
		return nil
	}, Options[int]{Concurrency: 4})
	elapsed := time.Since(begin)
	require.NoError(t, err)
	assert.Len(t, res.Keys(Succeeded), depth)
	nodes := time.Duration(work.Load())
	assert.GreaterOrEqual(t, nodes, depth*d)
	assert.Less(t, elapsed, nodes+slack, "chain took %v for %v of node work", elapsed, nodes)
	t.Logf("%d-deep chain of %v nodes: %v (node work %v, scheduling %v)", depth, d, elapsed, nodes, elapsed-nodes)
}

// TestRunStress runs thousands of nodes with failures, groups and limits and checks the
// outcome of every node against a sequential reference, and the order of events.
func TestRunStress(t *testing.T) {
	const n = 3000
	rng := rand.New(rand.NewPCG(7, 7))
	g := New[int]()
	fails := map[int]bool{}
	for i := range n {
		var deps []int
		if i > 0 {
			for range rng.IntN(4) {
				deps = append(deps, rng.IntN(i))
			}
		}
		g.AddNode(Node[int]{Key: i, Deps: deps, Group: fmt.Sprintf("cluster-%d", i%7)})
		fails[i] = rng.IntN(100) == 0
	}
	nodes := g.Nodes()

	// Reference: a node succeeds iff all its dependencies succeeded and it does not fail.
	want := make([]State, n)
	for i, node := range nodes {
		want[i] = Succeeded
		for _, d := range node.Deps {
			if want[d] != Succeeded {
				want[i] = Skipped
			}
		}
		if want[i] == Succeeded && fails[i] {
			want[i] = Failed
		}
	}

	var mu sync.Mutex
	running := map[string]int{}
	total := 0
	violations := 0
	var seq []Event[int]
	res, err := Run(t.Context(), g, func(_ context.Context, k int) error {
		grp := nodes[k].Group
		mu.Lock()
		running[grp]++
		total++
		if running[grp] > 3 || total > 16 {
			violations++
		}
		mu.Unlock()
		if k%5 == 0 {
			time.Sleep(time.Duration(rng32(k)%50) * time.Microsecond)
		}
		mu.Lock()
		running[grp]--
		total--
		mu.Unlock()
		if fails[k] {
			return errors.New("injected")
		}
		return nil
	}, Options[int]{Concurrency: 16, GroupConcurrency: 3, Events: func(e Event[int]) { seq = append(seq, e) }})
	require.Error(t, err)
	goleak.VerifyNone(t)
	assert.Zero(t, violations)
	for i, nr := range res.Nodes {
		require.Equal(t, want[i], nr.State, "node %d", i)
		if nr.State == Skipped {
			require.True(t, fails[nr.Cause], "cause of %d", i)
		}
	}
	// Events: every node has exactly one terminal event, and starts only after all of its
	// dependencies succeeded.
	succeeded := make([]bool, n)
	terminal := make([]int, n)
	for _, ev := range seq {
		switch ev.Kind {
		case EventStarted:
			for _, d := range nodes[ev.Key].Deps {
				require.True(t, succeeded[d], "%d started before its dependency %d succeeded", ev.Key, d)
			}
		case EventSucceeded:
			succeeded[ev.Key] = true
			terminal[ev.Key]++
		case EventFailed, EventSkipped:
			terminal[ev.Key]++
		}
	}
	for i, c := range terminal {
		require.Equal(t, 1, c, "terminal events of node %d", i)
	}
}

// rng32 is a fixed per-key pseudo-random number, so that goroutines share no RNG.
func rng32(k int) uint32 {
	x := uint32(k)*2654435761 + 1
	x ^= x >> 15
	return x
}

func TestExponentialBackoff(t *testing.T) {
	b := ExponentialBackoff(time.Second, 5*time.Second)
	var got []time.Duration
	for attempt := 1; attempt <= 5; attempt++ {
		got = append(got, b(attempt))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}, got)
}

func TestStateAndKindNames(t *testing.T) {
	assert.Equal(t, []string{"not-started", "succeeded", "failed", "skipped", "unknown"},
		[]string{NotStarted.String(), Succeeded.String(), Failed.String(), Skipped.String(), State(9).String()})
	assert.Equal(t, []string{"started", "retrying", "applied", "succeeded", "failed", "skipped", "unknown"},
		[]string{EventStarted.String(), EventRetrying.String(), EventApplied.String(), EventSucceeded.String(),
			EventFailed.String(), EventSkipped.String(), EventKind(9).String()})
}

// TestRunStressCancel cancels runs of thousands of nodes at random moments and checks
// that every outcome is consistent and nothing is left running.
func TestRunStressCancel(t *testing.T) {
	const n = 2000
	rng := rand.New(rand.NewPCG(3, 9))
	g := New[int]()
	deps := make([][]int, n)
	for i := range n {
		if i > 0 {
			for range rng.IntN(4) {
				deps[i] = append(deps[i], rng.IntN(i))
			}
		}
		g.AddNode(Node[int]{Key: i, Deps: deps[i], Group: fmt.Sprintf("c%d", i%5)})
	}
	for round := range 5 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			stopAfter := int32(100 + round*200)
			var calls atomic.Int32
			called := make([]atomic.Bool, n)
			res, err := Run(ctx, g, func(ctx context.Context, k int) error {
				called[k].Store(true)
				if calls.Add(1) == stopAfter {
					cancel()
				}
				if k%97 == 50 {
					return errors.New("injected")
				}
				return ctx.Err()
			}, Options[int]{Concurrency: 8, GroupConcurrency: 2})
			goleak.VerifyNone(t)
			require.ErrorIs(t, err, context.Canceled)
			counts := map[State]int{}
			for i, nr := range res.Nodes {
				counts[nr.State]++
				switch nr.State {
				case NotStarted, Skipped:
					require.False(t, called[i].Load(), "node %d ran but is %v", i, nr.State)
				default:
					require.True(t, called[i].Load(), "node %d is %v but never ran", i, nr.State)
				}
				if nr.State == Succeeded || nr.State == Failed {
					for _, d := range deps[i] {
						require.Equal(t, Succeeded, res.Nodes[d].State, "node %d ran before %d succeeded", i, d)
					}
				}
				if nr.State == Skipped {
					require.Equal(t, Failed, res.Nodes[nr.Cause].State)
				}
			}
			require.Positive(t, counts[NotStarted])
			require.Positive(t, counts[Succeeded])
		})
	}
}

func TestConcurrentRunsShareAGraph(t *testing.T) {
	g := New[int]()
	for i := range 200 {
		if i == 0 {
			g.Add(i)
			continue
		}
		g.Add(i, i/2)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res, err := Run(t.Context(), g, func(context.Context, int) error { return nil }, Options[int]{Concurrency: 4})
			assert.NoError(t, err)
			assert.Len(t, res.Keys(Succeeded), 200)
			_, err = g.Waves()
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}
