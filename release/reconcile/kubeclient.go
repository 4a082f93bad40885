package reconcile

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/release"
	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// contextClient wraps the kube client of a Helm action configuration so
// that Helm's actions, which take no context, observe the reconcile's
// context: every call into the cluster fails at once after cancellation,
// so Helm records the release as failed before the action returns and
// nothing is left pending. It also replaces Helm's readiness checks with
// kstatus over the cluster's ObjectReader, the same rules on every
// backend, and says which objects were not ready and why.
//
// Helm calls its kube client on goroutines of its own, where a panic
// ends the process, and reads the results of Create, Update and Delete
// even when they fail (an upgrade's cleanup reads the objects Update
// created): every call of the backend goes through Contain, so a panic
// of the backend is an error, and every result is non-nil.
type contextClient struct {
	kube.Interface
	ctx     context.Context
	reader  release.ObjectReader
	poll    time.Duration
	cluster string
	// judge decides, before kstatus, the objects the Release's
	// spec.healthCheckExprs check (nil: none).
	judge release.Judge
}

// judgedWaiter is an optional role of a ContextWaiter that waits with a
// judge: the spec.healthCheckExprs of the Release whose objects it waits
// for.
type judgedWaiter interface {
	WaitJudged(ctx context.Context, resources kube.ResourceList, timeout time.Duration, jobs bool, judge release.Judge) error
}

var (
	_ kube.InterfaceExt                 = (*contextClient)(nil)
	_ kube.InterfaceDeletionPropagation = (*contextClient)(nil)
	_ kube.InterfaceLogs                = (*contextClient)(nil)
	_ kube.InterfaceThreeWayMerge       = (*contextClient)(nil)
)

func (c *contextClient) check() error {
	if err := c.ctx.Err(); err != nil {
		return fmt.Errorf("cluster %s: %w", c.cluster, err)
	}
	return nil
}

// call runs one method of the backend, containing its panics.
func (c *contextClient) call(method string, f func() error) error {
	return release.Contain("Helm kube client "+method+" of cluster "+c.cluster, f)
}

// result is res, or an empty result when the backend returned none:
// Helm dereferences it.
func result(res *kube.Result) *kube.Result {
	if res == nil {
		return &kube.Result{}
	}
	return res
}

// IsReachable fails after cancellation, else asks the backend.
func (c *contextClient) IsReachable() error {
	if err := c.check(); err != nil {
		return err
	}
	return c.call("IsReachable", c.Interface.IsReachable)
}

// Build decodes a manifest through the backend.
func (c *contextClient) Build(reader io.Reader, validate bool) (kube.ResourceList, error) {
	var rl kube.ResourceList
	err := c.call("Build", func() (err error) {
		rl, err = c.Interface.Build(reader, validate)
		return err
	})
	return rl, err
}

// Create fails after cancellation, else creates through the backend.
func (c *contextClient) Create(resources kube.ResourceList) (*kube.Result, error) {
	if err := c.check(); err != nil {
		return &kube.Result{}, err
	}
	var res *kube.Result
	err := c.call("Create", func() (err error) {
		res, err = c.Interface.Create(resources)
		return err
	})
	return result(res), err
}

// Update fails after cancellation, else updates through the backend.
func (c *contextClient) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	return c.update("Update", original, target, force, c.Interface.Update)
}

// UpdateThreeWayMerge is the backend's when it has one, else Update.
func (c *contextClient) UpdateThreeWayMerge(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	if m, ok := c.Interface.(kube.InterfaceThreeWayMerge); ok {
		return c.update("UpdateThreeWayMerge", original, target, force, m.UpdateThreeWayMerge)
	}
	return c.Update(original, target, force)
}

func (c *contextClient) update(method string, original, target kube.ResourceList, force bool, f func(original, target kube.ResourceList, force bool) (*kube.Result, error)) (*kube.Result, error) {
	if err := c.check(); err != nil {
		return &kube.Result{}, err
	}
	var res *kube.Result
	err := c.call(method, func() (err error) {
		res, err = f(original, target, force)
		return err
	})
	return result(res), err
}

// Delete deletes through the backend (also after cancellation: Helm
// deletes to clean up, and a half-done cleanup helps no one).
func (c *contextClient) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	return c.delete("Delete", func() (*kube.Result, []error) { return c.Interface.Delete(resources) })
}

// DeleteWithPropagationPolicy deletes with policy when the backend can.
func (c *contextClient) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	if d, ok := c.Interface.(kube.InterfaceDeletionPropagation); ok {
		return c.delete("DeleteWithPropagationPolicy", func() (*kube.Result, []error) { return d.DeleteWithPropagationPolicy(resources, policy) })
	}
	return c.Delete(resources)
}

