package kustomize

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

// Apply actions of an object, as Flux's change sets name them.
const (
	ActionCreated    = "created"
	ActionConfigured = "configured"
	ActionUnchanged  = "unchanged"
	ActionSkipped    = "skipped"
	ActionDeleted    = "deleted"
)

// ObjectAction is what a reconcile did to one object.
type ObjectAction struct {
	// Object is the object.
	Object release.ObjectRef
	// Action is ActionCreated, ActionConfigured, ActionUnchanged,
	// ActionSkipped (reconcile disabled, ssa Ignore or IfNotPresent and
	// present) or ActionDeleted (pruned).
	Action string
}

// ReconcileResult is what one Reconcile did.
type ReconcileResult struct {
	// Revision of the source applied (or attempted).
	Revision string
	// Suspended is set when spec.suspend skipped the reconcile.
	Suspended bool
	// Applied are the objects applied, in apply order.
	Applied []ObjectAction
	// Pruned are the objects deleted because they left the build.
	Pruned []release.ObjectRef
	// Excluded are the objects ReconcilerConfig.Exclude left out.
	Excluded []release.ObjectRef
	// Warnings are the Kustomization's fields not acted on and
	// kustomize's deprecation notices.
	Warnings []string
}

// Reconcile brings k's objects on cluster in line with its source, as
// Flux's kustomize-controller does, and records the outcome in k.Status:
//
//  1. Validate (an invalid spec is Stalled, reason InvalidSpec); a
//     suspended Kustomization is left alone;
//  2. Build (with substitution; variables from ReconcilerConfig.Variables
//     or, without it, from cluster); a failure is Ready False, reason
//     ArtifactFailed (source) or BuildFailed, and nothing is applied; a
//     reference to another namespace refused by
//     ReconcilerConfig.NoCrossNamespaceRefs is Ready False and Stalled,
//     reason AccessDenied, before any source is read;
//  3. server-side apply (ReconcilerConfig.FieldManager, forcing
//     ownership) in Flux's stages: CustomResourceDefinitions, Namespaces
//     and ClusterRoles first, then waiting until they are Current; then
//     kinds named *Class, waited for likewise; then the rest, in build
//     order. Every object carries the NameLabel and NamespaceLabel of k
//     and spec.commonMetadata. Objects with ReconcileKey: disabled or
//     SSAKey: Ignore are skipped, SSAKey: IfNotPresent are applied only
//     when absent; with spec.force (or ForceKey: enabled) an object
//     whose update fails on an immutable field is deleted and created;
//  4. the inventory (status.inventory, Flux's ids) becomes the applied
//     set; with spec.prune the objects of the old inventory that left it
//     are deleted (but those with PruneKey: disabled, and those no longer
//     labelled as k's), else forgotten; a failed delete keeps its entry;
//  5. with spec.wait every applied object, else the spec.healthChecks
//     (but those naming an object Exclude left out: the caller checks
//     those), must be Current within GetTimeout — by the
//     spec.healthCheckExprs of their group and kind (but batch Jobs, as
//     Flux), else by kstatus: Healthy True or False, reason
//     HealthCheckFailed;
//  6. Ready True, reason ReconciliationSucceeded, lastAppliedRevision.
//
// Reconciling is True while it runs and removed at the end; the
// observed generation and lastAttemptedRevision are recorded either way.
// The returned error is the failure the conditions record.
func (r *Reconciler) Reconcile(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization) (_ *ReconcileResult, err error) {
	res := &ReconcileResult{}
	start := r.cfg.Now()
	if err = k.Validate(); err != nil {
		r.fail(k, release.ReasonInvalidSpec, err)
		r.set(k, release.ConditionStalled, metav1.ConditionTrue, release.ReasonInvalidSpec, err.Error())
		return res, err
	}
	if k.Spec.Suspend {
		res.Suspended = true
		return res, nil
	}
	if v, ok := k.Annotations["reconcile.fluxcd.io/requestedAt"]; ok {
		k.Status.LastHandledReconcileAt = v
	}
	k.Status.RemoveCondition(release.ConditionStalled)
	r.set(k, release.ConditionReconciling, metav1.ConditionTrue, release.ReasonProgressing, "Building manifests")
	defer k.Status.RemoveCondition(release.ConditionReconciling)

	// substituteFrom is read with the caller's client, as Flux's
	// controller reads it with its own; the objects are applied, pruned
	// and checked as the service account.
	vars := r.reader(cluster)
	if cluster, err = r.actAs(cluster, k); err != nil {
		r.fail(k, release.ReasonReconciliationFailed, err)
		return res, err
	}
	built, rev, err := r.build(ctx, k, vars)
	res.Warnings = append(res.Warnings, release.KustomizationFieldWarnings(k)...)
	res.Revision = rev
	k.Status.LastAttemptedRevision = rev
	if built != nil {
		res.Warnings = append(res.Warnings, built.Warnings...)
	}
	if err != nil {
		reason := release.ReasonBuildFailed
		if _, ok := errors.AsType[*SourceError](err); ok {
			reason = release.ReasonArtifactFailed
		}
		if _, ok := errors.AsType[*release.AccessDeniedError](err); ok {
			// It will not change without a change of the spec.
			r.fail(k, release.ReasonAccessDenied, err)
			r.set(k, release.ConditionStalled, metav1.ConditionTrue, release.ReasonAccessDenied, err.Error())
			return res, err
		}
		r.fail(k, reason, err)
		return res, err
	}
	objs, excluded := r.prepare(k, built.Manifests)
	res.Excluded = excluded
	digest, err := objectsDigest(objs)
	if err != nil {
		r.fail(k, release.ReasonBuildFailed, err)
		return res, err
	}
	// .status.history records how this set of objects fared, as Flux
	// records it once the build succeeded.
	defer func() {
		if ready := k.Status.GetCondition(release.ConditionReady); ready != nil {
			end := r.cfg.Now()
			k.Status.RecordHistory(digest, end, end.Sub(start), ready.Reason, map[string]string{"revision": built.Revision})
		}
	}()

	judge, err := healthJudge(k)
	if err != nil {
		r.fail(k, release.ReasonInvalidSpec, err)
		return res, err
	}
	r.set(k, release.ConditionReconciling, metav1.ConditionTrue, release.ReasonProgressing, "Applying revision "+built.Revision)
	applied, err := r.applyStaged(ctx, cluster, k, objs, built.marks, judge)
	res.Applied = applied
	if err != nil {
		r.fail(k, release.ReasonReconciliationFailed, err)
		return res, err
	}

	old := k.Status.Inventory
	inv := inventoryOf(objs)
	stale := staleEntries(old, inv)
	k.Status.Inventory = inv
	if k.Spec.Prune && len(stale) > 0 {
		pruned, survivors, err := r.prune(ctx, cluster, k, stale)
		res.Pruned = pruned
		if err != nil {
			k.Status.Inventory = mergeEntries(inv, survivors)
			r.fail(k, release.ReasonPruneFailed, err)
			return res, err
		}
	}

	if refs, err := r.healthRefs(k, objs, excluded); err != nil {
		r.fail(k, release.ReasonHealthCheckFailed, err)
		return res, err
	} else if len(refs) > 0 {
		r.set(k, release.ConditionReconciling, metav1.ConditionTrue, release.ReasonProgressing, "Running health checks with a timeout of "+k.GetTimeout().String())
		if err := r.wait(ctx, cluster, "health check", refs, k.GetTimeout(), sensitiveRefs(objs, built.marks), judge); err != nil {
			r.set(k, release.ConditionHealthy, metav1.ConditionFalse, release.ReasonHealthCheckFailed, err.Error())
			r.fail(k, release.ReasonHealthCheckFailed, err)
			return res, err
		}
		r.set(k, release.ConditionHealthy, metav1.ConditionTrue, release.ReasonSucceeded, "Health check passed")
	} else {
		k.Status.RemoveCondition(release.ConditionHealthy)
	}
	k.Status.LastAppliedRevision = built.Revision
	k.Status.ObservedGeneration = k.Generation
	r.set(k, release.ConditionReady, metav1.ConditionTrue, release.ReasonReconciliationSucceeded, "Applied revision: "+built.Revision)
	return res, nil
}

