package controller

import (
	"context"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

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
	// IndexHelmChartSource, on HelmCharts: Kind/name of spec.sourceRef
	// (in the chart's namespace), so a change of a HelmRepository finds
	// the HelmCharts built from it, and through them the releases of
	// spec.chartRef.
	IndexHelmChartSource = "helmfleet.io/helmChart.sourceRef"
)

// indexer returns an index function over Releases.
func indexer(values func(rel *release.Release) []string) func(client.Object) []string {
	return func(obj client.Object) []string {
		rel, ok := obj.(*release.Release)
		if !ok {
			return nil
		}
		return dedupe(values(rel))
	}
}

// nsOr returns ns, or the release's namespace when ns is empty.
func nsOr(rel *release.Release, ns string) string {
	if ns == "" {
		return rel.Namespace
	}
	return ns
}

// Indexers are the field indexes' functions, by name; SetupWithManager
// registers them with the manager's cache (a fake client takes them with
// WithIndex).
func Indexers() map[string]func(client.Object) []string {
	return map[string]func(client.Object) []string{
		IndexConfigMaps: indexer(func(rel *release.Release) []string {
			var out []string
			for _, v := range rel.Spec.ValuesFrom {
				if v.Kind == "ConfigMap" {
					out = append(out, v.Name)
				}
			}
			return out
		}),
		IndexSecrets: indexer(func(rel *release.Release) []string {
			var out []string
			for _, v := range rel.Spec.ValuesFrom {
				if v.Kind == "Secret" {
					out = append(out, v.Name)
				}
			}
			if kc := rel.Spec.KubeConfig; kc != nil && kc.SecretRef != nil {
				out = append(out, kc.SecretRef.Name)
			}
			return out
		}),
		IndexDependsOn: indexer(func(rel *release.Release) []string {
			var out []string
			for _, d := range rel.Spec.DependsOn {
				out = append(out, nsOr(rel, d.Namespace)+"/"+d.Name)
			}
			return out
		}),
		IndexSources: indexer(func(rel *release.Release) []string {
			switch {
			case rel.Spec.Chart != nil:
				s := rel.Spec.Chart.Spec.SourceRef
				return []string{s.Kind + "/" + nsOr(rel, s.Namespace) + "/" + s.Name}
			case rel.Spec.ChartRef != nil:
				s := rel.Spec.ChartRef
				return []string{s.Kind + "/" + nsOr(rel, s.Namespace) + "/" + s.Name}
			}
			return nil
		}),
	}
}

// HelmChartIndexers are the field indexes' functions on HelmCharts, by
// name; SetupWithManager registers them with Config.Resolver.
func HelmChartIndexers() map[string]func(client.Object) []string {
	return map[string]func(client.Object) []string{
		IndexHelmChartSource: func(obj client.Object) []string {
			c, ok := obj.(*source.HelmChart)
			if !ok || c.Spec.SourceRef.Name == "" {
				return nil
			}
			return []string{c.Spec.SourceRef.Kind + "/" + c.Spec.SourceRef.Name}
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
	var kind string
	switch obj.(type) {
	case *source.HelmRepository:
		kind = source.KindHelmRepository
	case *source.OCIRepository:
		kind = source.KindOCIRepository
	case *source.HelmChart:
		kind = source.KindHelmChart
	default:
		kind = obj.GetObjectKind().GroupVersionKind().Kind
	}
	return "", kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// mapIndex returns a map function that enqueues the releases (of this
// shard) whose index field holds the key of the changed object.
func (r *HelmReleaseReconciler) mapIndex(field string, key func(client.Object) (namespace, value string)) func(context.Context, client.Object) []ctrlreconcile.Request {
	return func(ctx context.Context, obj client.Object) []ctrlreconcile.Request {
		ns, value := key(obj)
		return r.listIndexed(ctx, field, ns, value)
	}
}

// mapHelmRepository enqueues the releases of a changed HelmRepository:
// those whose spec.chart names it, and those whose spec.chartRef names a
// HelmChart built from it.
func (r *HelmReleaseReconciler) mapHelmRepository(ctx context.Context, obj client.Object) []ctrlreconcile.Request {
	_, key := sourceKeyOf(obj)
	out := r.listIndexed(ctx, IndexSources, "", key)
	charts := &source.HelmChartList{}
	if err := r.cache.List(ctx, charts, client.InNamespace(obj.GetNamespace()),
		client.MatchingFields{IndexHelmChartSource: source.KindHelmRepository + "/" + obj.GetName()}); err != nil {
		r.log.Error(err, "list HelmCharts by index", "index", IndexHelmChartSource, "value", key)
		return out
	}
	seen := map[ctrlreconcile.Request]bool{}
	for _, req := range out {
		seen[req] = true
	}
	for i := range charts.Items {
		_, chartKey := sourceKeyOf(&charts.Items[i])
		for _, req := range r.listIndexed(ctx, IndexSources, "", chartKey) {
			if !seen[req] {
				seen[req] = true
				out = append(out, req)
			}
		}
	}
	return out
}

// mapDependents enqueues the releases that depend on the release that
// became ready.
func (r *HelmReleaseReconciler) mapDependents(ctx context.Context, obj client.Object) []ctrlreconcile.Request {
	return r.listIndexed(ctx, IndexDependsOn, "", obj.GetNamespace()+"/"+obj.GetName())
}

func (r *HelmReleaseReconciler) listIndexed(ctx context.Context, field, namespace, value string) []ctrlreconcile.Request {
	list := &release.ReleaseList{}
	opts := []client.ListOption{client.MatchingFields{field: value}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := r.cache.List(ctx, list, opts...); err != nil {
		r.log.Error(err, "list HelmReleases by index", "index", field, "value", value)
		return nil
	}
	var out []ctrlreconcile.Request
	for i := range list.Items {
		if r.inShard(&list.Items[i]) {
			out = append(out, ctrlreconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
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
	rel, ok := obj.(*release.Release)
	return ok && rel.IsReady()
}
