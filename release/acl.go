package release

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ReasonAccessDenied is the Ready and Stalled reason of an object refused
// a reference to another namespace (Flux's acl.AccessDeniedReason).
const ReasonAccessDenied = "AccessDenied"

// AccessDeniedError is a reference from an object to an object of another
// namespace, refused because cross-namespace references are off (the
// NoCrossNamespaceRefs option of the controllers, the fleet and the
// Kustomization reconciler; Flux's --no-cross-namespace-refs). Nothing is
// read through the reference: the error says nothing about whether the
// other object exists or is ready. It does not fix itself: the spec must
// change.
type AccessDeniedError struct {
	// Object is the referring object: kind, namespace and name.
	Object ObjectRef
	// Field is the path of the reference's namespace, such as
	// spec.dependsOn[0].namespace.
	Field string
	// Namespace is the namespace referred to.
	Namespace string
}

func (e *AccessDeniedError) Error() string {
	return fmt.Sprintf("%s %s/%s: %s: cross-namespace reference to %s is not allowed (NoCrossNamespaceRefs)",
		e.Object.Kind, e.Object.Namespace, e.Object.Name, e.Field, e.Namespace)
}

// DenyCrossNamespaceRefs returns an *AccessDeniedError for the first
// reference of in, in field order, to another namespace:
// spec.chart.spec.sourceRef, spec.chartRef (the HelmChart it names takes
// its own sourceRef from the HelmChart's namespace), then each of
// spec.dependsOn. An empty namespace is in's own. It returns nil when
// every reference stays in in's namespace. The other fields naming
// objects (valuesFrom, kubeConfig, verify.secretRef) cannot name a
// namespace; spec.targetNamespace and spec.storageNamespace say where the
// release goes, not what it reads, and are not references.
func (in *Release) DenyCrossNamespaceRefs() error {
	d := newDenier(GroupVersion.WithKind(Kind), in.Namespace, in.Name)
	if c := in.Spec.Chart; c != nil {
		d.check("spec.chart.spec.sourceRef.namespace", c.Spec.SourceRef.Namespace)
	}
	if r := in.Spec.ChartRef; r != nil {
		d.check("spec.chartRef.namespace", r.Namespace)
	}
	d.dependsOn(in.Spec.DependsOn)
	return d.err()
}

// DenyCrossNamespaceRefs returns an *AccessDeniedError for the first
// reference of in, in field order, to another namespace:
// spec.sourceRef, then each of spec.dependsOn. An empty namespace is
// in's own. It returns nil when every reference stays in in's namespace.
// spec.postBuild.substituteFrom and spec.kubeConfig cannot name a
// namespace; spec.targetNamespace and spec.healthChecks name where the
// built objects go and which of them to wait for, not sources or
// dependencies, and are not references (as in Flux: what guards them is
// the identity the objects are applied with).
func (in *Kustomization) DenyCrossNamespaceRefs() error {
	d := newDenier(KustomizationGroupVersion.WithKind(KustomizationKind), in.Namespace, in.Name)
	d.check("spec.sourceRef.namespace", in.Spec.SourceRef.Namespace)
	d.dependsOn(in.Spec.DependsOn)
	return d.err()
}

// denier keeps the first cross-namespace reference of obj.
type denier struct {
	obj    ObjectRef
	denied *AccessDeniedError
}

// newDenier checks the references of the object gvk namespace/name; an
// unset namespace is metav1.NamespaceDefault, as Default fills it in.
func newDenier(gvk schema.GroupVersionKind, namespace, name string) *denier {
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &denier{obj: ObjectRef{GroupVersionKind: gvk, Namespace: namespace, Name: name}}
}

// check records field when ns is set and is not the object's namespace.
func (d *denier) check(field, ns string) {
	if d.denied == nil && ns != "" && ns != d.obj.Namespace {
		d.denied = &AccessDeniedError{Object: d.obj, Field: field, Namespace: ns}
	}
}

func (d *denier) dependsOn(deps []DependencyReference) {
	for i, dep := range deps {
		d.check(fmt.Sprintf("spec.dependsOn[%d].namespace", i), dep.Namespace)
	}
}

func (d *denier) err() error {
	if d.denied == nil {
		return nil
	}
	return d.denied
}