// Delete removes k's objects from cluster as Flux does when a
// Kustomization is deleted: with DeletesInventory (deletionPolicy Delete
// or WaitForTermination, or MirrorPrune with spec.prune), every object of
// the inventory that is still labelled as k's and not PruneKey: disabled
// is deleted, Namespaces and CRDs last; WaitForTermination then waits
// until they are gone (within GetTimeout). A suspended Kustomization
// orphans its objects. The inventory is emptied of what is gone.
func (r *Reconciler) Delete(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization) error {
	if k.Spec.Suspend || !k.DeletesInventory() || k.Status.Inventory == nil {
		k.Status.Inventory = nil
		return nil
	}
	cluster, err := r.actAs(cluster, k)
	if err != nil {
		return err
	}
	pruned, survivors, err := r.prune(ctx, cluster, k, k.Status.Inventory.Entries)
	k.Status.Inventory = mergeEntries(&release.ResourceInventory{}, survivors)
	if len(k.Status.Inventory.Entries) == 0 {
		k.Status.Inventory = nil
	}
	if err != nil {
		return err
	}
	if k.GetDeletionPolicy() == release.DeletionPolicyWaitForTermination {
		return r.waitGone(ctx, cluster, pruned, k.GetTimeout())
	}
	return nil
}

// actAs returns cluster acting as k's service account
// (spec.serviceAccountName, else ReconcilerConfig.DefaultServiceAccount,
// of k's namespace) through its release.Impersonator role; cluster itself
// when neither names one. A cluster that cannot impersonate is an error:
// k is never applied with the cluster's own credentials instead.
func (r *Reconciler) actAs(cluster release.ObjectClient, k *release.Kustomization) (release.ObjectClient, error) {
	sa, field := k.Spec.ServiceAccountName, "spec.serviceAccountName"
	if sa == "" {
		sa, field = r.cfg.DefaultServiceAccount, "spec.serviceAccountName (empty: the reconciler's DefaultServiceAccount)"
	}
	if sa == "" {
		return cluster, nil
	}
	user := release.ServiceAccountUser(k.Namespace, sa)
	im, ok := cluster.(release.Impersonator)
	if !ok {
		return nil, fmt.Errorf("Kustomization %s/%s: %s: the cluster client cannot act as %s (%w); refusing to apply with its own credentials", k.Namespace, k.Name, field, user, release.ErrCannotImpersonate)
	}
	c, err := im.Impersonate(user)
	if err != nil {
		return nil, fmt.Errorf("Kustomization %s/%s: %s: %w", k.Namespace, k.Name, field, err)
	}
	return c, nil
}

