package reconcile

import (
	"context"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/helmfleet/helmfleet/release"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// brokenKube is a Helm kube client, with every optional role, whose every
// method returns no result with errFailed, or panics when panics is set.
type brokenKube struct{ panics bool }

var errFailed = errors.New("backend failed")

func (b brokenKube) fail() error {
	if b.panics {
		panic("backend bug")
	}
	return errFailed
}

func (b brokenKube) Create(kube.ResourceList) (*kube.Result, error) { return nil, b.fail() }
func (b brokenKube) Wait(kube.ResourceList, time.Duration) error    { return b.fail() }
func (b brokenKube) WaitWithJobs(kube.ResourceList, time.Duration) error {
	return b.fail()
}
func (b brokenKube) Delete(kube.ResourceList) (*kube.Result, []error) {
	return nil, []error{b.fail()}
}
func (b brokenKube) WatchUntilReady(kube.ResourceList, time.Duration) error { return b.fail() }
func (b brokenKube) Update(_, _ kube.ResourceList, _ bool) (*kube.Result, error) {
	return nil, b.fail()
}
func (b brokenKube) Build(io.Reader, bool) (kube.ResourceList, error) { return nil, b.fail() }
func (b brokenKube) WaitAndGetCompletedPodPhase(string, time.Duration) (corev1.PodPhase, error) {
	return corev1.PodUnknown, b.fail()
}
func (b brokenKube) IsReachable() error                                   { return b.fail() }
func (b brokenKube) WaitForDelete(kube.ResourceList, time.Duration) error { return b.fail() }
func (b brokenKube) DeleteWithPropagationPolicy(kube.ResourceList, metav1.DeletionPropagation) (*kube.Result, []error) {
	return nil, []error{b.fail()}
}
func (b brokenKube) UpdateThreeWayMerge(_, _ kube.ResourceList, _ bool) (*kube.Result, error) {
	return nil, b.fail()
}
func (b brokenKube) GetPodList(string, metav1.ListOptions) (*corev1.PodList, error) {
	return nil, b.fail()
}
func (b brokenKube) OutputContainerLogsForPodList(*corev1.PodList, string, func(string, string, string) io.Writer) error {
	return b.fail()
}
func (b brokenKube) WaitContext(context.Context, kube.ResourceList, time.Duration, bool) error {
	return b.fail()
}

// noObjects reads nothing: the waits under test defer to WaitContext.
type noObjects struct{}

func (noObjects) Get(context.Context, release.ObjectRef) (*unstructured.Unstructured, error) {
	return nil, release.ErrNotFound
}
func (noObjects) List(context.Context, schema.GroupVersionKind, string, labels.Selector) ([]*unstructured.Unstructured, error) {
	return nil, nil
}

// TestContextClientResultsAndPanics checks every method Helm calls on the
// reconciler's kube client: Create, Update and Delete return a result
// Helm can read on every path (cancelled, failed, panicked), and a panic
// of the backend is a *CallbackPanicError naming the method and the
// cluster, on the goroutine that called.
func TestContextClientResultsAndPanics(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	type call struct {
		name string
		run  func(c *contextClient) (res *kube.Result, errs []error, hasResult bool)
	}
	one := func(res *kube.Result, err error) (*kube.Result, []error, bool) { return res, []error{err}, true }
	noResult := func(err error) (*kube.Result, []error, bool) { return nil, []error{err}, false }
	calls := []call{
		{"Create", func(c *contextClient) (*kube.Result, []error, bool) { return one(c.Create(nil)) }},
		{"Update", func(c *contextClient) (*kube.Result, []error, bool) { return one(c.Update(nil, nil, false)) }},
		{"UpdateThreeWayMerge", func(c *contextClient) (*kube.Result, []error, bool) {
			return one(c.UpdateThreeWayMerge(nil, nil, false))
		}},
		{"Delete", func(c *contextClient) (*kube.Result, []error, bool) {
			res, errs := c.Delete(nil)
			return res, errs, true
		}},
		{"DeleteWithPropagationPolicy", func(c *contextClient) (*kube.Result, []error, bool) {
			res, errs := c.DeleteWithPropagationPolicy(nil, metav1.DeletePropagationForeground)
			return res, errs, true
		}},
		{"IsReachable", func(c *contextClient) (*kube.Result, []error, bool) { return noResult(c.IsReachable()) }},
		{"Build", func(c *contextClient) (*kube.Result, []error, bool) {
			_, err := c.Build(strings.NewReader(""), false)
			return noResult(err)
		}},
		{"WaitContext", func(c *contextClient) (*kube.Result, []error, bool) { return noResult(c.Wait(nil, time.Second)) }},
		{"WatchUntilReady", func(c *contextClient) (*kube.Result, []error, bool) {
			return noResult(c.WatchUntilReady(nil, time.Second))
		}},
		{"WaitForDelete", func(c *contextClient) (*kube.Result, []error, bool) {
			return noResult(c.WaitForDelete(nil, time.Second))
		}},
		{"WaitAndGetCompletedPodPhase", func(c *contextClient) (*kube.Result, []error, bool) {
			_, err := c.WaitAndGetCompletedPodPhase("p", time.Second)
			return noResult(err)
		}},
		{"GetPodList", func(c *contextClient) (*kube.Result, []error, bool) {
			pods, err := c.GetPodList("ns", metav1.ListOptions{})
			assert.NotNil(t, pods)
			return noResult(err)
		}},
		{"OutputContainerLogsForPodList", func(c *contextClient) (*kube.Result, []error, bool) {
			return noResult(c.OutputContainerLogsForPodList(&corev1.PodList{}, "ns", nil))
		}},
	}
	for _, tc := range calls {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"failed", "panicked", "cancelled"} {
				c := &contextClient{Interface: brokenKube{panics: mode == "panicked"}, ctx: context.Background(), reader: noObjects{}, poll: time.Millisecond, cluster: "m1"}
				if mode == "cancelled" {
					c.ctx = cancelled
				}
				var (
					res       *kube.Result
					errs      []error
					hasResult bool
				)
				require.NotPanics(t, func() { res, errs, hasResult = tc.run(c) }, mode)
				if hasResult {
					assert.NotNil(t, res, "%s: Helm reads the result", mode)
				}
				err := errors.Join(errs...)
				require.Error(t, err, mode)
				switch mode {
				case "failed":
					assert.ErrorIs(t, err, errFailed)
				case "panicked":
					var pe *release.CallbackPanicError
					require.ErrorAs(t, err, &pe)
					assert.Equal(t, "Helm kube client "+tc.name+" of cluster m1", pe.Callback)
					assert.Equal(t, "Helm kube client "+tc.name+" of cluster m1 panicked: backend bug", pe.Error())
					assert.ErrorIs(t, err, release.ErrCallbackPanic)
				case "cancelled":
					// Every call that writes or waits fails at once; deletes
					// run (Helm cleans up), the rest do not block, and
					// WaitContext is handed the context itself.
					switch tc.name {
					case "Delete", "DeleteWithPropagationPolicy", "Build", "GetPodList", "OutputContainerLogsForPodList", "WaitContext":
						assert.ErrorIs(t, err, errFailed)
					default:
						assert.ErrorIs(t, err, context.Canceled)
					}
				}
			}
		})
	}
}

