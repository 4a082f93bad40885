package controller

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
)

// ObjectClient adapts c, a controller-runtime client such as a manager's
// GetClient(), to a release.ObjectClient of the cluster it talks to,
// named name in errors (say "hub"): fleet.NewObjectStore(
// controller.ObjectClient("hub", mgr.GetClient()), …) keeps a fleet's
// inventory on the hub without a second client.
//
// It behaves as release/kube's Cluster does: Get and Delete of an absent
// object yield a *release.NotFoundError (errors.Is release.ErrNotFound);
// Apply is a server-side apply as opts.FieldManager (kube.DefaultFieldManager
// when empty), forced with opts.Force, dry-run with opts.DryRun, to the
// status subresource with release.SubresourceStatus, and a field another
// manager owns yields a *release.ConflictError; an RBAC denial yields a
// *release.ForbiddenError; List makes one request and sorts by namespace
// and name. A call on a done ctx fails with ctx's error without a request.
// Objects are unstructured, which a manager's client reads from the API
// server, not from its cache (unless its client.CacheOptions.Unstructured
// is set).
func ObjectClient(name string, c client.Client) release.ObjectClient {
	return &objectClient{name: name, c: c}
}

// objectClient is ObjectClient's release.ObjectClient.
type objectClient struct {
	name string
	c    client.Client
}

// Get returns the object ref names, or a *release.NotFoundError.
func (o *objectClient) Get(ctx context.Context, ref release.ObjectRef) (*unstructured.Unstructured, error) {
	if err := ctx.Err(); err != nil {
		return nil, o.error(ctx, "get", ref.String(), ref, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	if err := o.c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		return nil, o.error(ctx, "get", ref.String(), ref, err)
	}
	return u, nil
}

// List returns the objects of kind gvk in namespace ("" for all) that
// match selector (nil for all), sorted by namespace and name.
func (o *objectClient) List(ctx context.Context, gvk schema.GroupVersionKind, namespace string, selector labels.Selector) ([]*unstructured.Unstructured, error) {
	what := gvk.GroupVersion().String() + " " + gvk.Kind
	if namespace != "" {
		what += " in namespace " + namespace
	}
	ref := release.ObjectRef{GroupVersionKind: gvk, Namespace: namespace}
	if err := ctx.Err(); err != nil {
		return nil, o.error(ctx, "list", what, ref, err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	opts := []client.ListOption{client.InNamespace(namespace)}
	if selector != nil {
		opts = append(opts, client.MatchingLabelsSelector{Selector: selector})
	}
	if err := o.c.List(ctx, list, opts...); err != nil {
		return nil, o.error(ctx, "list", what, ref, err)
	}
	out := make([]*unstructured.Unstructured, 0, len(list.Items))
	for i := range list.Items {
		if list.Items[i].GetKind() == "" {
			list.Items[i].SetGroupVersionKind(gvk)
		}
		out = append(out, &list.Items[i])
	}
	slices.SortFunc(out, byNamespaceName)
	return out, nil
}

// Apply server-side applies obj (without its metadata.managedFields) and
// returns the object as stored.
func (o *objectClient) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	ref := release.RefOf(obj)
	if err := ctx.Err(); err != nil {
		return nil, o.error(ctx, "apply", ref.String(), ref, err)
	}
	if ref.Kind == "" || ref.Version == "" {
		return nil, fmt.Errorf("cluster %s: apply %s: apiVersion and kind are required", o.name, ref)
	}
	body := obj.DeepCopy()
	body.SetManagedFields(nil)
	ao := client.ApplyOptions{FieldManager: cmp.Or(opts.FieldManager, kube.DefaultFieldManager), Force: &opts.Force}
	if opts.DryRun {
		ao.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch opts.Subresource {
	case "":
		err = o.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(body), &ao)
	case release.SubresourceStatus:
		err = o.c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(body), &client.SubResourceApplyOptions{ApplyOptions: ao})
	default:
		return nil, fmt.Errorf("cluster %s: apply %s: subresource %q: not one of \"\" and %q", o.name, ref, opts.Subresource, release.SubresourceStatus)
	}
	if err != nil {
		return nil, o.error(ctx, "apply", ref.String(), ref, err)
	}
	return body, nil
}

// Delete removes the object ref names with opts.Propagation (background
// when empty); an absent object yields a *release.NotFoundError.
func (o *objectClient) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	if err := ctx.Err(); err != nil {
		return o.error(ctx, "delete", ref.String(), ref, err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	u.SetNamespace(ref.Namespace)
	u.SetName(ref.Name)
	if err := o.c.Delete(ctx, u, client.PropagationPolicy(cmp.Or(opts.Propagation, metav1.DeletePropagationBackground))); err != nil {
		return o.error(ctx, "delete", ref.String(), ref, err)
	}
	return nil
}

// error turns err of a call (verb on what) into the release package's
// typed errors; after ctx is done, an error that matches ctx's.
func (o *objectClient) error(ctx context.Context, verb, what string, ref release.ObjectRef, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if !errors.Is(err, ctxErr) {
			err = fmt.Errorf("%w: %w", ctxErr, err)
		}
		return fmt.Errorf("cluster %s: %s %s: %w", o.name, verb, what, err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		switch {
		case apierrors.IsNotFound(err):
			return &release.NotFoundError{Cluster: o.name, Object: ref}
		case apierrors.IsForbidden(err):
			return &release.ForbiddenError{Cluster: o.name, Verb: verb, Resource: what, Err: err}
		case apierrors.IsConflict(err) && verb == "apply":
			if conflicts := managerConflicts(status.Status()); len(conflicts) > 0 {
				return &release.ConflictError{Cluster: o.name, Object: ref, Conflicts: conflicts, Err: err}
			}
		}
	}
	return fmt.Errorf("cluster %s: %s %s: %w", o.name, verb, what, err)
}

// byNamespaceName orders objects by namespace, then name.
func byNamespaceName(a, b *unstructured.Unstructured) int {
	return cmp.Or(cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}

// managerConflicts are the FieldManagerConflict causes of s, sorted by
// path then manager; a cause's message reads `conflict with "manager" …`.
func managerConflicts(s metav1.Status) []release.FieldConflict {
	if s.Details == nil {
		return nil
	}
	var out []release.FieldConflict
	for _, cause := range s.Details.Causes {
		if cause.Type == metav1.CauseTypeFieldManagerConflict {
			manager := cause.Message
			if q, err := strconv.QuotedPrefix(strings.TrimPrefix(manager, "conflict with ")); err == nil {
				manager, _ = strconv.Unquote(q)
			}
			out = append(out, release.FieldConflict{Manager: manager, Path: cause.Field})
		}
	}
	slices.SortFunc(out, func(a, b release.FieldConflict) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Manager, b.Manager))
	})
	return out
}
