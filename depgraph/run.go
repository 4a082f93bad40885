package depgraph

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// Func does the work of one node. It must return promptly once ctx is cancelled: Run
// waits for every function it started before it returns.
type Func[K comparable] func(ctx context.Context, key K) error

// Options tunes Run. The zero value runs every node once, with no concurrency limit,
// no readiness check and no events, on the system clock.
type Options[K comparable] struct {
	// Concurrency bounds how many node functions run at once; 0 or less means no
	// bound.
	Concurrency int
	// GroupConcurrency bounds how many nodes of any one group (Node.Group) run at
	// once, for example per cluster; 0 or less means no bound. Nodes without a group
	// are only bound by Concurrency.
	GroupConcurrency int
	// GroupLimits overrides GroupConcurrency for the named groups; 0 or less means no
	// bound for that group.
	GroupLimits map[string]int
	// Retries is how many more times a failing node function is called before the
	// node fails; a negative value retries until the context is cancelled. A node
	// keeps its concurrency slot while it waits to retry.
	Retries int
	// Backoff returns the wait before retry number attempt (1 for the first retry).
	// Nil means ExponentialBackoff(time.Second, time.Minute). If it panics, the node
	// fails with a *PanicError.
	Backoff func(attempt int) time.Duration
	// Ready, if set, is called after a node's function succeeded and must block until
	// the node is ready (nil) or will not become ready (an error, which fails the
	// node). Dependents start only once it returned nil. The node's concurrency slot
	// is free while Ready waits: waiting for a rollout is not work. If it panics,
	// the node fails with a *PanicError.
	Ready func(ctx context.Context, key K) error
	// Events, if set, receives progress events. Calls are made one at a time, in the
	// order things happen (a dependent's EventStarted always follows its dependencies'
	// EventSucceeded), while the scheduler's lock is held: keep it quick, do not call
	// Run from it, and do not end its goroutine (runtime.Goexit, t.FailNow). If it
	// panics, the run goes on without further events and Run's error includes a
	// *PanicError naming the node of the event.
	Events func(Event[K])
	// Clock is the time source; nil means SystemClock(). If Now panics, the run goes
	// on with the last time Now returned and Run's error includes a *PanicError; if
	// After panics, the node waiting to retry fails with one.
	Clock Clock
	// Gate, if set, lets every node that has dependencies decide about their
	// outcomes instead of the default rule (start once all succeeded, skip the
	// moment one failed). It is called once, when the node's last dependency
	// finished — succeeded, failed or was skipped — with their results in the
	// order of Node.Deps (duplicates removed). A nil error starts the node even if
	// a dependency failed; an error skips it: State Skipped, Err a *GateError
	// wrapping the error, Cause the first dependency that did not succeed (the node
	// itself if every one did). A failure then no longer skips dependents at once:
	// each of them is asked when its dependencies are done. Under a cancelled
	// context Gate is not called and the waiting nodes stay NotStarted. Calls are
	// made one at a time while the scheduler's lock is held: keep it quick, and do
	// not call Run from it. If it panics, the node is skipped with a *GateError
	// wrapping a *PanicError.
	Gate func(ctx context.Context, key K, deps []NodeResult[K]) error
}

