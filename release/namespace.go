package release

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/policy"
)

// DecodeOption sets how Decode and Load read a stream.
type DecodeOption func(*decodeOptions)

type decodeOptions struct {
	namespace string // "" = leave namespaces as written
	enforce   bool
}

func newDecodeOptions(opts []DecodeOption) decodeOptions {
	var o decodeOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithDefaultNamespace reads the stream as kubectl does with the namespace
// of its context: every object of a namespaced kind without
// metadata.namespace gets ns (HelmReleases, Kustomizations, the source
// kinds, PropagationPolicies, OverridePolicies, ConfigMaps and Secrets
// alike); objects of a cluster-scoped kind (ClusterPropagationPolicy,
// ClusterOverridePolicy, Namespace) get none, and a namespace written in
// an object is kept. An empty ns changes nothing.
func WithDefaultNamespace(ns string) DecodeOption {
	return func(o *decodeOptions) { o.namespace, o.enforce = ns, false }
}

// WithEnforceNamespace reads the stream as kubectl does with an explicit
// --namespace: as WithDefaultNamespace(ns), and an object of a namespaced
// kind whose metadata.namespace is another is not decoded but reported as
// a Problem at metadata.namespace, naming the object and its namespace.
func WithEnforceNamespace(ns string) DecodeOption {
	return func(o *decodeOptions) { o.namespace, o.enforce = ns, ns != "" }
}

// mismatch returns the problem of an object of kind gk written in
// namespace, if the options enforce another.
func (o decodeOptions) mismatch(gk schema.GroupKind, namespace string) (FieldError, bool) {
	if !o.enforce || namespace == "" || namespace == o.namespace || clusterScoped(gk) {
		return FieldError{}, false
	}
	return FieldError{Path: "metadata.namespace", Value: shortValue(namespace), Message: policy.NamespaceMismatchReason(o.namespace)}, true
}

// clusterScoped reports whether objects of gk have no namespace: Karmada's
// two cluster policies and the core Namespace. Every other kind Decode
// reads is namespaced.
func clusterScoped(gk schema.GroupKind) bool {
	if gk.Group == "" {
		return gk.Kind == "Namespace"
	}
	cluster := func(kind string) bool {
		return gk == schema.FromAPIVersionAndKind(policy.GroupVersion, kind).GroupKind()
	}
	return cluster(policy.KindClusterPropagationPolicy) || cluster(policy.KindClusterOverridePolicy)
}

// fillNamespace gives every object of a namespaced kind without a
// namespace the namespace ns.
func (o *Objects) fillNamespace(ns string) {
	if ns == "" {
		return
	}
	for _, r := range o.Releases {
		setString(&r.Namespace, ns)
	}
	for _, k := range o.Kustomizations {
		setString(&k.Namespace, ns)
	}
	for _, r := range o.HelmRepositories {
		setString(&r.Namespace, ns)
	}
	for _, r := range o.OCIRepositories {
		setString(&r.Namespace, ns)
	}
	for _, c := range o.HelmCharts {
		setString(&c.Namespace, ns)
	}
	for i := range o.Policies.Propagation {
		setString(&o.Policies.Propagation[i].Namespace, ns)
	}
	for i := range o.Policies.Override {
		setString(&o.Policies.Override[i].Namespace, ns)
	}
	for _, u := range o.Plain {
		if u.GetNamespace() == "" && !clusterScoped(u.GroupVersionKind().GroupKind()) {
			u.SetNamespace(ns)
		}
	}
}