func (c *contextClient) delete(method string, f func() (*kube.Result, []error)) (*kube.Result, []error) {
	var (
		res  *kube.Result
		errs []error
	)
	if err := c.call(method, func() error {
		res, errs = f()
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	return result(res), errs
}

// WaitForDelete waits when the backend can, until ctx is done.
func (c *contextClient) WaitForDelete(resources kube.ResourceList, timeout time.Duration) error {
	if err := c.check(); err != nil {
		return err
	}
	if w, ok := c.Interface.(kube.InterfaceExt); ok {
		return c.call("WaitForDelete", func() error { return w.WaitForDelete(resources, timeout) })
	}
	return nil
}

// GetPodList lists Pods when the backend can.
func (c *contextClient) GetPodList(namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	l, ok := c.Interface.(kube.InterfaceLogs)
	if !ok {
		return &corev1.PodList{}, nil
	}
	var pods *corev1.PodList
	err := c.call("GetPodList", func() (err error) {
		pods, err = l.GetPodList(namespace, opts)
		return err
	})
	if pods == nil {
		pods = &corev1.PodList{}
	}
	return pods, err
}

// OutputContainerLogsForPodList writes logs when the backend can.
func (c *contextClient) OutputContainerLogsForPodList(pods *corev1.PodList, namespace string, w func(namespace, pod, container string) io.Writer) error {
	if l, ok := c.Interface.(kube.InterfaceLogs); ok {
		return c.call("OutputContainerLogsForPodList", func() error { return l.OutputContainerLogsForPodList(pods, namespace, w) })
	}
	return nil
}

// Wait waits until every resource but Jobs is Current by the judge or
// kstatus.
func (c *contextClient) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait(resources, timeout, false)
}

// WaitWithJobs waits until every resource, Jobs included, is Current.
func (c *contextClient) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return c.wait(resources, timeout, true)
}

// WatchUntilReady waits for hooks; it is the backend's, bounded by ctx.
func (c *contextClient) WatchUntilReady(resources kube.ResourceList, timeout time.Duration) error {
	if err := c.check(); err != nil {
		return err
	}
	return c.call("WatchUntilReady", func() error { return c.Interface.WatchUntilReady(resources, timeout) })
}

// WaitAndGetCompletedPodPhase is the backend's, after a check of ctx.
func (c *contextClient) WaitAndGetCompletedPodPhase(name string, timeout time.Duration) (corev1.PodPhase, error) {
	if err := c.check(); err != nil {
		return corev1.PodUnknown, err
	}
	phase := corev1.PodUnknown
	err := c.call("WaitAndGetCompletedPodPhase", func() (err error) {
		phase, err = c.Interface.WaitAndGetCompletedPodPhase(name, timeout)
		return err
	})
	return phase, err
}

func (c *contextClient) wait(resources kube.ResourceList, timeout time.Duration, jobs bool) error {
	if w, ok := c.Interface.(judgedWaiter); ok {
		return c.call("WaitJudged", func() error { return w.WaitJudged(c.ctx, resources, timeout, jobs, c.judge) })
	}
	if w, ok := c.Interface.(release.ContextWaiter); ok {
		if c.judge != nil {
			return fmt.Errorf("cluster %s: wait: spec.healthCheckExprs: the cluster's kube client (%T) waits itself and cannot evaluate CEL health checks", c.cluster, c.Interface)
		}
		return c.call("WaitContext", func() error { return w.WaitContext(c.ctx, resources, timeout, jobs) })
	}
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	var refs []release.ObjectRef
	for _, info := range resources {
		ref := release.RefOfInfo(info)
		if ref.Kind == "Job" && ref.Group == "batch" && !jobs {
			continue
		}
		refs = append(refs, ref)
	}
	ticker := time.NewTicker(c.poll)
	defer ticker.Stop()
	for {
		// Each check runs to its end (on the reconcile's context, not the
		// wait's deadline), so a timeout reports what the last full check
		// saw.
		var pending, failed []release.ObjectStatus
		err := release.Contain("ObjectReader of cluster "+c.cluster, func() (err error) {
			pending, failed, err = c.pending(c.ctx, refs)
			return err
		})
		if err != nil {
			return fmt.Errorf("cluster %s: wait: %w", c.cluster, err)
		}
		if len(pending) == 0 && len(failed) == 0 {
			return nil
		}
		if len(failed) > 0 {
			return &release.NotReadyError{Cluster: c.cluster, Timeout: timeout, Objects: append(failed, pending...)}
		}
		refs = refsOf(pending)
		select {
		case <-ctx.Done():
			e := &release.NotReadyError{Cluster: c.cluster, Timeout: timeout, Objects: pending}
			if c.ctx.Err() != nil {
				e.Err = c.ctx.Err()
			}
			return e
		case <-ticker.C:
		}
	}
}

// pending returns the objects that are not Current yet, and those that
// Failed (no wait will help), by the judge where it takes an object,
// else by kstatus.
func (c *contextClient) pending(ctx context.Context, refs []release.ObjectRef) (pending, failed []release.ObjectStatus, err error) {
	return release.UnreadyJudged(ctx, c.reader, refs, c.judge)
}

func refsOf(st []release.ObjectStatus) []release.ObjectRef {
	out := make([]release.ObjectRef, len(st))
	for i, s := range st {
		out[i] = s.Object
	}
	return out
}

// objectsOf decodes a manifest into unstructured objects through kc.
func objectsOf(kc kube.Interface, manifest string) ([]*unstructured.Unstructured, error) {
	rl, err := kc.Build(strings.NewReader(manifest), false)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(rl))
	for _, info := range rl {
		u, ok := info.Object.(*unstructured.Unstructured)
		if !ok {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(info.Object)
			if err != nil {
				return nil, err
			}
			u = &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(info.Mapping.GroupVersionKind)
		}
		if u.GetNamespace() == "" && info.Namespace != "" {
			u.SetNamespace(info.Namespace)
		}
		out = append(out, u)
	}
	return out, nil
}