// Run runs fn for every node of g, each node as soon as all of its dependencies
// succeeded (no waiting for a whole wave), within the concurrency bounds of opts.
// When several nodes can start, the one heading the longest chain of dependents goes
// first, then the one added first.
//
// A failed node makes its transitive dependents Skipped; every other node goes on.
// When ctx is cancelled, no further node starts, running functions see the cancelled
// context, and Run returns once they have returned, marking the nodes that never ran
// NotStarted.
//
// No panic of fn or of a callback of opts escapes: each becomes a *PanicError that
// names the node and the callback. A panicking fn or Ready fails its node; see
// Options for the others. A fn or Ready that ends its goroutine with
// runtime.Goexit (as t.FailNow does) fails its node the same way.
//
// A nil ctx, g or fn is an *ArgumentError. If g is invalid, Run returns Validate's
// error, a nil Result, and runs nothing. Otherwise it returns a Result for every node
// and an error that joins the context's error when nodes were left NotStarted, a
// *NodeError per failed node, in graph order, and a *PanicError per panic of
// Options.Events or Options.Clock.Now; the error is nil when every node succeeded and
// no callback panicked.
func Run[K comparable](ctx context.Context, g *Graph[K], fn Func[K], opts Options[K]) (*Result[K], error) {
	switch {
	case ctx == nil:
		return nil, &ArgumentError{Func: "Run", Arg: "ctx", Reason: "is nil"}
	case g == nil:
		return nil, &ArgumentError{Func: "Run", Arg: "g", Reason: "is nil"}
	case fn == nil:
		return nil, &ArgumentError{Func: "Run", Arg: "fn", Reason: "is nil"}
	}
	c := g.compile()
	if c.err != nil {
		return nil, c.err
	}
	r := newRunner(ctx, g, c, fn, opts)
	if len(g.nodes) == 0 {
		return r.res, nil
	}
	r.mu.Lock()
	r.cancelled = ctx.Err() != nil // start nothing under a context that is already done
	for i := range g.nodes {
		if r.pending[i] == 0 {
			r.phase[i] = phaseReady
			r.ready.push(int32(i))
		}
	}
	var now time.Time
	if !r.cancelled && r.ready.len() > 0 {
		now = r.now(r.ready.items[0]) // the node that starts first
	}
	r.dispatchLocked(now)
	r.mu.Unlock()

	select {
	case <-r.done:
	case <-ctx.Done():
		r.mu.Lock()
		r.cancelled = true
		r.mu.Unlock()
	}
	r.wg.Wait()
	return r.res, r.err(ctx)
}

type phase uint8

const (
	phaseWaiting phase = iota // dependencies outstanding
	phaseReady                // may start, queued
	phaseRunning              // function running or waiting to retry
	phaseApplied              // function succeeded, waiting for Options.Ready
	phaseSucceeded
	phaseFailed
	phaseSkipped
)

type runner[K comparable] struct {
	ctx     context.Context
	g       *Graph[K]
	c       *compiled
	fn      Func[K]
	opts    Options[K]
	clock   Clock
	backoff func(int) time.Duration
	limit   int
	glimit  []int // per group index; 0 = none
	res     *Result[K]
	done    chan struct{}
	wg      sync.WaitGroup

	mu        sync.Mutex
	phase     []phase
	pending   []int32
	ready     queue
	parked    []queue // per group: ready but the group is full
	running   int
	grunning  []int
	left      int // nodes not yet succeeded, failed or skipped
	cancelled bool
	// Once Options.Events or Clock.Now panicked, they are not called again: the
	// events would be out of order, and a clock that panics once will again.
	eventsOff bool
	clockOff  bool
	lastNow   time.Time // what Clock.Now last returned
	// panics are the *PanicErrors of callbacks that failed no node.
	panics []error
}

func newRunner[K comparable](ctx context.Context, g *Graph[K], c *compiled, fn Func[K], opts Options[K]) *runner[K] {
	n := len(g.nodes)
	r := &runner[K]{
		ctx:      ctx,
		g:        g,
		c:        c,
		fn:       fn,
		opts:     opts,
		clock:    opts.Clock,
		backoff:  opts.Backoff,
		limit:    max(opts.Concurrency, 0),
		glimit:   make([]int, len(c.groups)),
		res:      newResult(g),
		done:     make(chan struct{}),
		phase:    make([]phase, n),
		pending:  make([]int32, n),
		parked:   make([]queue, len(c.groups)),
		grunning: make([]int, len(c.groups)),
		left:     n,
	}
	if r.clock == nil {
		r.clock = SystemClock()
	}
	if r.backoff == nil {
		r.backoff = ExponentialBackoff(time.Second, time.Minute)
	}
	for gi, name := range c.groups {
		r.glimit[gi] = max(opts.GroupConcurrency, 0)
		if l, ok := opts.GroupLimits[name]; ok {
			r.glimit[gi] = max(l, 0)
		}
		r.parked[gi].height = c.height
	}
	r.ready.height = c.height
	for i := range n {
		r.pending[i] = int32(len(c.deps[i]))
	}
	return r
}

// errGoexit is the Value of a *PanicError for a callback that called
// runtime.Goexit.
var errGoexit = errors.New("runtime.Goexit called (by t.FailNow, for one)")

