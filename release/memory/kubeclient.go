package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"helm.sh/helm/v3/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/resource"

	"github.com/helmfleet/helmfleet/release"
)

// helmManager is the field manager Helm v3's client-side writes get, as
// on a real cluster.
const helmManager = "helm"

// kubeClient implements Helm's kube.Interface (and the optional
// extensions Helm checks for) over the in-memory object store.
type kubeClient struct {
	c         *Cluster
	namespace string
}

var (
	_ kube.Interface                    = (*kubeClient)(nil)
	_ kube.InterfaceExt                 = (*kubeClient)(nil)
	_ kube.InterfaceDeletionPropagation = (*kubeClient)(nil)
	_ kube.InterfaceLogs                = (*kubeClient)(nil)
	_ kube.InterfaceThreeWayMerge       = (*kubeClient)(nil)
)

// IsReachable fails while the cluster is marked unreachable.
func (k *kubeClient) IsReachable() error { return k.c.reachable() }

// Build decodes a manifest stream into resource infos with mappings from
// the cluster's REST mapper; namespaced objects without a namespace get
// the client's default namespace, as kubectl does.
func (k *kubeClient) Build(reader io.Reader, _ bool) (kube.ResourceList, error) {
	var out kube.ResourceList
	dec := utilyaml.NewYAMLOrJSONDecoder(reader, 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("cluster %s: decode manifest: %w", k.c.name, err)
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("cluster %s: decode manifest: %w", k.c.name, err)
		}
		if obj.IsList() {
			return nil, fmt.Errorf("cluster %s: decode manifest: lists are not supported (%s)", k.c.name, obj.GetKind())
		}
		gvk := obj.GroupVersionKind()
		mapping, err := k.c.store.mapper.mapping(gvk)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: resource mapping not found for name: %q namespace: %q: %w", k.c.name, obj.GetName(), obj.GetNamespace(), err)
		}
		if mapping.Scope.Name() == "namespace" {
			if obj.GetNamespace() == "" {
				obj.SetNamespace(k.namespace)
			}
		} else {
			obj.SetNamespace("")
		}
		if err := k.c.fault(OpHelmBuild, release.RefOf(obj)); err != nil {
			return nil, err
		}
		out = append(out, &resource.Info{
			Client:    k.c.restClient(gvk.GroupVersion()),
			Mapping:   mapping,
			Namespace: obj.GetNamespace(),
			Name:      obj.GetName(),
			Object:    obj,
		})
	}
	return out, nil
}

func object(info *resource.Info) (*unstructured.Unstructured, error) {
	u, ok := info.Object.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("memory: %s %s is a %T, not unstructured", info.Mapping.GroupVersionKind.Kind, info.Name, info.Object)
	}
	return u, nil
}

// Create stores each resource; an existing one is an AlreadyExists error.
func (k *kubeClient) Create(resources kube.ResourceList) (*kube.Result, error) {
	if err := k.c.reachable(); err != nil {
		return &kube.Result{}, err
	}
	res := &kube.Result{}
	for _, info := range resources {
		u, err := object(info)
		if err != nil {
			return res, err
		}
		if err := k.c.fault(OpHelmCreate, release.RefOf(u)); err != nil {
			return res, err
		}
		stored, err := k.c.store.create(u, helmManager)
		if err != nil {
			return res, err
		}
		info.Object = stored
		res.Created = append(res.Created, info)
	}
	return res, nil
}