func TestContain(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name    string
		f       func() error
		want    string
		isPanic bool
		unwraps error
	}{
		{name: "returns", f: func() error { return nil }},
		{name: "error", f: func() error { return errFailed }, want: "backend failed"},
		{name: "panic", f: func() error { panic("boom") }, want: "cb panicked: boom", isPanic: true},
		{name: "runtime error", f: func() error {
			var m map[string]int
			m["x"] = 1
			return nil
		}, want: "cb panicked: assignment to entry in nil map", isPanic: true},
		{name: "panic(nil)", f: func() error { panic(nil) }, want: "cb panicked: panic called with nil argument", isPanic: true},
		{name: "Goexit", f: func() error { runtime.Goexit(); return nil }, want: "cb panicked: runtime.Goexit called (by t.FailNow, for one)", isPanic: true},
		{name: "long value is cut at a rune", f: func() error { panic(long) }, want: "cb panicked: " + strings.Repeat("é", 100) + "…", isPanic: true},
		{name: "error value unwraps", f: func() error { panic(errFailed) }, want: "cb panicked: backend failed", isPanic: true, unwraps: errFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := release.Contain("cb", tt.f)
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.want, err.Error())
			assert.Equal(t, tt.isPanic, errors.Is(err, release.ErrCallbackPanic))
			if tt.isPanic {
				var pe *release.CallbackPanicError
				require.ErrorAs(t, err, &pe)
				assert.NotEmpty(t, pe.Stack)
			}
			if tt.unwraps != nil {
				assert.ErrorIs(t, err, tt.unwraps)
			}
		})
	}
}
