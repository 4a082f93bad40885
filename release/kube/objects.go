package kube

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/helmfleet/helmfleet/release"
)

// Verbs as the API server's authorizer names them; they appear in
// *release.ForbiddenError.
const (
	verbGet    = "get"
	verbList   = "list"
	verbPatch  = "patch"
	verbDelete = "delete"
)

// target is one resolved call: the resource client, the mapping and the
// namespace actually used.
type target struct {
	client      dynamic.ResourceInterface
	resource    schema.GroupResource
	subresource string // "status" for a write to the status subresource
	namespaced  bool
	namespace   string
}

// resolve maps gvk to its resource, resetting the mapper once when the kind
// is unknown (a CRD created since discovery ran).
func (c *Cluster) resolve(gvk schema.GroupVersionKind, namespace string) (*target, error) {
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		// The server serves a kind the mapper has not seen: discovery
		// changed, and so may the capabilities.
		c.caps.invalidate()
		meta.MaybeResetRESTMapper(c.mapper)
		mapping, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, err
	}
	t := &target{resource: mapping.Resource.GroupResource()}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		t.namespaced = true
		t.namespace = namespace
		t.client = c.dynamic.Resource(mapping.Resource).Namespace(namespace)
	} else {
		t.client = c.dynamic.Resource(mapping.Resource)
	}
	return t, nil
}

// resolveObject resolves ref for a call on one object; namespaced kinds
// need a namespace.
func (c *Cluster) resolveObject(verb string, ref release.ObjectRef) (*target, error) {
	if ref.Name == "" {
		return nil, fmt.Errorf("cluster %s: %s %s: metadata.name is empty", c.name, verb, ref)
	}
	t, err := c.resolve(ref.GroupVersionKind, ref.Namespace)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %s %s: %w", c.name, verb, ref, err)
	}
	if t.namespaced && ref.Namespace == "" {
		return nil, fmt.Errorf("cluster %s: %s %s: metadata.namespace is empty but %s is namespaced", c.name, verb, ref, t.resource)
	}
	return t, nil
}

// Get returns the object ref names, or a *release.NotFoundError.
func (c *Cluster) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %s: get %s: %w", c.name, ref, err)
	}
	t, err := c.resolveObject(verbGet, ref)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	obj, err := t.client.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, c.callError(ctx, err, verbGet, ref.String(), ref, t)
	}
	return obj, nil
}

// List returns the objects of kind gvk in namespace ("" for all
// namespaces; ignored for cluster-scoped kinds) that match selector (nil
// for all), with one list request, sorted by namespace and name.
func (c *Cluster) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	what := gvk.GroupVersion().String() + " " + gvk.Kind
	if namespace != "" {
		what += " in namespace " + namespace
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %s: list %s: %w", c.name, what, err)
	}
	t, err := c.resolve(gvk, namespace)
	if err != nil {
		return nil, ctxError(ctx, fmt.Errorf("cluster %s: list %s: %w", c.name, what, err))
	}
	opts := metav1.ListOptions{}
	if selector != nil {
		opts.LabelSelector = selector.String()
	}
	list, err := t.client.List(ctx, opts)
	if err != nil {
		return nil, c.callError(ctx, err, verbList, what, release.ObjectRef{GroupVersionKind: gvk, Namespace: namespace}, t)
	}
	out := make([]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
		if out[i].GetKind() == "" {
			out[i].SetGroupVersionKind(gvk)
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
	})
	return out, nil
}

// Apply server-side applies obj (without its metadata.managedFields) as
// opts.FieldManager, or the cluster's default manager when that is empty,
// to the object or, with opts.Subresource "status", to its status
// subresource (the verb the API server authorizes is then patch on
// <resource>/status). Fields another manager owns yield a
// *release.ConflictError unless opts.Force is set.
func (c *Cluster) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	ref := release.RefOf(obj)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %s: apply %s: %w", c.name, ref, err)
	}
	if ref.Kind == "" || ref.Version == "" {
		return nil, fmt.Errorf("cluster %s: apply %s: apiVersion and kind are required", c.name, ref)
	}
	var subresources []string
	switch opts.Subresource {
	case "":
	case release.SubresourceStatus:
		subresources = []string{opts.Subresource}
	default:
		return nil, fmt.Errorf("cluster %s: apply %s: subresource %q: not one of \"\" and %q", c.name, ref, opts.Subresource, release.SubresourceStatus)
	}
	t, err := c.resolveObject(verbPatch, ref)
	if err != nil {
		return nil, ctxError(ctx, err)
	}
	t.subresource = opts.Subresource
	body := obj.DeepCopy()
	body.SetManagedFields(nil)
	data, err := body.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: apply %s: encode: %w", c.name, ref, err)
	}
	manager := cmp.Or(opts.FieldManager, c.fieldManager)
	popts := metav1.PatchOptions{FieldManager: manager, Force: &opts.Force}
	if opts.DryRun {
		popts.DryRun = []string{metav1.DryRunAll}
	}
	out, err := t.client.Patch(ctx, ref.Name, types.ApplyPatchType, data, popts, subresources...)
	if err != nil {
		if t.subresource != "" && apierrors.IsNotFound(err) {
			return nil, c.subresourceNotFound(ctx, err, ref, t)
		}
		return nil, c.callError(ctx, err, verbPatch, ref.String(), ref, t)
	}
	if !opts.DryRun {
		c.wrote(ref)
	}
	return out, nil
}

