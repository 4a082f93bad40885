package helmv4

import (
	"fmt"
	"io"
	"reflect"
	"time"

	kube3 "helm.sh/helm/v3/pkg/kube"
	kube4 "helm.sh/helm/v4/pkg/kube"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kubeClient is Helm v4's kube.Interface over a cluster's Helm v3 kube
// client (release/memory's, or the reconciler's wrapper of any cluster's):
// objects are written with the v3 client's create and update (a
// three-way merge patch where the client has one), and the waits are the
// v3 client's (the reconciler's: kstatus, the release's health checks,
// the caller's context), whatever the wait strategy, except that
// HookOnlyStrategy (waits disabled) waits for hooks only, as Helm v4's
// does. Server-side apply asked of it is recorded by Helm v4 in the
// release (ApplyMethod "ssa") but the objects are written as client-side
// apply writes them: no field ownership is taken, no conflict is
// reported. The options Helm v4 passes are decoded (decodeOptions) so
// that a force-replace and a dry run are honoured.
type kubeClient struct {
	v3 kube3.Interface
}

var _ kube4.Interface = kubeClient{}

func list3(l kube4.ResourceList) kube3.ResourceList { return kube3.ResourceList(l) }

func result4(r *kube3.Result) *kube4.Result {
	if r == nil {
		return nil
	}
	return &kube4.Result{Created: kube4.ResourceList(r.Created), Updated: kube4.ResourceList(r.Updated), Deleted: kube4.ResourceList(r.Deleted)}
}

// Get returns the objects of resources (and their related pods).
func (c kubeClient) Get(resources kube4.ResourceList, related bool) (map[string][]runtime.Object, error) {
	g, ok := c.v3.(kube3.InterfaceResources)
	if !ok {
		return nil, fmt.Errorf("helm v4 engine: kube client %T cannot get resources", c.v3)
	}
	return g.Get(list3(resources), related)
}

// Create creates resources (nothing on a dry run).
func (c kubeClient) Create(resources kube4.ResourceList, opts ...kube4.ClientCreateOption) (*kube4.Result, error) {
	o, err := decodeOptions(opts)
	if err != nil {
		return nil, err
	}
	if o["dryRun"] {
		return &kube4.Result{Created: resources}, nil
	}
	r, err := c.v3.Create(list3(resources))
	return result4(r), err
}

// Delete deletes resources with policy.
func (c kubeClient) Delete(resources kube4.ResourceList, policy metav1.DeletionPropagation) (*kube4.Result, []error) {
	if d, ok := c.v3.(kube3.InterfaceDeletionPropagation); ok {
		r, errs := d.DeleteWithPropagationPolicy(list3(resources), policy)
		return result4(r), errs
	}
	r, errs := c.v3.Delete(list3(resources))
	return result4(r), errs
}

// Update updates original to target: a replace when Helm v4 forces one,
// else the v3 client's update (its three-way merge for unstructured
// objects when asked and available).
func (c kubeClient) Update(original, target kube4.ResourceList, opts ...kube4.ClientUpdateOption) (*kube4.Result, error) {
	o, err := decodeOptions(opts)
	if err != nil {
		return nil, err
	}
	if o["dryRun"] {
		return &kube4.Result{Updated: target}, nil
	}
	if t, ok := c.v3.(kube3.InterfaceThreeWayMerge); ok && o["threeWayMergeForUnstructured"] {
		r, err := t.UpdateThreeWayMerge(list3(original), list3(target), o["forceReplace"])
		return result4(r), err
	}
	r, err := c.v3.Update(list3(original), list3(target), o["forceReplace"])
	return result4(r), err
}

// Build reads objects from a manifest.
func (c kubeClient) Build(reader io.Reader, validate bool) (kube4.ResourceList, error) {
	l, err := c.v3.Build(reader, validate)
	return kube4.ResourceList(l), err
}

// BuildTable reads objects from a manifest as tables.
func (c kubeClient) BuildTable(reader io.Reader, validate bool) (kube4.ResourceList, error) {
	if b, ok := c.v3.(kube3.InterfaceResources); ok {
		l, err := b.BuildTable(reader, validate)
		return kube4.ResourceList(l), err
	}
	return c.Build(reader, validate)
}

// IsReachable reports whether the cluster answers.
func (c kubeClient) IsReachable() error { return c.v3.IsReachable() }

// GetPodList lists pods.
func (c kubeClient) GetPodList(namespace string, listOptions metav1.ListOptions) (*v1.PodList, error) {
	if l, ok := c.v3.(kube3.InterfaceLogs); ok {
		return l.GetPodList(namespace, listOptions)
	}
	return nil, fmt.Errorf("helm v4 engine: kube client %T cannot list pods", c.v3)
}

// OutputContainerLogsForPodList writes the pods' logs.
func (c kubeClient) OutputContainerLogsForPodList(podList *v1.PodList, namespace string, writerFunc func(namespace, pod, container string) io.Writer) error {
	if l, ok := c.v3.(kube3.InterfaceLogs); ok {
		return l.OutputContainerLogsForPodList(podList, namespace, writerFunc)
	}
	return fmt.Errorf("helm v4 engine: kube client %T cannot read logs", c.v3)
}

// GetWaiter returns the v3 client's waits; HookOnlyStrategy waits for
// hooks only.
func (c kubeClient) GetWaiter(ws kube4.WaitStrategy) (kube4.Waiter, error) {
	switch ws {
	case kube4.StatusWatcherStrategy, kube4.LegacyStrategy:
		return waiter{v3: c.v3}, nil
	case kube4.HookOnlyStrategy:
		return crdWaiter{Waiter: waiter{v3: c.v3, hooksOnly: true}, full: waiter{v3: c.v3}}, nil
	}
	return nil, fmt.Errorf("helm v4 engine: unknown wait strategy %q", ws)
}

// waiter is Helm v4's Waiter over the v3 client's waits.
type waiter struct {
	v3        kube3.Interface
	hooksOnly bool
}

func (w waiter) Wait(resources kube4.ResourceList, timeout time.Duration) error {
	if w.hooksOnly {
		return nil
	}
	return w.v3.Wait(list3(resources), timeout)
}

func (w waiter) WaitWithJobs(resources kube4.ResourceList, timeout time.Duration) error {
	if w.hooksOnly {
		return nil
	}
	return w.v3.WaitWithJobs(list3(resources), timeout)
}

func (w waiter) WaitForDelete(resources kube4.ResourceList, timeout time.Duration) error {
	if e, ok := w.v3.(kube3.InterfaceExt); ok && !w.hooksOnly {
		return e.WaitForDelete(list3(resources), timeout)
	}
	return nil
}

func (w waiter) WatchUntilReady(resources kube4.ResourceList, timeout time.Duration) error {
	return w.v3.WatchUntilReady(list3(resources), timeout)
}

// decodeOptions reads the boolean settings of Helm v4's functional
// client options (ClientCreateOption, ClientUpdateOption), whose
// settings struct is unexported: each option is applied to a new value
// of that struct and its bool fields are read by name. Every option of
// one call shares one struct type.
func decodeOptions[O any](opts []O) (map[string]bool, error) {
	out := map[string]bool{}
	if len(opts) == 0 {
		return out, nil
	}
	ft := reflect.TypeOf(opts[0])
	if ft.Kind() != reflect.Func || ft.NumIn() != 1 || ft.In(0).Kind() != reflect.Pointer || ft.In(0).Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("helm v4 engine: client option of type %s is not func(*struct) error", ft)
	}
	p := reflect.New(ft.In(0).Elem())
	for _, o := range opts {
		res := reflect.ValueOf(o).Call([]reflect.Value{p})
		if err, _ := res[0].Interface().(error); err != nil {
			return nil, err
		}
	}
	s := p.Elem()
	for i := range s.NumField() {
		if f := s.Field(i); f.Kind() == reflect.Bool {
			out[s.Type().Field(i).Name] = f.Bool()
		}
	}
	return out, nil
}