// reader is where substituteFrom is read: the configured reader, else
// the cluster's ConfigMaps and Secrets.
func (r *Reconciler) reader(cluster release.ObjectReader) values.Reader {
	if r.cfg.Variables != nil {
		return r.cfg.Variables
	}
	return release.NewObjectValues(cluster)
}

// set sets a condition of k for its generation.
func (r *Reconciler) set(k *release.Kustomization, typ string, status metav1.ConditionStatus, reason, msg string) {
	k.Status.SetCondition(metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: trimMessage(msg),
		ObservedGeneration: k.Generation, LastTransitionTime: metav1.NewTime(r.cfg.Now()),
	})
}

// fail records a failed attempt: Ready False with reason.
func (r *Reconciler) fail(k *release.Kustomization, reason string, err error) {
	k.Status.ObservedGeneration = k.Generation
	r.set(k, release.ConditionReady, metav1.ConditionFalse, reason, err.Error())
}

// maxMessage is the longest condition message, Flux's
// MaxConditionMessageLength.
const maxMessage = 20000

func trimMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return s[:maxMessage-3] + "..."
}

// prepare copies the objects to apply, leaving out the excluded ones,
// and sets k's owner labels and common metadata on them.
func (r *Reconciler) prepare(k *release.Kustomization, manifests []*unstructured.Unstructured) (objs []*unstructured.Unstructured, excluded []release.ObjectRef) {
	for _, m := range manifests {
		if r.cfg.Exclude != nil && r.cfg.Exclude(m) {
			excluded = append(excluded, release.RefOf(m))
			continue
		}
		o := m.DeepCopy()
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		annotations := o.GetAnnotations()
		if cm := k.Spec.CommonMetadata; cm != nil {
			for key, v := range cm.Labels {
				labels[key] = v
			}
			if len(cm.Annotations) > 0 && annotations == nil {
				annotations = map[string]string{}
			}
			for key, v := range cm.Annotations {
				annotations[key] = v
			}
		}
		labels[NameLabel] = k.Name
		labels[NamespaceLabel] = k.Namespace
		o.SetLabels(labels)
		if annotations != nil {
			o.SetAnnotations(annotations)
		}
		objs = append(objs, o)
	}
	return objs, excluded
}

