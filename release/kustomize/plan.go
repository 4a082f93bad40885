package kustomize

import (
	"context"
	"fmt"
	"slices"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
)

// Plan actions of an object.
const (
	PlanCreate    = "create"
	PlanUpdate    = "update"
	PlanUnchanged = "unchanged"
	PlanSkip      = "skip"
)

// ObjectPlan is what a reconcile would do to one object.
type ObjectPlan struct {
	// Object is the object.
	Object release.ObjectRef
	// Action is PlanCreate, PlanUpdate, PlanUnchanged or PlanSkip
	// (reconcile disabled, ssa Ignore, or IfNotPresent and present).
	Action string
	// Diff is a unified diff of the object, live against as it would be
	// stored (a server-side dry-run apply), without the server's
	// bookkeeping (managedFields, resourceVersion, generation, uid,
	// creationTimestamp) and status; Secret data and values substituted
	// from Secrets are masked (see the package documentation, "Secret
	// values"). Empty when unchanged.
	Diff string
}

// Plan is what Reconcile would do, computed without writing anything.
type Plan struct {
	// Kustomization is namespace/name.
	Kustomization string
	// Revision of the source.
	Revision string
	// Objects in apply order.
	Objects []ObjectPlan
	// Prune are the objects of the inventory that left the build and
	// that Reconcile would delete (spec.prune); Orphan those it would
	// forget (prune off).
	Prune, Orphan []release.ObjectRef
	// Excluded are the objects ReconcilerConfig.Exclude leaves out.
	Excluded []release.ObjectRef
	// Warnings as in ReconcileResult.
	Warnings []string
}

// Changed reports whether the plan changes anything.
func (p *Plan) Changed() bool {
	if len(p.Prune) > 0 {
		return true
	}
	for _, o := range p.Objects {
		if o.Action == PlanCreate || o.Action == PlanUpdate {
			return true
		}
	}
	return false
}

// Plan builds k and compares every object with the cluster through a
// server-side dry-run apply (an object whose kind the cluster does not
// serve yet, such as a custom resource of a CRD in the same build, is
// planned as created as built), and lists what prune would delete. It
// writes nothing, and changes neither k nor the cluster. Errors are
// Build's, and a dry-run refusal as an *ApplyError.
func (r *Reconciler) Plan(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization) (*Plan, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	vars := r.reader(cluster)
	cluster, err := r.actAs(cluster, k)
	if err != nil {
		return nil, err
	}
	built, _, err := r.build(ctx, k, vars)
	if err != nil {
		return nil, err
	}
	p := &Plan{Kustomization: k.Namespace + "/" + k.Name, Revision: built.Revision}
	p.Warnings = append(release.KustomizationFieldWarnings(k), built.Warnings...)
	objs, excluded := r.prepare(k, built.Manifests)
	p.Excluded = excluded
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int { return stage(a) - stage(b) })
	hide := newHider(built.marks)
	for _, o := range objs {
		op, err := r.planOne(ctx, cluster, k, o, hide)
		if err != nil {
			return nil, err
		}
		p.Objects = append(p.Objects, op)
	}
	for _, e := range staleEntries(k.Status.Inventory, inventoryOf(objs)) {
		ref, err := ParseInventoryEntry(e)
		if err != nil {
			return nil, err
		}
		live, err := cluster.Get(ctx, ref)
		if absent(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !k.Spec.Prune || !prunable(live, k) {
			p.Orphan = append(p.Orphan, ref)
			continue
		}
		p.Prune = append(p.Prune, ref)
	}
	return p, nil
}

func (r *Reconciler) planOne(ctx context.Context, cluster release.ObjectClient, k *release.Kustomization, o *unstructured.Unstructured, hide *hider) (ObjectPlan, error) {
	ref := release.RefOf(o)
	op := ObjectPlan{Object: ref}
	live, skip, err := liveFor(ctx, cluster, o)
	switch {
	case err != nil:
		return op, &ApplyError{Kustomization: k.Namespace + "/" + k.Name, Object: ref, Err: err}
	case skip:
		op.Action = PlanSkip
		return op, nil
	}
	after, err := cluster.Apply(ctx, o, release.ApplyOptions{FieldManager: r.cfg.FieldManager, Force: true, DryRun: true})
	if err != nil {
		if live != nil {
			if hide.marks.sensitive(o) {
				return op, withheld(k, err, "dry-run apply", objectName(ref))
			}
			return op, &ApplyError{Kustomization: k.Namespace + "/" + k.Name, Object: ref, Err: fmt.Errorf("dry-run: %w", err)}
		}
		after = o // e.g. the CRD of its kind is created in the same reconcile
	}
	before, text, err := hide.pair(live, after, o)
	if err != nil {
		return op, err
	}
	switch {
	case live == nil:
		op.Action = PlanCreate
	case before == text:
		op.Action = PlanUnchanged
		return op, nil
	default:
		op.Action = PlanUpdate
	}
	from := ref.String()
	if live == nil {
		from = "/dev/null"
	}
	op.Diff, err = difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(before), B: difflib.SplitLines(text), FromFile: from, ToFile: ref.String(), Context: 3,
	})
	return op, err
}
