package controller

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

type schemaGVK = schema.GroupVersionKind

// Field indexes the controller registers on HelmReleases. Their values
// are the names (in the release's namespace) or namespace/name keys of
// what a release reads, so a change of one of those objects finds its
// releases with one indexed List instead of a scan.
const (
	// IndexConfigMaps: names of the ConfigMaps of spec.valuesFrom.
	IndexConfigMaps = "helmfleet.io/valuesFrom.configMaps"
	// IndexSecrets: names of the Secrets of spec.valuesFrom and of
	// spec.kubeConfig.secretRef.
	IndexSecrets = "helmfleet.io/secrets"
	// IndexDependsOn: namespace/name of each release of spec.dependsOn.
	IndexDependsOn = "helmfleet.io/dependsOn"
	// IndexSources: Kind/namespace/name of the source object of
	// spec.chart.spec.sourceRef or spec.chartRef.
	IndexSources = "helmfleet.io/source"
)

// refs are the fields of a HelmRelease the indexes read.
type refs struct {
	Metadata struct {
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		ValuesFrom []struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"valuesFrom"`
		KubeConfig *struct {
			SecretRef *struct {
				Name string `json:"name"`
			} `json:"secretRef"`
		} `json:"kubeConfig"`
		DependsOn []struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"dependsOn"`
		Chart *struct {
			Spec struct {
				SourceRef objectRef `json:"sourceRef"`
			} `json:"spec"`
		} `json:"chart"`
		ChartRef *objectRef `json:"chartRef"`
	} `json:"spec"`
}

type objectRef struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// refsOf reads the references of a HelmRelease; a field of the wrong
// shape leaves its part empty (the reconcile reports it).
func refsOf(obj client.Object) refs {
	var r refs
	if u, ok := obj.(*unstructured.Unstructured); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r)
	}
	r.Metadata.Namespace = obj.GetNamespace()
	return r
}

func (r refs) ns(n string) string {
	if n == "" {
		return r.Metadata.Namespace
	}
	return n
}

// indexers are the field indexes' functions.
func indexers() map[string]func(client.Object) []string {
	return map[string]func(client.Object) []string{
		IndexConfigMaps: func(obj client.Object) []string {
			var out []string
			for _, v := range refsOf(obj).Spec.ValuesFrom {
				if v.Kind == "ConfigMap" {
					out = append(out, v.Name)
				}
			}
			return dedupe(out)
		},
		IndexSecrets: func(obj client.Object) []string {
			r := refsOf(obj)
			var out []string
			for _, v := range r.Spec.ValuesFrom {
				if v.Kind == "Secret" {
					out = append(out, v.Name)
				}
			}
			if kc := r.Spec.KubeConfig; kc != nil && kc.SecretRef != nil {
				out = append(out, kc.SecretRef.Name)
			}
			return dedupe(out)
		},
		IndexDependsOn: func(obj client.Object) []string {
			r := refsOf(obj)
			var out []string
			for _, d := range r.Spec.DependsOn {
				out = append(out, r.ns(d.Namespace)+"/"+d.Name)
			}
			return dedupe(out)
		},
		IndexSources: func(obj client.Object) []string {
			r := refsOf(obj)
			switch {
			case r.Spec.Chart != nil:
				s := r.Spec.Chart.Spec.SourceRef
				return []string{s.Kind + "/" + r.ns(s.Namespace) + "/" + s.Name}
			case r.Spec.ChartRef != nil:
				s := *r.Spec.ChartRef
				return []string{s.Kind + "/" + r.ns(s.Namespace) + "/" + s.Name}
			}
			return nil
		},
	}
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// nameKey is the index value of a ConfigMap or Secret: its name; the
// releases are listed in its namespace.
func nameKey(obj client.Object) (string, string) { return obj.GetNamespace(), obj.GetName() }

// sourceKeyOf is the index value of a source object: Kind/namespace/name;
// releases of any namespace may name it.
func sourceKeyOf(obj client.Object) (string, string) {
	return "", obj.GetObjectKind().GroupVersionKind().Kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// mapIndex returns a map function that enqueues the releases (of this
// shard) whose index field holds the key of the changed object.
func (r *HelmReleaseReconciler) mapIndex(field string, key func(client.Object) (namespace, value string)) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		ns, value := key(obj)
		return r.listIndexed(ctx, field, ns, value)
	}
}

// mapDependents enqueues the releases that depend on the release that
// became ready.
func (r *HelmReleaseReconciler) mapDependents(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.listIndexed(ctx, IndexDependsOn, "", obj.GetNamespace()+"/"+obj.GetName())
}

func (r *HelmReleaseReconciler) listIndexed(ctx context.Context, field, namespace, value string) []reconcile.Request {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(HelmReleaseGVK.GroupVersion().WithKind(HelmReleaseGVK.Kind + "List"))
	opts := []client.ListOption{client.MatchingFields{field: value}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.cache.List(ctx, list, opts...); err != nil {
		r.log.Error(err, "list HelmReleases by index", "index", field, "value", value)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if r.inShard(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].GetNamespace(), Name: list.Items[i].GetName()}})
		}
	}
	return out
}

// becameReady passes a HelmRelease event when the release is ready now
// and was not before (or is created ready): the moment its dependents
// may go on.
type becameReady struct{}

func (becameReady) Create(e event.CreateEvent) bool { return readyObject(e.Object) }

func (becameReady) Update(e event.UpdateEvent) bool {
	return readyObject(e.ObjectNew) && !readyObject(e.ObjectOld)
}

func (becameReady) Delete(event.DeleteEvent) bool { return false }

func (becameReady) Generic(event.GenericEvent) bool { return false }

func readyObject(obj client.Object) bool {
	u, ok := obj.(*unstructured.Unstructured)
	return ok && isReady(u)
}