// stage is the apply stage of an object: 0 cluster definitions (CRDs,
// Namespaces, ClusterRoles), 1 classes (kinds named *Class), 2 the rest.
func stage(o *unstructured.Unstructured) int {
	gvk := o.GroupVersionKind()
	switch {
	case gvk.Kind == "CustomResourceDefinition" && gvk.Group == "apiextensions.k8s.io",
		gvk.Kind == "Namespace" && gvk.Group == "",
		gvk.Kind == "ClusterRole" && gvk.Group == "rbac.authorization.k8s.io":
		return 0
	case strings.HasSuffix(gvk.Kind, "Class"):
		return 1
	}
	return 2
}

// applyStaged applies objs stage by stage, waiting for the first two
// stages to be Current before the next.
func (r *Reconciler) applyStaged(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization, objs []*unstructured.Unstructured, marks *secretMarks, judge release.Judge) ([]ObjectAction, error) {
	var done []ObjectAction
	for st := range 3 {
		var refs []release.ObjectRef
		for _, o := range objs {
			if stage(o) != st {
				continue
			}
			action, err := r.applyOne(ctx, cluster, k, o, marks.sensitive(o))
			if err != nil {
				return done, err
			}
			done = append(done, ObjectAction{Object: release.RefOf(o), Action: action})
			if action != ActionSkipped {
				refs = append(refs, release.RefOf(o))
			}
		}
		if st < 2 && len(refs) > 0 {
			what := []string{"cluster definitions (CRDs, Namespaces, ClusterRoles)", "class definitions"}[st]
			if err := r.wait(ctx, cluster, what, refs, k.GetTimeout(), sensitiveRefs(objs, marks), judge); err != nil {
				return done, err
			}
		}
	}
	return done, nil
}

// ApplyError is an object the cluster refused. An object that holds
// values substituted from Secrets, or is a Secret, is refused with a
// *release.WithheldError instead: the cluster's message may quote the
// object's values.
type ApplyError struct {
	// Kustomization is namespace/name.
	Kustomization string
	// Object is the object.
	Object release.ObjectRef
	// Err is the cluster's error.
	Err error
}

// Error names the Kustomization, the object and the cluster's error; the
// object once when the cluster's error names the apply of it already
// (release/kube and release/memory say "cluster c: apply <object>: …").
func (e *ApplyError) Error() string {
	msg := e.Err.Error()
	if strings.Contains(msg, "apply "+e.Object.String()+": ") {
		return fmt.Sprintf("Kustomization %s: %s", e.Kustomization, msg)
	}
	return fmt.Sprintf("Kustomization %s: apply %s: %s", e.Kustomization, e.Object, msg)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// applyOne applies one object and says what happened to it. The
// cluster's error about a sensitive object is withheld.
func (r *Reconciler) applyOne(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization, o *unstructured.Unstructured, sensitive bool) (string, error) {
	ref := release.RefOf(o)
	fail := func(err error) (string, error) {
		if sensitive {
			return "", withheld(k, err, "apply", objectName(ref))
		}
		return "", &ApplyError{Kustomization: k.Namespace + "/" + k.Name, Object: ref, Err: err}
	}
	live, skip, err := liveFor(ctx, cluster, o)
	switch {
	case err != nil:
		return fail(err)
	case skip:
		return ActionSkipped, nil
	}
	opts := release.ApplyOptions{FieldManager: r.cfg.FieldManager, Force: true}
	out, err := cluster.Apply(ctx, o, opts)
	if err != nil && live != nil && (k.Spec.Force || has(o, ForceKey, "enabled")) && immutable(err) {
		if derr := cluster.Delete(ctx, ref, release.DeleteOptions{}); derr != nil && !errors.Is(derr, release.ErrNotFound) {
			return fail(fmt.Errorf("recreate after %v: %w", err, derr))
		}
		live = nil
		out, err = cluster.Apply(ctx, o, opts)
	}
	if err != nil {
		return fail(err)
	}
	if live == nil {
		return ActionCreated, nil
	}
	// Compared without the server's bookkeeping: a backend may bump the
	// resourceVersion of a no-op apply (managedFields timestamps).
	before, err1 := render(bare(live))
	after, err2 := render(bare(out))
	if err1 != nil || err2 != nil || before != after {
		return ActionConfigured, nil
	}
	return ActionUnchanged, nil
}

// liveFor returns the live copy of o (nil if absent), or says that o is
// not to be applied: ReconcileKey disabled, SSAKey Ignore, or SSAKey
// IfNotPresent and present.
func liveFor(ctx context.Context, cluster release.ObjectReader, o *unstructured.Unstructured) (live *unstructured.Unstructured, skip bool, err error) {
	if has(o, ReconcileKey, "disabled") || has(o, SSAKey, "Ignore") {
		return nil, true, nil
	}
	live, err = cluster.Get(ctx, release.RefOf(o))
	switch {
	case absent(err):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	}
	return live, has(o, SSAKey, "IfNotPresent"), nil
}

// immutable reports whether an apply failed on an immutable field.
func immutable(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "immutable") || strings.Contains(msg, "may not change") || strings.Contains(msg, "cannot change")
}

