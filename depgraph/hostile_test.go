package depgraph

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// runWithin runs Run in its own goroutine and fails the test if it has not returned
// within a deadline: a deadlocked executor must fail the test, not hang it.
func runWithin[K comparable](t *testing.T, g *Graph[K], fn Func[K], opts Options[K]) (*Result[K], error) {
	t.Helper()
	type outcome struct {
		res *Result[K]
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := Run(t.Context(), g, fn, opts)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return: the executor is deadlocked")
		return nil, nil
	}
}

// panicClock is a Clock whose Now or After panics once armed.
type panicClock struct {
	*fakeClock
	nowAfter   int32 // Now panics from this call on (1-based); 0 never
	afterPanic bool
	calls      atomic.Int32
}

func (c *panicClock) Now() time.Time {
	if n := c.calls.Add(1); c.nowAfter > 0 && n >= c.nowAfter {
		panic("clock broke")
	}
	return c.fakeClock.Now()
}

func (c *panicClock) After(d time.Duration) <-chan time.Time {
	if c.afterPanic {
		panic("timer broke")
	}
	return c.fakeClock.After(d)
}

// A panic or runtime.Goexit in any code of the caller that Run calls comes back as a
// *PanicError naming the node and the callback; nothing crashes, hangs or leaks.
func TestRunRecoversCallbacks(t *testing.T) {
	errFlaky := errors.New("flaky")
	ok := func(context.Context, string) error { return nil }
	failDBOnce := func() Func[string] {
		var n atomic.Int32
		return func(_ context.Context, k string) error {
			if k == "db" && n.Add(1) == 1 {
				return errFlaky
			}
			return nil
		}
	}
	tests := []struct {
		name       string
		fn         Func[string]
		opts       func(*Options[string])
		callback   Callback
		key        string
		states     map[string]State
		nodeFailed bool // the panic fails the node (else it is reported beside the result)
		want       string
		also       error
	}{
		{
			name:       "ready",
			fn:         ok,
			opts:       func(o *Options[string]) { o.Ready = readyPanicsOn("db") },
			callback:   CallbackReady,
			key:        "db",
			states:     map[string]State{"db": Failed, "app": Skipped, "cache": Succeeded},
			nodeFailed: true,
			want:       `depgraph: node "db": Options.Ready panicked: rollout watcher broke`,
		},
		{
			name: "events",
			fn:   ok,
			opts: func(o *Options[string]) {
				o.Concurrency = 1
				o.Events = func(e Event[string]) {
					if e.Key == "db" && e.Kind == EventSucceeded {
						var m map[string]int
						m["boom"]++ // a nil-map write, the classic
					}
				}
			},
			callback: CallbackEvents,
			key:      "db",
			states:   map[string]State{"db": Succeeded, "app": Succeeded, "cache": Succeeded},
			want:     `depgraph: node "db": Options.Events panicked: assignment to entry in nil map`,
		},
		{
			name:       "backoff",
			fn:         failDBOnce(),
			opts:       func(o *Options[string]) { o.Retries = 1; o.Backoff = func(int) time.Duration { panic("no backoff") } },
			callback:   CallbackBackoff,
			key:        "db",
			states:     map[string]State{"db": Failed, "app": Skipped, "cache": Succeeded},
			nodeFailed: true,
			want:       "depgraph: node \"db\": flaky\ndepgraph: node \"db\": Options.Backoff panicked: no backoff",
			also:       errFlaky,
		},
		{
			name: "clock now",
			fn:   ok,
			opts: func(o *Options[string]) {
				o.Concurrency = 1
				o.Clock = &panicClock{fakeClock: newFakeClock(), nowAfter: 2}
			},
			callback: CallbackClockNow,
			key:      "db",
			states:   map[string]State{"db": Succeeded, "app": Succeeded, "cache": Succeeded},
			want:     `depgraph: node "db": Options.Clock.Now panicked: clock broke`,
		},
		{
			name: "clock after",
			fn:   failDBOnce(),
			opts: func(o *Options[string]) {
				o.Retries = 1
				o.Clock = &panicClock{fakeClock: newFakeClock(), afterPanic: true}
			},
			callback:   CallbackClockAfter,
			key:        "db",
			states:     map[string]State{"db": Failed, "app": Skipped, "cache": Succeeded},
			nodeFailed: true,
			also:       errFlaky,
		},
		{
			name: "function goexit",
			fn: func(_ context.Context, k string) error {
				if k == "db" {
					runtime.Goexit() // what t.FailNow does
				}
				return nil
			},
			callback:   CallbackFunc,
			key:        "db",
			states:     map[string]State{"db": Failed, "app": Skipped, "cache": Succeeded},
			nodeFailed: true,
		},
		{
			name: "ready goexit",
			fn:   ok,
			opts: func(o *Options[string]) {
				o.Concurrency = 1
				o.Ready = func(_ context.Context, k string) error {
					if k == "db" {
						runtime.Goexit()
					}
					return nil
				}
			},
			callback:   CallbackReady,
			key:        "db",
			states:     map[string]State{"db": Failed, "app": Skipped, "cache": Succeeded},
			nodeFailed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts Options[string]
			if tt.opts != nil {
				tt.opts(&opts)
			}
			g := build(e("db"), e("app", "db"), e("cache"))
			res, err := runWithin(t, g, tt.fn, opts)
			goleak.VerifyNone(t)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrPanic)
			if tt.also != nil {
				assert.ErrorIs(t, err, tt.also)
			}
			var pe *PanicError[string]
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.key, pe.Key)
			assert.Equal(t, tt.callback, pe.Callback)
			assert.NotEmpty(t, pe.Stack)
			require.NotNil(t, res)
			assert.Equal(t, tt.states, states(res))
			var ne *NodeError[string]
			assert.Equal(t, tt.nodeFailed, errors.As(err, &ne), "a *NodeError iff the node failed")
			if tt.want != "" {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
}

func readyPanicsOn(key string) func(context.Context, string) error {
	return func(_ context.Context, k string) error {
		if k == key {
			panic("rollout watcher broke")
		}
		return nil
	}
}

// After a panic, Events is not called again: the events it would miss could not be
// delivered in order anyway.
func TestRunEventsStopAfterPanic(t *testing.T) {
	var calls int
	_, err := runWithin(t, build(e("a"), e("b", "a")), func(context.Context, string) error { return nil },
		Options[string]{Events: func(Event[string]) {
			calls++
			panic("once")
		}})
	assert.ErrorIs(t, err, ErrPanic)
	assert.Equal(t, 1, calls)
}

// A panicking Ready under a concurrency limit must release its node's slot and let
// the other nodes run; many panicking nodes must not pile up goroutines.
func TestRunReadyPanicsUnderLoad(t *testing.T) {
	g := New[int]()
	for i := range 200 {
		if i%10 == 0 {
			g.Add(i)
		} else {
			g.Add(i, i-i%10)
		}
	}
	res, err := runWithin(t, g, func(context.Context, int) error { return nil }, Options[int]{
		Concurrency: 3,
		Ready: func(_ context.Context, k int) error {
			if k%7 == 0 {
				panic(k)
			}
			return nil
		},
	})
	goleak.VerifyNone(t)
	require.Error(t, err)
	for _, n := range res.Nodes {
		switch {
		case n.Key%10 != 0 && (n.Key-n.Key%10)%7 == 0:
			assert.Equal(t, Skipped, n.State, "%d", n.Key)
		case n.Key%7 == 0:
			assert.Equal(t, Failed, n.State, "%d", n.Key)
			assert.ErrorIs(t, n.Err, ErrPanic)
		default:
			assert.Equal(t, Succeeded, n.State, "%d", n.Key)
		}
	}
}

func TestRunNilArguments(t *testing.T) {
	fn := func(context.Context, string) error { return nil }
	var nilCtx context.Context
	tests := []struct {
		name string
		ctx  context.Context
		g    *Graph[string]
		fn   Func[string]
		arg  string
	}{
		{name: "nil graph", ctx: t.Context(), fn: fn, arg: "g"},
		{name: "nil function", ctx: t.Context(), g: build(e("a")), arg: "fn"},
		{name: "nil context", ctx: nilCtx, g: build(e("a")), fn: fn, arg: "ctx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(tt.ctx, tt.g, tt.fn, Options[string]{})
			assert.Nil(t, res)
			assert.ErrorIs(t, err, ErrInvalidArgument)
			var ae *ArgumentError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "Run", ae.Func)
			assert.Equal(t, tt.arg, ae.Arg)
			assert.EqualError(t, err, "depgraph: Run: argument "+tt.arg+" is nil")
		})
	}
}