// Update moves the cluster from original to target as Helm v3 does: new
// objects are created, existing ones patched with a three-way merge
// (original manifest, target manifest, live object — so fields set by
// others and untouched by the chart survive), and objects only in
// original deleted unless annotated helm.sh/resource-policy: keep.
func (k *kubeClient) Update(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	if err := k.c.reachable(); err != nil {
		return &kube.Result{}, err
	}
	res := &kube.Result{}
	for _, info := range target {
		u, err := object(info)
		if err != nil {
			return res, err
		}
		gvk := u.GroupVersionKind()
		if err := k.c.fault(OpHelmGet, release.RefOf(u)); err != nil {
			return res, err
		}
		live, err := k.c.store.get(gvk, u.GetNamespace(), u.GetName())
		if apierrors.IsNotFound(err) {
			if err := k.c.fault(OpHelmCreate, release.RefOf(u)); err != nil {
				return res, fmt.Errorf("failed to create resource: %w", err)
			}
			stored, err := k.c.store.create(u, helmManager)
			if err != nil {
				return res, fmt.Errorf("failed to create resource: %w", err)
			}
			info.Object = stored
			res.Created = append(res.Created, info)
			continue
		}
		if err != nil {
			return res, err
		}
		if err := k.c.fault(OpHelmUpdate, release.RefOf(u)); err != nil {
			return res, fmt.Errorf("cannot patch %q with kind %s: %w", u.GetName(), gvk.Kind, err)
		}
		next := u
		if !force {
			orig := original.Get(info)
			var origObj *unstructured.Unstructured
			if orig != nil {
				origObj, _ = orig.Object.(*unstructured.Unstructured)
			}
			next, err = threeWayMerge(origObj, u, live)
			if err != nil {
				return res, fmt.Errorf("cannot patch %q with kind %s: %w", u.GetName(), gvk.Kind, err)
			}
		}
		stored, err := k.c.store.update(next, helmManager)
		if err != nil {
			return res, fmt.Errorf("cannot patch %q with kind %s: %w", u.GetName(), gvk.Kind, err)
		}
		info.Object = stored
		res.Updated = append(res.Updated, info)
	}
	for _, info := range original {
		if target.Get(info) != nil {
			continue
		}
		u, err := object(info)
		if err != nil {
			return res, err
		}
		if live, err := k.c.store.get(u.GroupVersionKind(), u.GetNamespace(), u.GetName()); err == nil &&
			live.GetAnnotations()[kube.ResourcePolicyAnno] == kube.KeepPolicy {
			continue
		}
		if err := k.c.fault(OpHelmDelete, release.RefOf(u)); err != nil {
			return res, err
		}
		if err := k.c.store.remove(u.GroupVersionKind(), u.GetNamespace(), u.GetName(), metav1.DeletePropagationBackground); err != nil && !apierrors.IsNotFound(err) {
			return res, err
		}
		res.Deleted = append(res.Deleted, info)
	}
	return res, nil
}

// UpdateThreeWayMerge is Update; the in-memory client always merges three
// ways.
func (k *kubeClient) UpdateThreeWayMerge(original, target kube.ResourceList, force bool) (*kube.Result, error) {
	return k.Update(original, target, force)
}

// threeWayMerge applies the change from orig to target onto live.
func threeWayMerge(orig, target, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	origJSON := []byte("{}")
	var err error
	if orig != nil {
		if origJSON, err = json.Marshal(orig.Object); err != nil {
			return nil, err
		}
	}
	targetJSON, err := json.Marshal(target.Object)
	if err != nil {
		return nil, err
	}
	liveJSON, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(origJSON, targetJSON, liveJSON)
	if err != nil {
		return nil, err
	}
	merged, err := jsonpatch.MergePatch(liveJSON, patch)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{}
	if err := json.Unmarshal(merged, &out.Object); err != nil {
		return nil, err
	}
	return out, nil
}

// Delete deletes each resource with background propagation; absent ones
// count as deleted, as in Helm.
func (k *kubeClient) Delete(resources kube.ResourceList) (*kube.Result, []error) {
	return k.DeleteWithPropagationPolicy(resources, metav1.DeletePropagationBackground)
}