// absent reports whether err says an object does not exist, its kind
// included (a custom resource whose CRD is gone or not there yet).
func absent(err error) bool {
	return errors.Is(err, release.ErrNotFound) || apimeta.IsNoMatchError(err)
}

// has reports whether o's label or annotation key is value.
func has(o *unstructured.Unstructured, key, value string) bool {
	return o.GetLabels()[key] == value || o.GetAnnotations()[key] == value
}

// InventoryID returns an object's inventory id,
// <namespace>_<name>_<group>_<kind>, as Flux writes it.
func InventoryID(ref release.ObjectRef) string {
	return ref.Namespace + "_" + ref.Name + "_" + ref.Group + "_" + ref.Kind
}

// ParseInventoryEntry returns the object an inventory entry names.
func ParseInventoryEntry(e release.ResourceRef) (release.ObjectRef, error) {
	parts := strings.Split(e.ID, "_")
	if len(parts) != 4 || parts[1] == "" || parts[3] == "" {
		return release.ObjectRef{}, fmt.Errorf("inventory entry %q: not <namespace>_<name>_<group>_<kind>", e.ID)
	}
	version := e.Version
	if i := strings.LastIndexByte(version, '/'); i >= 0 {
		version = version[i+1:] // tolerate group/version
	}
	if version == "" {
		return release.ObjectRef{}, fmt.Errorf("inventory entry %q: no version", e.ID)
	}
	return release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: parts[2], Version: version, Kind: parts[3]}, Namespace: parts[0], Name: parts[1]}, nil
}

// inventoryOf is the inventory of objs, sorted by id.
func inventoryOf(objs []*unstructured.Unstructured) *release.ResourceInventory {
	inv := &release.ResourceInventory{Entries: []release.ResourceRef{}}
	for _, o := range objs {
		ref := release.RefOf(o)
		inv.Entries = append(inv.Entries, release.ResourceRef{ID: InventoryID(ref), Version: ref.Version})
	}
	slices.SortFunc(inv.Entries, func(a, b release.ResourceRef) int { return strings.Compare(a.ID, b.ID) })
	inv.Entries = slices.CompactFunc(inv.Entries, func(a, b release.ResourceRef) bool { return a.ID == b.ID })
	return inv
}

// staleEntries are the entries of old whose object is not in cur.
func staleEntries(old, cur *release.ResourceInventory) []release.ResourceRef {
	if old == nil {
		return nil
	}
	in := map[string]bool{}
	for _, e := range cur.Entries {
		in[e.ID] = true
	}
	var out []release.ResourceRef
	for _, e := range old.Entries {
		if !in[e.ID] {
			out = append(out, e)
		}
	}
	return out
}

// mergeEntries adds extra to inv, sorted by id.
func mergeEntries(inv *release.ResourceInventory, extra []release.ResourceRef) *release.ResourceInventory {
	out := &release.ResourceInventory{Entries: append(slices.Clone(inv.Entries), extra...)}
	slices.SortFunc(out.Entries, func(a, b release.ResourceRef) int { return strings.Compare(a.ID, b.ID) })
	out.Entries = slices.CompactFunc(out.Entries, func(a, b release.ResourceRef) bool { return a.ID == b.ID })
	return out
}

// PruneError lists the objects that could not be deleted.
type PruneError struct {
	// Kustomization is namespace/name.
	Kustomization string
	// Errors by object, in delete order.
	Errors []error
}