// A nil *Graph reads as empty and is reported by Validate; the zero Graph is usable;
// a nil Result has no nodes.
func TestNilAndZeroGraph(t *testing.T) {
	var g *Graph[string]
	assert.Zero(t, g.Len())
	assert.Empty(t, g.Nodes())
	assert.ErrorIs(t, g.Validate(), ErrInvalidArgument)
	waves, err := g.Waves()
	assert.Empty(t, waves)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	assert.Nil(t, g.Reverse())
	assert.Equal(t, "digraph depgraph {\n  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\"];\n}\n", g.DOT(nil))
	assert.Equal(t, "flowchart LR\n", g.Mermaid(nil))

	var zero Graph[string]
	zero.Add("b", "a")
	zero.Add("a")
	require.NoError(t, zero.Validate())
	res, err := Run(t.Context(), &zero, func(context.Context, string) error { return nil }, Options[string]{})
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "a"}, res.Keys(Succeeded))

	var none *Result[string]
	_, ok := none.Get("a")
	assert.False(t, ok)
	assert.Empty(t, none.Keys(Succeeded))
}

// Keys of an interface type whose dynamic value cannot be hashed are reported by
// Validate instead of crashing AddNode.
func TestAddNodeUnhashableKey(t *testing.T) {
	g := New[any]()
	g.Add("a")
	g.Add([]int{1})
	g.Add("b", "a", map[string]int{})
	g.Add("c", "a")
	assert.Equal(t, 2, g.Len(), "the bad nodes are not added")
	err := g.Validate()
	assert.ErrorIs(t, err, ErrInvalidKey)
	var errs []*InvalidKeyError[any]
	for _, e := range joined(err) {
		var ke *InvalidKeyError[any]
		require.ErrorAs(t, e, &ke)
		errs = append(errs, ke)
	}
	require.Len(t, errs, 2)
	assert.Equal(t, "key", errs[0].Field)
	assert.Equal(t, "deps[1]", errs[1].Field)
	assert.Equal(t, "b", errs[1].Key)
	assert.Contains(t, errs[1].Error(), `depgraph: node "b": deps[1] "map[]": `)
	assert.Contains(t, errs[1].Error(), "unhashable")
	_, err = Run(t.Context(), g, func(context.Context, any) error { return nil }, Options[any]{})
	assert.ErrorIs(t, err, ErrInvalidKey)
}