// wrote notes a write of ref: a CRD or an APIService changes what
// discovery serves, so the next Capabilities rediscovers.
func (c *Cluster) wrote(ref release.ObjectRef) {
	if changesDiscovery(ref.GroupVersionKind.GroupKind()) {
		c.caps.invalidate()
	}
}

// subresourceNotFound tells the two 404s of a write to a subresource
// apart: the object is absent (a *release.NotFoundError), or it exists
// and its kind serves no such subresource (an error that says so).
func (c *Cluster) subresourceNotFound(ctx context.Context, err error, ref release.ObjectRef, t *target) error {
	if _, getErr := t.client.Get(ctx, ref.Name, metav1.GetOptions{}); getErr == nil {
		return fmt.Errorf("cluster %s: apply %s: %s has no %s subresource: %w", c.name, ref, t.resource, t.subresource, err)
	}
	return c.callError(ctx, err, verbPatch, ref.String(), ref, t)
}

// Delete removes the object ref names with opts.Propagation (background
// when empty). An absent object yields a *release.NotFoundError.
func (c *Cluster) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("cluster %s: delete %s: %w", c.name, ref, err)
	}
	t, err := c.resolveObject(verbDelete, ref)
	if err != nil {
		return ctxError(ctx, err)
	}
	propagation := cmp.Or(opts.Propagation, metav1.DeletePropagationBackground)
	if err := t.client.Delete(ctx, ref.Name, metav1.DeleteOptions{PropagationPolicy: &propagation}); err != nil {
		return c.callError(ctx, err, verbDelete, ref.String(), ref, t)
	}
	c.wrote(ref)
	return nil
}

// callError turns an API error of a call on what (ref, or a description
// of a list) into the release package's typed errors.
func (c *Cluster) callError(ctx context.Context, err error, verb, what string, ref release.ObjectRef, t *target) error {
	if ctx.Err() != nil {
		return ctxError(ctx, fmt.Errorf("cluster %s: %s %s: %w", c.name, verb, what, err))
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("cluster %s: %s %s: %w", c.name, verb, what, err)
	}
	switch {
	case apierrors.IsNotFound(err):
		return &release.NotFoundError{Cluster: c.name, Object: missingObject(status.Status(), ref)}
	case apierrors.IsForbidden(err):
		return &release.ForbiddenError{Cluster: c.name, Verb: verb, Resource: resourceString(t), Err: err}
	case apierrors.IsConflict(err):
		if conflicts := fieldConflicts(status.Status()); len(conflicts) > 0 {
			return &release.ConflictError{Cluster: c.name, Object: ref, Conflicts: conflicts, Err: err}
		}
	}
	return fmt.Errorf("cluster %s: %s %s: %w", c.name, verb, what, err)
}

// missingObject is ref, or the Namespace object when the server says the
// namespace of ref is what is missing (an apply into an absent namespace).
func missingObject(s metav1.Status, ref release.ObjectRef) release.ObjectRef {
	d := s.Details
	if d != nil && d.Kind == "namespaces" && d.Group == "" && ref.Kind != "Namespace" && d.Name == ref.Namespace {
		return release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: d.Name}
	}
	return ref
}

// resourceString names the resource of t the way kubectl does
// (deployments.apps, or deployments.apps/status for the subresource), with
// its namespace when there is one.
func resourceString(t *target) string {
	s := t.resource.String()
	if t.subresource != "" {
		s += "/" + t.subresource
	}
	if t.namespace == "" {
		return s
	}
	return s + " in namespace " + t.namespace
}

// fieldConflicts reads the field-manager conflicts out of an apply's
// Conflict status, sorted by path then manager. The API server writes each
// as a cause {type: FieldManagerConflict, field: ".spec.x",
// message: `conflict with "manager" …`}.
func fieldConflicts(s metav1.Status) []release.FieldConflict {
	if s.Details == nil {
		return nil
	}
	var out []release.FieldConflict
	for _, cause := range s.Details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		out = append(out, release.FieldConflict{Manager: conflictManager(cause.Message), Path: cause.Field})
	}
	slices.SortFunc(out, func(a, b release.FieldConflict) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Manager, b.Manager))
	})
	return out
}

// conflictManager extracts the manager's name from a cause message such as
// `conflict with "kubectl" using apps/v1`; a message of another shape is
// returned whole so that nothing is lost.
func conflictManager(msg string) string {
	rest, ok := strings.CutPrefix(msg, "conflict with ")
	if !ok {
		return msg
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return rest
	}
	name, err := strconv.Unquote(quoted)
	if err != nil {
		return rest
	}
	return name
}