func (e *PruneError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("Kustomization %s: prune: %s", e.Kustomization, strings.Join(msgs, "; "))
}

// prune deletes the objects of entries that are still k's, the rest
// before Namespaces, ClusterRoles and CRDs. It returns the objects
// deleted and the entries it could not delete.
func (r *Reconciler) prune(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization, entries []release.ResourceRef) (deleted []release.ObjectRef, survivors []release.ResourceRef, _ error) {
	type item struct {
		ref   release.ObjectRef
		entry release.ResourceRef
	}
	var items []item
	perr := &PruneError{Kustomization: k.Namespace + "/" + k.Name}
	for _, e := range entries {
		ref, err := ParseInventoryEntry(e)
		if err != nil {
			perr.Errors = append(perr.Errors, err)
			continue
		}
		items = append(items, item{ref, e})
	}
	rank := func(ref release.ObjectRef) int {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		return stage(u)
	}
	slices.SortStableFunc(items, func(a, b item) int { return rank(b.ref) - rank(a.ref) })
	for _, it := range items {
		live, err := cluster.Get(ctx, it.ref)
		if absent(err) {
			continue
		}
		if err != nil {
			perr.Errors = append(perr.Errors, fmt.Errorf("%s: %w", it.ref, err))
			survivors = append(survivors, it.entry)
			continue
		}
		if !prunable(live, k) {
			continue // another owner's now, or kept on purpose
		}
		if err := cluster.Delete(ctx, it.ref, release.DeleteOptions{}); err != nil && !absent(err) {
			perr.Errors = append(perr.Errors, fmt.Errorf("%s: %w", it.ref, err))
			survivors = append(survivors, it.entry)
			continue
		}
		deleted = append(deleted, it.ref)
	}
	if len(perr.Errors) > 0 {
		return deleted, survivors, perr
	}
	return deleted, nil, nil
}

// prunable reports whether a live object may be deleted as k's: it is
// labelled as k's and not PruneKey: disabled.
func prunable(live *unstructured.Unstructured, k *release.Kustomization) bool {
	labels := live.GetLabels()
	return labels[NameLabel] == k.Name && labels[NamespaceLabel] == k.Namespace && !has(live, PruneKey, "disabled")
}