// DeleteWithPropagationPolicy deletes each resource with policy.
func (k *kubeClient) DeleteWithPropagationPolicy(resources kube.ResourceList, policy metav1.DeletionPropagation) (*kube.Result, []error) {
	if err := k.c.reachable(); err != nil {
		return &kube.Result{}, []error{err}
	}
	res := &kube.Result{}
	var errs []error
	for _, info := range resources {
		gvk := info.Mapping.GroupVersionKind
		err := k.c.fault(OpHelmDelete, release.ObjectRef{GroupVersionKind: gvk, Namespace: info.Namespace, Name: info.Name})
		if err == nil {
			err = k.c.store.remove(gvk, info.Namespace, info.Name, policy)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
			continue
		}
		res.Deleted = append(res.Deleted, info)
	}
	return res, errs
}

// WaitForDelete returns at once: deletes are synchronous in memory.
func (k *kubeClient) WaitForDelete(kube.ResourceList, time.Duration) error { return k.c.reachable() }

// Wait waits until the cluster's HealthFunc says every resource is ready,
// or fails after timeout naming the objects that are not.
func (k *kubeClient) Wait(resources kube.ResourceList, timeout time.Duration) error {
	return k.wait(resources, timeout, func(*unstructured.Unstructured) bool { return true })
}

// WaitWithJobs is Wait; Jobs are judged by the HealthFunc too.
func (k *kubeClient) WaitWithJobs(resources kube.ResourceList, timeout time.Duration) error {
	return k.Wait(resources, timeout)
}

// WatchUntilReady waits for hook Jobs and Pods to complete; a failed one
// is an error at once.
func (k *kubeClient) WatchUntilReady(resources kube.ResourceList, timeout time.Duration) error {
	return k.wait(resources, timeout, func(u *unstructured.Unstructured) bool {
		return u.GetKind() == "Job" || u.GetKind() == "Pod"
	})
}

func (k *kubeClient) wait(resources kube.ResourceList, timeout time.Duration, judged func(*unstructured.Unstructured) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := k.c.reachable(); err != nil {
			return err
		}
		var pending []string
		for _, info := range resources {
			u, err := object(info)
			if err != nil {
				return err
			}
			if !judged(u) {
				continue
			}
			live, err := k.c.store.get(u.GroupVersionKind(), u.GetNamespace(), u.GetName())
			if err != nil {
				pending = append(pending, fmt.Sprintf("%s %s: %v", u.GetKind(), u.GetName(), err))
				continue
			}
			h := k.c.healthOf(live)
			if h.Failed {
				return fmt.Errorf("%s %s/%s failed: %s", u.GetKind(), u.GetNamespace(), u.GetName(), h.Message)
			}
			if !h.Ready {
				pending = append(pending, fmt.Sprintf("%s %s/%s: %s", u.GetKind(), u.GetNamespace(), u.GetName(), h.Message))
			}
		}
		if len(pending) == 0 {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("timed out waiting for the condition: not ready: %s", strings.Join(pending, "; "))
		}
		time.Sleep(k.c.poll)
	}
}

// WaitAndGetCompletedPodPhase waits for Pod name of the default namespace
// to complete and returns its phase.
func (k *kubeClient) WaitAndGetCompletedPodPhase(name string, timeout time.Duration) (corev1.PodPhase, error) {
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	deadline := time.Now().Add(timeout)
	for {
		live, err := k.c.store.get(gvk, k.namespace, name)
		if err != nil {
			return corev1.PodUnknown, err
		}
		h := k.c.healthOf(live)
		switch {
		case h.Failed:
			return corev1.PodFailed, nil
		case h.Ready:
			return corev1.PodSucceeded, nil
		}
		if !time.Now().Before(deadline) {
			return corev1.PodUnknown, fmt.Errorf("timed out waiting for pod %s/%s", k.namespace, name)
		}
		time.Sleep(k.c.poll)
	}
}

// GetPodList lists Pods of namespace matching the label selector.
func (k *kubeClient) GetPodList(namespace string, opts metav1.ListOptions) (*corev1.PodList, error) {
	return &corev1.PodList{}, nil
}

// OutputContainerLogsForPodList writes nothing: in-memory Pods have no logs.
func (k *kubeClient) OutputContainerLogsForPodList(*corev1.PodList, string, func(namespace, pod, container string) io.Writer) error {
	return nil
}