func TestNewErrorsAreDistinct(t *testing.T) {
	errs := []error{
		&PanicError[int]{Key: 1, Callback: CallbackReady, Value: "x"},
		&ArgumentError{Func: "Run", Arg: "g", Reason: "is nil"},
		&InvalidKeyError[int]{Key: 1, Field: "key"},
	}
	sentinels := []error{ErrPanic, ErrInvalidArgument, ErrInvalidKey}
	others := []error{ErrCycle, ErrMissingDependency, ErrSelfDependency, ErrDuplicateNode, ErrNotReady}
	for i, err := range errs {
		for j, s := range sentinels {
			assert.Equal(t, i == j, errors.Is(err, s), "%v is %v", err, s)
		}
		for _, s := range others {
			assert.NotErrorIs(t, err, s)
		}
	}
	// A runtime error that caused a panic stays reachable.
	var re runtime.Error
	func() {
		defer func() { re, _ = recover().(runtime.Error) }()
		var m map[string]int
		m["x"]++
	}()
	assert.ErrorAs(t, &PanicError[int]{Value: re}, &re)
}

// FuzzRunHostile runs acyclic graphs whose node functions and callbacks panic, fail,
// or end their goroutine as the input says, and checks that Run always returns,
// leaves no goroutine behind, and reports exactly the nodes that had to fail.
func FuzzRunHostile(f *testing.F) {
	f.Add([]byte{4, 0, 1, 4, 3, 0}, byte(0), byte(0))
	f.Add([]byte{6, 1, 2, 3, 4, 5, 0, 1, 2, 2, 0}, byte(3), byte(1))
	f.Add([]byte{3, 5, 5, 5, 0, 1, 1, 2}, byte(1), byte(2))
	f.Add([]byte{8, 3, 3, 3, 3, 3, 3, 3, 3, 1, 0, 7, 6}, byte(9), byte(3))
	f.Fuzz(func(t *testing.T, data []byte, eventPanic, mode byte) {
		if len(data) == 0 {
			return
		}
		n := int(data[0])%8 + 1
		data = data[1:]
		behaviour := make([]byte, n)
		for k := 0; k < n && k < len(data); k++ {
			behaviour[k] = data[k] % 6
		}
		deps := make([][]int, n)
		for i := n; i+1 < len(data); i += 2 {
			k, d := int(data[i])%n, int(data[i+1])%n
			if d < k { // acyclic: dependencies come first
				deps[k] = append(deps[k], d)
			}
		}
		g := New[int]()
		for k := range n {
			g.Add(k, deps[k]...)
		}
		if g.Validate() != nil {
			return // a node listing the same dependency twice is fine; nothing else fails
		}
		running := goleak.IgnoreCurrent() // the fuzzing harness's own goroutines
		backoffPanics := mode&1 != 0
		var tries [8]atomic.Int32
		events := 0
		opts := Options[int]{
			Concurrency: int(mode>>1) % 4,
			Retries:     1,
			Backoff: func(int) time.Duration {
				if backoffPanics {
					panic("backoff")
				}
				return 0
			},
			Ready: func(_ context.Context, k int) error {
				switch behaviour[k] {
				case 4:
					panic("ready")
				case 5:
					runtime.Goexit()
				}
				return nil
			},
			Events: func(Event[int]) {
				events++
				if events == int(eventPanic) {
					panic("events")
				}
			},
		}
		res, err := runWithin(t, g, func(_ context.Context, k int) error {
			switch behaviour[k] {
			case 1:
				panic("function")
			case 2:
				runtime.Goexit()
			case 3:
				if tries[k].Add(1) == 1 {
					return errors.New("flaky")
				}
			}
			return nil
		}, opts)
		goleak.VerifyNone(t, running)

		want := make([]State, n)
		for k := range n {
			want[k] = Succeeded
			for _, d := range deps[k] {
				if want[d] != Succeeded {
					want[k] = Skipped
				}
			}
			if want[k] == Succeeded && (behaviour[k] == 1 || behaviour[k] == 2 || behaviour[k] == 4 ||
				behaviour[k] == 5 || behaviour[k] == 3 && backoffPanics) {
				want[k] = Failed
			}
		}
		for k, nr := range res.Nodes {
			require.Equal(t, want[k], nr.State, "node %d, behaviour %d", k, behaviour[k])
			if nr.State == Failed {
				require.ErrorIs(t, nr.Err, ErrPanic, "node %d", k)
			}
		}
		eventsPanicked := eventPanic > 0 && events >= int(eventPanic)
		require.Equal(t, slicesContain(want, Failed) || eventsPanicked, err != nil, "error: %v", err)
		if eventsPanicked {
			require.Equal(t, int(eventPanic), events, "no events after the panic")
			var pe *PanicError[int]
			require.ErrorAs(t, err, &pe)
		}
	})
}