// work runs node i and then, while there is work and room, the next startable node, so
// that a finishing node hands its slot on without a goroutine switch.
func (r *runner[K]) work(i int32) {
	// What runs now, for a callback that ends the goroutine with runtime.Goexit:
	// panics are recovered where they happen, but Goexit cannot be stopped, so
	// the node is finished here and its successor handed to a new goroutine, or
	// Run would wait for it forever.
	var (
		attempts  int
		holdsSlot bool
		stage     Callback
		finished  bool
	)
	defer func() {
		if !finished {
			if p := recover(); p != nil {
				panic(p) // a bug of this package, not of a callback: let it crash
			}
			r.mu.Lock()
			key := r.g.nodes[i].Key
			next := r.finishLocked(i, max(attempts, 1), r.panicError(key, stage, errGoexit), holdsSlot)
			if next >= 0 {
				r.wg.Add(1)
				go r.work(next)
			}
			r.mu.Unlock()
		}
		r.wg.Done()
	}()
	for i >= 0 {
		holdsSlot, attempts = true, 0
		err := r.attempt(i, &attempts, &stage)
		if err == nil && r.opts.Ready != nil {
			r.mu.Lock()
			r.appliedLocked(i, attempts)
			r.mu.Unlock()
			holdsSlot, stage = false, CallbackReady
			err = r.checkReady(r.g.nodes[i].Key)
			r.mu.Lock()
			i = r.finishLocked(i, attempts, err, false)
			r.mu.Unlock()
			continue
		}
		r.mu.Lock()
		i = r.finishLocked(i, attempts, err, true)
		r.mu.Unlock()
	}
	finished = true
}

// attempt calls the node's function until it succeeds or retries are exhausted,
// counting the calls in *attempts and saying in *stage which callback runs.
func (r *runner[K]) attempt(i int32, attempts *int, stage *Callback) error {
	key := r.g.nodes[i].Key
	for n := 1; ; n++ {
		*attempts, *stage = n, CallbackFunc
		err := r.call(key)
		if err == nil || (r.opts.Retries >= 0 && n > r.opts.Retries) || r.ctx.Err() != nil {
			return err
		}
		*stage = CallbackBackoff
		delay, perr := r.delay(key, n)
		if perr != nil {
			return errors.Join(err, perr)
		}
		if r.opts.Events != nil {
			r.mu.Lock()
			now := r.now(i)
			r.emit(Event[K]{Kind: EventRetrying, Key: key, Group: r.g.nodes[i].Group, Time: now,
				Elapsed: now.Sub(r.res.Nodes[i].Started), Attempt: n, Delay: delay, Err: err})
			r.mu.Unlock()
		}
		*stage = CallbackClockAfter
		after, perr := r.after(key, delay)
		if perr != nil {
			return errors.Join(err, perr)
		}
		select {
		case <-after:
		case <-r.ctx.Done():
			return errors.Join(err, context.Cause(r.ctx))
		}
	}
}

func (r *runner[K]) call(key K) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.panicError(key, CallbackFunc, p)
		}
	}()
	return r.fn(r.ctx, key)
}

func (r *runner[K]) checkReady(key K) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.panicError(key, CallbackReady, p)
		}
	}()
	if err := r.opts.Ready(r.ctx, key); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return nil
}

func (r *runner[K]) delay(key K, attempt int) (d time.Duration, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.panicError(key, CallbackBackoff, p)
		}
	}()
	return r.backoff(attempt), nil
}

func (r *runner[K]) after(key K, d time.Duration) (ch <-chan time.Time, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.panicError(key, CallbackClockAfter, p)
		}
	}()
	return r.clock.After(d), nil
}

// now returns the clock's time for an event of node i. Called with r.mu held.
func (r *runner[K]) now(i int32) (t time.Time) {
	if r.clockOff {
		return r.lastNow
	}
	defer func() {
		if p := recover(); p != nil {
			r.clockOff = true
			r.panics = append(r.panics, r.panicError(r.g.nodes[i].Key, CallbackClockNow, p))
			t = r.lastNow
		}
	}()
	r.lastNow = r.clock.Now()
	return r.lastNow
}

func (r *runner[K]) panicError(key K, cb Callback, p any) *PanicError[K] {
	return &PanicError[K]{Key: key, Callback: cb, Value: p, Stack: debug.Stack()}
}