// healthRefs are the objects whose health a reconcile checks: every
// applied object with spec.wait (but skipped ones), else
// spec.healthChecks (an apiVersion left out is taken from the applied
// object of that kind and name) but those naming an object Exclude left
// out (excluded): they are not on the cluster, and whoever runs them
// (a fleet, for the units it runs itself) checks their health.
func (r *Reconciler) healthRefs(k *release.Kustomization, objs []*unstructured.Unstructured, excluded []release.ObjectRef) ([]release.ObjectRef, error) {
	if k.Spec.Wait {
		var refs []release.ObjectRef
		for _, o := range objs {
			if !has(o, ReconcileKey, "disabled") && !has(o, SSAKey, "Ignore") {
				refs = append(refs, release.RefOf(o))
			}
		}
		return refs, nil
	}
	var refs []release.ObjectRef
	for i, hc := range k.Spec.HealthChecks {
		if slices.ContainsFunc(excluded, func(x release.ObjectRef) bool { return namesExcluded(hc, k.Namespace, x) }) {
			continue
		}
		ref := release.ObjectRef{Namespace: hc.Namespace, Name: hc.Name}
		if hc.APIVersion != "" {
			gv, err := schema.ParseGroupVersion(hc.APIVersion)
			if err != nil {
				return nil, fmt.Errorf("spec.healthChecks[%d].apiVersion: %w", i, err)
			}
			ref.GroupVersionKind = gv.WithKind(hc.Kind)
		} else {
			at := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool {
				return o.GetKind() == hc.Kind && o.GetName() == hc.Name && o.GetNamespace() == hc.Namespace
			})
			if at < 0 {
				return nil, fmt.Errorf("spec.healthChecks[%d]: %s %s/%s has no apiVersion and is not among the applied objects", i, hc.Kind, hc.Namespace, hc.Name)
			}
			ref.GroupVersionKind = objs[at].GroupVersionKind()
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// namesExcluded reports whether the health check hc of a Kustomization
// in namespace ns names the excluded object x: its kind, namespace (ns
// when hc has none) and name, and its group when hc has an apiVersion.
func namesExcluded(hc release.NamespacedObjectKindReference, ns string, x release.ObjectRef) bool {
	if hc.Namespace != "" {
		ns = hc.Namespace
	}
	if hc.Kind != x.Kind || hc.Name != x.Name || ns != x.Namespace {
		return false
	}
	if hc.APIVersion == "" {
		return true
	}
	gv, err := schema.ParseGroupVersion(hc.APIVersion)
	return err == nil && gv.Group == x.Group
}

// healthJudge judges objects by k's spec.healthCheckExprs, as
// kustomize-controller does: its Job status reader comes before the CEL
// one, so batch Jobs are left to kstatus whatever the checks say.
func healthJudge(k *release.Kustomization) (release.Judge, error) {
	judge, err := release.HealthJudge(k.Spec.HealthCheckExprs)
	if judge == nil || err != nil {
		return nil, err
	}
	job := schema.GroupKind{Group: "batch", Kind: "Job"}
	return func(ctx context.Context, obj *unstructured.Unstructured) (string, string, bool, error) {
		if obj.GroupVersionKind().GroupKind() == job {
			return "", "", false, nil
		}
		return judge(ctx, obj)
	}, nil
}

// HealthError lists the objects that were not healthy (Current by
// kstatus) when a wait ended: one Failed, the timeout, or cancellation.
type HealthError struct {
	// What was waited for: "health checks", "cluster definitions", …
	What string
	// Timeout of the wait.
	Timeout time.Duration
	// Objects not healthy, with kstatus' status and message.
	Objects []release.ObjectStatus
	// Err is the context's error when the wait was cancelled.
	Err error
}

func (e *HealthError) Error() string {
	parts := make([]string, 0, len(e.Objects))
	for _, o := range e.Objects {
		parts = append(parts, fmt.Sprintf("%s %s: %s %s", o.Object.Kind, strings.TrimPrefix(o.Object.Namespace+"/"+o.Object.Name, "/"), o.Status, o.Message))
	}
	what := fmt.Sprintf("timeout after %s", e.Timeout)
	if e.Err != nil {
		what = e.Err.Error()
	}
	return fmt.Sprintf("%s failed (%s): %s", e.What, what, strings.Join(parts, "; "))
}

func (e *HealthError) Unwrap() error { return e.Err }

// wait polls refs until all are Current (by judge where it applies,
// else kstatus), one Failed, or timeout. The status messages of the
// sensitive objects are withheld from the error: a controller may echo
// the object's values in them.
func (r *Reconciler) wait(ctx context.Context, cluster release.ObjectReader, what string, refs []release.ObjectRef, timeout time.Duration, sensitive map[release.ObjectRef]bool, judge release.Judge) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(r.cfg.PollInterval)
	defer ticker.Stop()
	for {
		pending, failed, err := release.UnreadyJudged(ctx, cluster, refs, judge)
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			return &HealthError{What: what, Timeout: timeout, Objects: withheldMessages(append(failed, pending...), sensitive)}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-wctx.Done():
			e := &HealthError{What: what, Timeout: timeout, Objects: withheldMessages(pending, sensitive)}
			if ctx.Err() != nil {
				e.Err = ctx.Err()
			}
			return e
		case <-ticker.C:
		}
	}
}

// waitGone polls until refs are all absent, or timeout.
func (r *Reconciler) waitGone(ctx context.Context, cluster release.ObjectReader, refs []release.ObjectRef, timeout time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ticker := time.NewTicker(r.cfg.PollInterval)
	defer ticker.Stop()
	for {
		var left []release.ObjectStatus
		for _, ref := range refs {
			if _, err := cluster.Get(ctx, ref); err == nil {
				left = append(left, release.ObjectStatus{Object: ref, Status: "Terminating"})
			} else if !absent(err) {
				return err
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-wctx.Done():
			return &HealthError{What: "deletion", Timeout: timeout, Objects: left, Err: ctx.Err()}
		case <-ticker.C:
		}
	}
}

// objectsDigest is the digest, sha256:<hex>, of objs in order, as JSON:
// the digest of a Kustomization's .status.history snapshot.
func objectsDigest(objs []*unstructured.Unstructured) (string, error) {
	h := sha256.New()
	for _, o := range objs {
		data, err := o.MarshalJSON()
		if err != nil {
			return "", fmt.Errorf("digest of %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		h.Write(data)
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}