func slicesContain(states []State, s State) bool {
	for _, x := range states {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzGraphAnyKeys builds graphs over keys of type any, some of which cannot be
// hashed, and checks that building, validating, exporting and running never panic
// and that every bad key is reported.
func FuzzGraphAnyKeys(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5})
	f.Add([]byte{9, 0, 0, 13, 7, 7, 2})
	f.Add([]byte{4, 4, 4, 8, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		key := func(b byte) any {
			switch b % 4 {
			case 0:
				return int(b / 4 % 4)
			case 1:
				return string(rune('a' + b/4%4))
			case 2:
				return []byte{b} // cannot be hashed
			}
			return struct{ A, B int }{int(b / 4 % 2), 1}
		}
		g := New[any]()
		bad := 0
		for i := 0; i+1 < len(data); i += 2 {
			k, d := key(data[i]), key(data[i+1])
			if data[i]%4 == 2 || data[i+1]%4 == 2 {
				bad++
			}
			g.Add(k, d)
		}
		err := g.Validate()
		invalid := 0
		for _, e := range joined(err) {
			var ke *InvalidKeyError[any]
			if errors.As(e, &ke) {
				invalid++
			}
		}
		require.Equal(t, bad, invalid)
		_, werr := g.Waves()
		require.Equal(t, err, werr)
		_ = g.DOT(nil)
		_ = g.Mermaid(nil)
		_ = g.Reverse().Validate()
		res, rerr := Run(t.Context(), g, func(context.Context, any) error { return nil }, Options[any]{})
		if err != nil {
			require.Equal(t, err, rerr)
			require.Nil(t, res)
			return
		}
		require.NoError(t, rerr)
		require.Len(t, res.Keys(Succeeded), g.Len())
	})
}