// crdWaiter is Helm v4's hook-only Waiter (waits disabled) that still
// waits for the CustomResourceDefinitions of a chart's crds/ to be
// established, as Helm v3 always does before it builds the templates:
// Helm v4's install waits for them with the action's wait strategy, and
// with waits disabled the first install of a chart with CRDs and their
// custom resources fails on a real API server ("no matches for kind")
// whenever the CRDs are not served yet.
type crdWaiter struct {
	kube4.Waiter
	// full waits as the status watcher does.
	full kube4.Waiter
}

// Wait waits with full when every resource is a CRD (Helm's install of
// crds/), else as the hook-only waiter.
func (w crdWaiter) Wait(resources kube4.ResourceList, timeout time.Duration) error {
	if len(resources) > 0 && allCRDs(resources) {
		return w.full.Wait(resources, timeout)
	}
	return w.Waiter.Wait(resources, timeout)
}

// allCRDs says whether every resource is a CustomResourceDefinition.
func allCRDs(resources kube4.ResourceList) bool {
	for _, r := range resources {
		if r.Mapping == nil || r.Mapping.GroupVersionKind.GroupKind() != (schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}) {
			return false
		}
	}
	return true
}

// nativeClient is Helm v4's own kube client whose hook-only waits still
// wait for crds/ (crdWaiter).
type nativeClient struct {
	*kube4.Client
}

// GetWaiter returns the client's Waiter for ws.
func (c nativeClient) GetWaiter(ws kube4.WaitStrategy) (kube4.Waiter, error) {
	return c.GetWaiterWithOptions(ws)
}

// GetWaiterWithOptions returns the client's Waiter for ws, a crdWaiter
// for HookOnlyStrategy.
func (c nativeClient) GetWaiterWithOptions(ws kube4.WaitStrategy, opts ...kube4.WaitOption) (kube4.Waiter, error) {
	w, err := c.Client.GetWaiterWithOptions(ws, opts...)
	if err != nil || ws != kube4.HookOnlyStrategy {
		return w, err
	}
	full, err := c.Client.GetWaiterWithOptions(kube4.StatusWatcherStrategy, opts...)
	if err != nil {
		return nil, err
	}
	return crdWaiter{Waiter: w, full: full}, nil
}