// emit sends e to Options.Events. Called with r.mu held; a panic of the callback is
// recovered here, so the scheduler's state stays whole.
func (r *runner[K]) emit(e Event[K]) {
	if r.opts.Events == nil || r.eventsOff {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			r.eventsOff = true
			r.panics = append(r.panics, r.panicError(e.Key, CallbackEvents, p))
		}
	}()
	r.opts.Events(e)
}

// startLocked takes a slot for i.
func (r *runner[K]) startLocked(i int32, now time.Time) {
	r.running++
	if gi := r.c.group[i]; gi >= 0 {
		r.grunning[gi]++
	}
	r.phase[i] = phaseRunning
	r.res.Nodes[i].Started = now
	r.emit(Event[K]{Kind: EventStarted, Key: r.g.nodes[i].Key, Group: r.g.nodes[i].Group, Time: now})
}

// releaseLocked frees i's slot and lets one parked node of its group queue again.
func (r *runner[K]) releaseLocked(i int32) {
	r.running--
	if gi := r.c.group[i]; gi >= 0 {
		r.grunning[gi]--
		if r.parked[gi].len() > 0 {
			r.ready.push(r.parked[gi].pop())
		}
	}
}

// nextLocked pops the best queued node that may start now, or -1.
func (r *runner[K]) nextLocked() int32 {
	if r.cancelled {
		return -1
	}
	for r.ready.len() > 0 {
		if r.limit > 0 && r.running >= r.limit {
			return -1
		}
		i := r.ready.pop()
		if gi := r.c.group[i]; gi >= 0 && r.glimit[gi] > 0 && r.grunning[gi] >= r.glimit[gi] {
			r.parked[gi].push(i)
			continue
		}
		return i
	}
	return -1
}

// dispatchLocked starts a goroutine for every node that may start now.
func (r *runner[K]) dispatchLocked(now time.Time) {
	for i := r.nextLocked(); i >= 0; i = r.nextLocked() {
		r.startLocked(i, now)
		r.wg.Add(1)
		go r.work(i)
	}
}

func (r *runner[K]) appliedLocked(i int32, attempts int) {
	now := r.now(i)
	r.releaseLocked(i)
	r.phase[i] = phaseApplied
	nr := &r.res.Nodes[i]
	nr.Applied, nr.Attempts = now, attempts
	r.emit(Event[K]{Kind: EventApplied, Key: nr.Key, Group: nr.Group, Time: now,
		Elapsed: now.Sub(nr.Started), Attempt: attempts})
	r.dispatchLocked(now)
}

// finishLocked records the outcome of i, releases or skips its dependents, and returns
// the next node for the calling goroutine (already started), or -1.
func (r *runner[K]) finishLocked(i int32, attempts int, err error, holdsSlot bool) int32 {
	now := r.now(i)
	// A function may see the cancellation before Run's goroutine does; from here on
	// the run counts as cancelled either way.
	r.cancelled = r.cancelled || r.ctx.Err() != nil
	if holdsSlot {
		r.releaseLocked(i)
	}
	nr := &r.res.Nodes[i]
	nr.Finished, nr.Attempts = now, attempts
	ev := Event[K]{Key: nr.Key, Group: nr.Group, Time: now, Elapsed: now.Sub(nr.Started), Attempt: attempts}
	r.left--
	if err == nil {
		r.phase[i] = phaseSucceeded
		nr.State = Succeeded
		if nr.Applied.IsZero() {
			nr.Applied = now
		}
		ev.Kind = EventSucceeded
		r.emit(ev)
		r.releaseDependentsLocked(i, now)
	} else {
		r.phase[i] = phaseFailed
		nr.State, nr.Err = Failed, err
		ev.Kind, ev.Err = EventFailed, err
		r.emit(ev)
		switch {
		case r.cancelled:
		case r.opts.Gate != nil:
			r.releaseDependentsLocked(i, now)
		default:
			r.skipLocked(i, now)
		}
	}
	if r.left == 0 {
		close(r.done)
	}
	next := r.nextLocked()
	if next >= 0 {
		r.startLocked(next, now)
	}
	r.dispatchLocked(now)
	return next
}

