package release

import (
	"context"
	"fmt"
	"github.com/helmfleet/helmfleet/internal/celhealth"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/resource"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"slices"
	"sort"
	"strings"
	"time"
)

// NotReadyError lists the objects that were not ready when a wait ended.
type NotReadyError struct {
	// Cluster is the cluster's name.
	Cluster string
	// Timeout is how long the wait lasted.
	Timeout time.Duration
	// Objects are the objects not ready, with kstatus' status and message,
	// sorted by object.
	Objects []ObjectStatus
	// Err is the context's error when the wait was cancelled.
	Err error
}

// ObjectStatus is the kstatus verdict on one object.
type ObjectStatus struct {
	// Object is the object.
	Object ObjectRef
	// Status is kstatus' status: InProgress, Failed, NotFound, …
	Status string
	// Message says why.
	Message string
}

func (e *NotReadyError) Error() string {
	parts := make([]string, 0, len(e.Objects))
	for _, o := range e.Objects {
		parts = append(parts, fmt.Sprintf("%s %s/%s %s: %s", o.Object.Kind, o.Object.Namespace, o.Object.Name, o.Status, o.Message))
	}
	what := fmt.Sprintf("timed out after %s", e.Timeout)
	if e.Err != nil {
		what = e.Err.Error()
	}
	return fmt.Sprintf("cluster %s: %s waiting for %d object(s): %s", e.Cluster, what, len(e.Objects), strings.Join(parts, "; "))
}

// Unwrap returns the context's error, if any.
func (e *NotReadyError) Unwrap() error { return e.Err }

// Unready reads refs through reader and judges each with kstatus: it
// returns those not Current yet (an absent object counts as NotFound),
// sorted, and those Failed, on which no wait will help. Each status says
// why, with the messages of the object's unhappy conditions. It stops at
// the first read error once ctx is done, returning that error.
func Unready(ctx context.Context, reader ObjectReader, refs []ObjectRef) (pending, failed []ObjectStatus, err error) {
	return UnreadyJudged(ctx, reader, refs, nil)
}

// Judge decides the status of obj in kstatus' terms (Current,
// InProgress or Failed) in place of kstatus, as a CEL health check of
// spec.healthCheckExprs does; ok is false when it leaves obj to kstatus.
// An error counts as kstatus' Unknown: the object is waited for.
type Judge func(ctx context.Context, obj *unstructured.Unstructured) (status, message string, ok bool, err error)

// UnreadyJudged is Unready with judge deciding the objects it takes
// (nil: none).
func UnreadyJudged(ctx context.Context, reader ObjectReader, refs []ObjectRef, judge Judge) (pending, failed []ObjectStatus, err error) {
	for _, ref := range refs {
		obj, gerr := reader.Get(ctx, ref)
		if gerr != nil {
			if ctx.Err() != nil {
				return pending, failed, ctx.Err()
			}
			pending = append(pending, ObjectStatus{Object: ref, Status: string(kstatus.NotFoundStatus), Message: gerr.Error()})
			continue
		}
		st, msg, cerr := judged(ctx, judge, obj)
		if cerr != nil {
			if ctx.Err() != nil {
				return pending, failed, ctx.Err()
			}
			pending = append(pending, ObjectStatus{Object: ref, Status: string(kstatus.UnknownStatus), Message: cerr.Error()})
			continue
		}
		if why := conditionMessages(obj); why != "" {
			msg += " (" + why + ")"
		}
		switch st {
		case kstatus.CurrentStatus:
		case kstatus.FailedStatus:
			failed = append(failed, ObjectStatus{Object: ref, Status: string(st), Message: msg})
		default:
			pending = append(pending, ObjectStatus{Object: ref, Status: string(st), Message: msg})
		}
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].Object.String() < pending[j].Object.String() })
	return pending, failed, nil
}

// judged is judge's status of obj where it takes obj, else kstatus'.
func judged(ctx context.Context, judge Judge, obj *unstructured.Unstructured) (kstatus.Status, string, error) {
	if judge != nil {
		st, msg, ok, err := judge(ctx, obj)
		if ok || err != nil {
			return kstatus.Status(st), msg, err
		}
	}
	res, err := kstatus.Compute(obj)
	if err != nil {
		return "", "", err
	}
	return res.Status, res.Message, nil
}

// conditionMessages returns the messages of the object's conditions that
// are not True (or, for Stalled and Failed, that are), which usually say
// why a workload is not ready: "image pull back-off", "exceeded its
// progress deadline".
func conditionMessages(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	var msgs []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		typ, _ := m["type"].(string)
		status, _ := m["status"].(string)
		msg, _ := m["message"].(string)
		bad := status != "True"
		if typ == "Stalled" || typ == "Failed" {
			bad = status == "True"
		}
		if bad && msg != "" && !slices.Contains(msgs, msg) {
			msgs = append(msgs, msg)
		}
	}
	return strings.Join(msgs, "; ")
}

// RefOfInfo names the object of one of Helm's resource infos, with the
// object's own group, version and kind where it has one.
func RefOfInfo(info *resource.Info) ObjectRef {
	gvk := info.Mapping.GroupVersionKind
	if u, ok := info.Object.(*unstructured.Unstructured); ok {
		gvk = u.GroupVersionKind()
	} else if info.Object != nil && !info.Object.GetObjectKind().GroupVersionKind().Empty() {
		gvk = info.Object.GetObjectKind().GroupVersionKind()
	}
	return ObjectRef{GroupVersionKind: gvk, Namespace: info.Namespace, Name: info.Name}
}

// DependencyReady evaluates readyExpr, the spec.dependsOn[].readyExpr
// at field of self, as Flux does: self bound to the dependent and dep to
// the dependency, each as its unstructured content. An error names the
// field and the expression.
func DependencyReady(ctx context.Context, field, readyExpr string, self, dep any) (bool, error) {
	expr, err := celhealth.NewReadyExpr(field, readyExpr)
	if err != nil {
		return false, err
	}
	selfMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(self)
	if err != nil {
		return false, fmt.Errorf("%s: the dependent: %w", field, err)
	}
	depMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dep)
	if err != nil {
		return false, fmt.Errorf("%s: the dependency: %w", field, err)
	}
	return expr.Ready(ctx, selfMap, depMap)
}
