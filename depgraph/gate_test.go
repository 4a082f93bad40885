package depgraph

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// outcomes renders the dependencies a gate was given, "db=failed,ns=succeeded".
func outcomes(deps []NodeResult[string]) string {
	var s []string
	for _, d := range deps {
		s = append(s, d.Key+"="+d.State.String())
	}
	return strings.Join(s, ",")
}

func TestRunGate(t *testing.T) {
	boom := errors.New("boom")
	refuse := errors.New("refused")
	// Graph: a fails; b depends on a; c on b; d on nothing; e on d and a.
	type want struct {
		states map[string]State
		calls  []string // gate calls, "node: deps"
		cause  map[string]string
	}
	for name, tc := range map[string]struct {
		gate func(key string, deps []NodeResult[string]) error
		want want
	}{
		"default rule by hand": {
			gate: func(_ string, deps []NodeResult[string]) error {
				for _, d := range deps {
					if d.State != Succeeded {
						return fmt.Errorf("dependency %s %s", d.Key, d.State)
					}
				}
				return nil
			},
			want: want{
				states: map[string]State{"a": Failed, "b": Skipped, "c": Skipped, "d": Succeeded, "e": Skipped},
				calls:  []string{"b: a=failed", "c: b=skipped", "e: d=succeeded,a=failed"},
				cause:  map[string]string{"b": "a", "c": "b", "e": "a"},
			},
		},
		"proceed despite a failed dependency": {
			gate: func(string, []NodeResult[string]) error { return nil },
			want: want{
				states: map[string]State{"a": Failed, "b": Succeeded, "c": Succeeded, "d": Succeeded, "e": Succeeded},
				calls:  []string{"b: a=failed", "c: b=succeeded", "e: d=succeeded,a=failed"},
			},
		},
		"refuse succeeded dependencies": {
			gate: func(key string, _ []NodeResult[string]) error {
				if key == "e" {
					return nil
				}
				return refuse
			},
			want: want{
				states: map[string]State{"a": Failed, "b": Skipped, "c": Skipped, "d": Succeeded, "e": Succeeded},
				calls:  []string{"b: a=failed", "c: b=skipped", "e: d=succeeded,a=failed"},
				cause:  map[string]string{"b": "a", "c": "b"},
			},
		},
		"panic skips only its node": {
			gate: func(key string, _ []NodeResult[string]) error {
				if key == "b" {
					panic("gate bug")
				}
				return nil
			},
			want: want{
				states: map[string]State{"a": Failed, "b": Skipped, "c": Succeeded, "d": Succeeded, "e": Succeeded},
				calls:  []string{"b: a=failed", "c: b=skipped", "e: d=succeeded,a=failed"},
				cause:  map[string]string{"b": "a"},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := build(e("a"), e("b", "a"), e("c", "b"), e("d"), e("e", "d", "a"))
			var calls []string
			res, err := Run(t.Context(), g, func(_ context.Context, k string) error {
				if k == "a" {
					return boom
				}
				return nil
			}, Options[string]{Concurrency: 1, Clock: newFakeClock(),
				Gate: func(ctx context.Context, key string, deps []NodeResult[string]) error {
					require.NoError(t, ctx.Err())
					calls = append(calls, key+": "+outcomes(deps))
					return tc.gate(key, deps)
				}})
			goleak.VerifyNone(t)
			var ne *NodeError[string]
			require.ErrorAs(t, err, &ne)
			assert.Equal(t, "a", ne.Key, "only a failed")
			assert.Equal(t, tc.want.states, states(res))
			assert.Equal(t, tc.want.calls, calls)
			for _, n := range res.Nodes {
				if n.State != Skipped {
					continue
				}
				assert.Equal(t, tc.want.cause[n.Key], n.Cause, n.Key)
				assert.ErrorIs(t, n.Err, ErrGated, n.Key)
				var ge *GateError[string]
				require.ErrorAs(t, n.Err, &ge, n.Key)
				assert.Equal(t, n.Key, ge.Key)
				assert.Zero(t, n.Attempts, n.Key)
			}
		})
	}
}

func TestRunGateErrorAndEvents(t *testing.T) {
	g := build(e("a"), e("b", "a"))
	rec := &recorder[string]{}
	refuse := errors.New("readyExpr refused")
	res, err := Run(t.Context(), g, func(context.Context, string) error { return nil },
		Options[string]{Events: rec.record, Clock: newFakeClock(),
			Gate: func(context.Context, string, []NodeResult[string]) error { return refuse }})
	require.NoError(t, err, "a node a gate skipped is no failure of the run")
	b, _ := res.Get("b")
	assert.Equal(t, Skipped, b.State)
	assert.Equal(t, "b", b.Cause, "every dependency succeeded: the node itself")
	assert.ErrorIs(t, b.Err, refuse)
	assert.EqualError(t, b.Err, `depgraph: node "b": skipped by Options.Gate: readyExpr refused`)
	assert.Equal(t, []string{"started a", "succeeded a", "skipped b (cause b)"}, rec.lines())
	assert.ErrorIs(t, rec.events[2].Err, refuse)

	_, err = Run(t.Context(), g, func(context.Context, string) error { return nil },
		Options[string]{Gate: func(context.Context, string, []NodeResult[string]) error { panic("gate bug") }})
	require.NoError(t, err)
}

func TestRunGatePanicNamesTheGate(t *testing.T) {
	res, _ := Run(t.Context(), build(e("a"), e("b", "a")), func(context.Context, string) error { return nil },
		Options[string]{Gate: func(context.Context, string, []NodeResult[string]) error { panic("gate bug") }})
	b, _ := res.Get("b")
	var pe *PanicError[string]
	require.ErrorAs(t, b.Err, &pe)
	assert.Equal(t, CallbackGate, pe.Callback)
	assert.Equal(t, "b", pe.Key)
}

func TestRunGateNotCalledAfterCancel(t *testing.T) {
	// a fails after the cancellation: b, waiting for it, stays NotStarted and the
	// gate is never asked.
	g := build(e("a"), e("b", "a"))
	ctx, cancel := context.WithCancel(t.Context())
	res, err := Run(ctx, g, func(ctx context.Context, _ string) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}, Options[string]{Gate: func(context.Context, string, []NodeResult[string]) error {
		panic("not called")
	}})
	goleak.VerifyNone(t)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, map[string]State{"a": Failed, "b": NotStarted}, states(res))
}

func TestRunGateWaitsForEveryDependency(t *testing.T) {
	// a fails at once while slow is still running: without a gate c would skip
	// then; with one it is asked only once slow finished.
	g := build(e("a"), e("slow"), e("c", "a", "slow"))
	release := make(chan struct{})
	var seen string
	res, err := Run(t.Context(), g, func(_ context.Context, k string) error {
		switch k {
		case "a":
			defer close(release)
			return errors.New("boom")
		case "slow":
			<-release
		}
		return nil
	}, Options[string]{Gate: func(_ context.Context, _ string, deps []NodeResult[string]) error {
		seen = outcomes(deps)
		return nil
	}})
	require.Error(t, err)
	assert.Equal(t, "a=failed,slow=succeeded", seen)
	assert.Equal(t, map[string]State{"a": Failed, "slow": Succeeded, "c": Succeeded}, states(res))
}