// releaseDependentsLocked counts node i, finished, off its dependents' pending
// dependencies and queues each dependent whose last one it was, asking
// Options.Gate first if set. A node the gate skips is finished in turn.
func (r *runner[K]) releaseDependentsLocked(i int32, now time.Time) {
	stack := []int32{i}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range r.c.dependents[v] {
			r.pending[d]--
			if r.pending[d] != 0 || r.phase[d] != phaseWaiting {
				continue
			}
			if r.opts.Gate == nil || r.cancelled {
				r.phase[d] = phaseReady
				r.ready.push(d)
				continue
			}
			deps := make([]NodeResult[K], len(r.c.deps[d]))
			cause := r.g.nodes[d].Key
			found := false
			for j, w := range r.c.deps[d] {
				deps[j] = r.res.Nodes[w]
				if !found && deps[j].State != Succeeded {
					cause, found = deps[j].Key, true
				}
			}
			err := r.gate(r.g.nodes[d].Key, deps)
			if err == nil {
				r.phase[d] = phaseReady
				r.ready.push(d)
				continue
			}
			r.phase[d] = phaseSkipped
			r.left--
			nr := &r.res.Nodes[d]
			nr.State, nr.Cause, nr.Finished = Skipped, cause, now
			nr.Err = &GateError[K]{Key: nr.Key, Err: err}
			r.emit(Event[K]{Kind: EventSkipped, Key: nr.Key, Group: nr.Group, Time: now, Cause: cause, Err: nr.Err})
			stack = append(stack, d)
		}
	}
}

// gate calls Options.Gate for key, recovering a panic as a *PanicError.
func (r *runner[K]) gate(key K, deps []NodeResult[K]) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = r.panicError(key, CallbackGate, p)
		}
	}()
	return r.opts.Gate(r.ctx, key, deps)
}

// skipLocked marks every node that transitively depends on the failed node cause as
// Skipped, unless it already is.
func (r *runner[K]) skipLocked(cause int32, now time.Time) {
	causeKey := r.g.nodes[cause].Key
	stack := []int32{cause}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range r.c.dependents[v] {
			if r.phase[d] != phaseWaiting {
				continue // already skipped through another path
			}
			r.phase[d] = phaseSkipped
			r.left--
			nr := &r.res.Nodes[d]
			nr.State, nr.Cause, nr.Finished = Skipped, causeKey, now
			r.emit(Event[K]{Kind: EventSkipped, Key: nr.Key, Group: nr.Group, Time: now, Cause: causeKey})
			stack = append(stack, d)
		}
	}
}

// err builds Run's error once every goroutine has returned.
func (r *runner[K]) err(ctx context.Context) error {
	var errs []error
	notStarted := 0
	for _, n := range r.res.Nodes {
		if n.State == NotStarted {
			notStarted++
		}
	}
	if notStarted > 0 {
		errs = append(errs, fmt.Errorf("depgraph: run cancelled with %d of %d nodes not started: %w",
			notStarted, len(r.res.Nodes), context.Cause(ctx)))
	}
	for _, n := range r.res.Nodes {
		if n.State == Failed {
			errs = append(errs, &NodeError[K]{Key: n.Key, Err: n.Err})
		}
	}
	errs = append(errs, r.panics...)
	return errors.Join(errs...)
}

// queue is a binary heap of node indices: the greatest height first, then the lowest
// index.
type queue struct {
	items  []int32
	height []int32
}

func (q *queue) len() int { return len(q.items) }

func (q *queue) before(a, b int32) bool {
	ha, hb := q.height[a], q.height[b]
	return ha > hb || (ha == hb && a < b)
}

func (q *queue) push(i int32) {
	q.items = append(q.items, i)
	j := len(q.items) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !q.before(q.items[j], q.items[p]) {
			break
		}
		q.items[j], q.items[p] = q.items[p], q.items[j]
		j = p
	}
}

func (q *queue) pop() int32 {
	top := q.items[0]
	last := len(q.items) - 1
	q.items[0] = q.items[last]
	q.items = q.items[:last]
	j := 0
	for {
		l := 2*j + 1
		if l >= last {
			break
		}
		m := l
		if r := l + 1; r < last && q.before(q.items[r], q.items[l]) {
			m = r
		}
		if !q.before(q.items[m], q.items[j]) {
			break
		}
		q.items[j], q.items[m] = q.items[m], q.items[j]
		j = m
	}
	return top
}
