package release

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A cluster backend is what a caller hands the library for each member
// cluster. It is made of small roles so that a caller (or a test) can
// supply only what a call needs: the reconciler needs a HelmConfigurer and,
// for drift, an ObjectReader; manifest mode needs an ObjectClient.
//
// Two backends ship with the library: release/memory (in-memory, for tests
// and the quickstart) and release/kube (client-go, for real clusters). Both
// pass releasetest.TestCluster.

// HelmScope says which namespaces one Helm action works in.
type HelmScope struct {
	// StorageNamespace is where Helm keeps the release's records.
	StorageNamespace string
	// Namespace is the default namespace of the release's objects (the
	// Release's targetNamespace).
	Namespace string
	// ReleaseNamespace and ReleaseObjectName name the Release object (a
	// HelmRelease) the action works for. The Reconciler sets them; they
	// are empty for a caller that works for no Release.
	ReleaseNamespace, ReleaseObjectName string
	// HelmReleaseName is the name of the Helm release the Release names
	// (its spec.releaseName or the default); empty when the caller works
	// for no Release. A configuration may still act on another Helm
	// release of the same Release: the Reconciler uninstalls, through a
	// configuration of this scope, the release its history recorded under
	// an older name or namespace.
	//
	// The identity lets a backend that keeps state per release (the
	// rendered-manifest Distributor of release/distribute) bind the
	// configuration to it, instead of learning it from which record Helm
	// reads or writes. Backends that keep no such state (release/memory,
	// release/kube) ignore it.
	HelmReleaseName string
}

// HelmConfigurer gives Helm's action configuration for one scope of a
// cluster. Each call returns a configuration the caller may use for one
// or more Helm actions; it must be safe to call concurrently.
type HelmConfigurer interface {
	HelmConfig(ctx context.Context, scope HelmScope) (*action.Configuration, error)
}

// ObjectRef names one object of a cluster.
type ObjectRef struct {
	// GroupVersionKind of the object.
	schema.GroupVersionKind
	// Namespace is empty for cluster-scoped objects.
	Namespace string
	// Name of the object.
	Name string
}

// RefOf returns the reference of obj.
func RefOf(obj *unstructured.Unstructured) ObjectRef {
	return ObjectRef{GroupVersionKind: obj.GroupVersionKind(), Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// String renders the reference as group/version, Kind=kind, namespace/name.
func (r ObjectRef) String() string {
	gv := r.GroupVersion().String()
	if r.Namespace == "" {
		return fmt.Sprintf("%s %s %s", gv, r.Kind, r.Name)
	}
	return fmt.Sprintf("%s %s %s/%s", gv, r.Kind, r.Namespace, r.Name)
}

// ObjectReader reads live objects of a cluster.
type ObjectReader interface {
	// Get returns one object, or an error matching ErrNotFound.
	Get(ctx context.Context, ref ObjectRef) (*unstructured.Unstructured, error)
	// List returns the objects of one kind in namespace ("" for all
	// namespaces, or for cluster-scoped kinds) that match selector (nil
	// for all), in one request, sorted by namespace and name.
	List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error)
}

// ApplyOptions tune one server-side apply.
type ApplyOptions struct {
	// FieldManager owns the applied fields; required.
	FieldManager string
	// Force takes ownership of fields other managers own instead of
	// failing with a *ConflictError.
	Force bool
	// DryRun computes the result without storing it.
	DryRun bool
	// DiscardResult says the caller does not read the returned object: a
	// backend may then return nil instead of the object as stored (and
	// save copying it), with the same error it would return otherwise.
	// Backends that ignore it return the object as usual.
	DiscardResult bool
	// Subresource is what the apply writes, as on a real API server: ""
	// is the object itself, and on kinds that have a status subresource
	// (Deployment, Pod, Namespace, a custom resource whose CRD version
	// declares subresources.status, …) such an apply leaves status as it
	// is live (none on create), whatever status obj carries; on other kinds
	// status is a field like any other. SubresourceStatus writes
	// status only: everything else of obj is ignored and the live object
	// keeps it; the object must exist (a *NotFoundError otherwise), and a
	// kind without a status subresource is an error. Any other value is
	// an error that names it.
	Subresource string
}

// SubresourceStatus is the ApplyOptions.Subresource that writes an
// object's status.
const SubresourceStatus = "status"

// DeleteOptions tune one delete.
type DeleteOptions struct {
	// Propagation is the deletion propagation policy; empty means
	// background, as kubectl and Flux default.
	Propagation metav1.DeletionPropagation
}

// ObjectWriter changes live objects of a cluster.
type ObjectWriter interface {
	// Apply server-side applies obj and returns the object as stored.
	// Conflicting field ownership yields a *ConflictError.
	Apply(ctx context.Context, obj *unstructured.Unstructured, opts ApplyOptions) (*unstructured.Unstructured, error)
	// Delete removes one object; deleting an absent object yields an
	// error matching ErrNotFound.
	Delete(ctx context.Context, ref ObjectRef, opts DeleteOptions) error
}

// ObjectClient reads and writes live objects.
type ObjectClient interface {
	ObjectReader
	ObjectWriter
}

// Cluster is one member cluster as the fleet layer sees it: a name, Helm's
// configuration and an object client. Placement facts (labels, region,
// capacity) are plain data kept beside it, see the fleet types.
type Cluster interface {
	// Name identifies the cluster in plans, events and errors.
	Name() string
	HelmConfigurer
	ObjectClient
}
