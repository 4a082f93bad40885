package distribute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"weak"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
)

// DetectDrift compares what every member holds of a release with what it
// should hold: the copies placed on it, with its replicas and overrides
// (one List per kind and member). scope names the release (its Helm
// release name, and the namespace of its objects); a record of it must
// have been read or written through one of the Distributor's Helm
// configurations (the Reconciler's always is): that is how the
// Distributor knows its chart and inventory. Releases that share a
// manifest (one chart, release name and values in two namespaces) are
// told apart by their scopes, also when checked concurrently. A scope
// without a Helm release name finds the release by manifest: the release
// whose record with that manifest was read or written last.
//
// The report holds every member's results, members in name order; each
// result's Reason starts with "member <name>" so that people and
// conditions can tell the copies apart. CorrectDrift takes this report.
func (d *Distributor) DetectDrift(ctx context.Context, scope release.HelmScope, manifest string, rules []drift.IgnoreRule, mode drift.Mode) (*drift.Report, error) {
	cfg, err := drift.Compile(rules, drift.Options{Mode: mode})
	if err != nil {
		return nil, err
	}
	rel, ok := d.known.lookup(scope, manifest)
	switch {
	case !ok && scope.HelmReleaseName != "":
		return nil, fmt.Errorf("distributor %s: release %s: no record of it was read or written through the distributor's Helm configuration", d.name, rel)
	case !ok:
		return nil, fmt.Errorf("distributor %s: the manifest is not one of a release record read through the distributor's Helm configuration", d.name)
	}
	objs, _, err := d.buildWith(ctx, manifest, rel.Namespace, d.known.chartOf(rel))
	if err != nil {
		return nil, fmt.Errorf("release %s: %w", rel, err)
	}
	sp, err := d.spreadObjects(objs, rel.Namespace, rel)
	if err != nil {
		return nil, fmt.Errorf("distributor %s: release %s: %w", d.name, rel, err)
	}
	reports := make([]*drift.Report, len(d.members))
	desired := make([][]*unstructured.Unstructured, len(d.members))
	merr := d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		desired[i] = sp.member(i, nil).objects
		live, err := listLive(ctx, d.members[i].Cluster, desired[i])
		if err != nil {
			return err
		}
		reports[i], err = drift.Detect(desired[i], live, cfg)
		return err
	})
	if merr != nil {
		return nil, fmt.Errorf("distributor %s: release %s: drift: %w", d.name, rel, merr)
	}
	return d.reports.merge(mode, d.members, reports, desired, sp.placement, rel), nil
}

// listLive lists, with one List per kind, the live objects of a member
// that desired names (in desired's namespace when all of a kind's objects
// share one, else in all namespaces).
func listLive(ctx context.Context, m release.Cluster, desired []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	type kindNS struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	want := map[release.ObjectRef]bool{}
	var order []schema.GroupKind
	byKind := map[schema.GroupKind]*kindNS{}
	for _, o := range desired {
		want[groupKindRef(release.RefOf(o))] = true
		gvk := o.GroupVersionKind()
		k, ok := byKind[gvk.GroupKind()]
		switch {
		case !ok:
			byKind[gvk.GroupKind()] = &kindNS{gvk: gvk, ns: o.GetNamespace()}
			order = append(order, gvk.GroupKind())
		case k.ns != o.GetNamespace():
			k.ns = ""
		}
	}
	var live []*unstructured.Unstructured
	for _, gk := range order {
		k := byKind[gk]
		items, err := m.List(ctx, k.gvk, k.ns, nil)
		if meta.IsNoMatchError(err) {
			continue // not served there: every object of it is missing
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", k.gvk.Kind, err)
		}
		for _, it := range items {
			ref := release.ObjectRef{GroupVersionKind: k.gvk, Namespace: it.GetNamespace(), Name: it.GetName()}
			if want[groupKindRef(ref)] {
				live = append(live, it)
			}
		}
	}
	return live, nil
}

// CorrectDrift corrects, on each member, the drift a report of
// DetectDrift found there: it creates missing copies and patches modified
// ones back with the member's Patcher (falling back to a server-side apply
// of the whole copy when the member has none). Every member's copies are
// written with the Distributor's field manager, which owns them;
// fieldManager (the Reconciler's) is not used. A correction takes nothing
// over that an apply would not: an object the member holds without the
// release's inventory labels is corrected only under conflict resolution
// Overwrite, else that correction fails with *ConflictResolutionError (or
// *OwnerError when another release holds it) and the object is left as it
// is. A member that fails does not stop the others; the error names it.
func (d *Distributor) CorrectDrift(ctx context.Context, report *drift.Report, _ string) error {
	parts, ok := d.reports.split(report)
	if !ok {
		return fmt.Errorf("distributor %s: correct drift: the report was not made by this distributor's DetectDrift", d.name)
	}
	err := d.eachMember(ctx, nil, func(ctx context.Context, i int) error {
		if parts[i] == nil {
			return nil
		}
		return d.correctMember(ctx, i, parts[i])
	})
	if err != nil {
		return fmt.Errorf("distributor %s: correct drift: %w", d.name, err)
	}
	return nil
}

func (d *Distributor) correctMember(ctx context.Context, i int, part *memberReport) error {
	m := d.members[i].Cluster
	patcher, canPatch := m.(release.Patcher)
	var errs []error
	for _, c := range part.report.Corrections() {
		ref := refOfDrift(c.Object)
		if err := d.checkConflict(ctx, i, ref, part.conflicts[groupKindRef(ref)], part.rel); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case c.Action == drift.ActionCreate:
			if _, err := m.Apply(ctx, c.Create, release.ApplyOptions{DiscardResult: true, FieldManager: d.fieldManager, Force: true}); err != nil {
				errs = append(errs, fmt.Errorf("create %s: %w", c.Object, err))
			}
		case c.Action == drift.ActionPatch && canPatch:
			data, err := json.Marshal(c.Patch)
			if err == nil {
				_, err = patcher.Patch(ctx, ref, data, release.PatchOptions{FieldManager: d.fieldManager})
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("patch %s: %w", c.Object, err))
			}
		case c.Action == drift.ActionPatch:
			desired := part.desired[groupKindRef(ref)]
			if desired == nil {
				errs = append(errs, fmt.Errorf("patch %s: no desired copy", c.Object))
				continue
			}
			if _, err := m.Apply(ctx, desired, release.ApplyOptions{DiscardResult: true, FieldManager: d.fieldManager, Force: true}); err != nil {
				errs = append(errs, fmt.Errorf("apply %s: %w", c.Object, err))
			}
		}
	}
	return errors.Join(errs...)
}

// memberReport is one member's part of a merged report.
type memberReport struct {
	report  *drift.Report
	desired map[release.ObjectRef]*unstructured.Unstructured
	// conflicts are the desired copies' conflict resolutions.
	conflicts map[release.ObjectRef]policy.Conflict
	rel       releaseID
}

// reportIndex maps the merged reports DetectDrift returned back to the
// members' reports, for CorrectDrift. Entries go away with their report
// (weak keys), so reports nobody corrects (warn mode) do not pile up.
type reportIndex struct {
	mu    sync.Mutex
	parts map[weak.Pointer[drift.Report]][]*memberReport
}

// merge returns one report of every member's results and remembers which
// member each result came from.
func (x *reportIndex) merge(mode drift.Mode, members []release.Member, reports []*drift.Report, desired [][]*unstructured.Unstructured, placement *policy.Placement, rel releaseID) *drift.Report {
	out := &drift.Report{Mode: mode}
	parts := make([]*memberReport, len(members))
	rules := map[string]*drift.RuleReport{}
	var ruleOrder []string
	for i, r := range reports {
		if r == nil {
			continue
		}
		name := members[i].Facts.Name
		parts[i] = &memberReport{report: r, desired: map[release.ObjectRef]*unstructured.Unstructured{}, conflicts: map[release.ObjectRef]policy.Conflict{}, rel: rel}
		for _, o := range desired[i] {
			ref := groupKindRef(release.RefOf(o))
			parts[i].desired[ref] = o
			parts[i].conflicts[ref] = conflictOf(placement, o)
		}
		for _, o := range r.Objects {
			if o.Reason == "" {
				o.Reason = "member " + name
			} else {
				o.Reason = "member " + name + ": " + o.Reason
			}
			out.Objects = append(out.Objects, o)
		}
		for _, rr := range r.Rules {
			m, ok := rules[rr.Rule]
			if !ok {
				m = &drift.RuleReport{Rule: rr.Rule, Description: rr.Description}
				rules[rr.Rule] = m
				ruleOrder = append(ruleOrder, rr.Rule)
			}
			m.Objects = append(m.Objects, rr.Objects...)
		}
	}
	for _, name := range ruleOrder {
		rr := rules[name]
		sort.Slice(rr.Objects, func(i, j int) bool { return rr.Objects[i].String() < rr.Objects[j].String() })
		rr.Objects = dedupRefs(rr.Objects)
		out.Rules = append(out.Rules, *rr)
	}
	key := weak.Make(out)
	x.mu.Lock()
	if x.parts == nil {
		x.parts = map[weak.Pointer[drift.Report]][]*memberReport{}
	}
	x.parts[key] = parts
	x.mu.Unlock()
	runtime.AddCleanup(out, func(k weak.Pointer[drift.Report]) {
		x.mu.Lock()
		delete(x.parts, k)
		x.mu.Unlock()
	}, key)
	return out
}

func (x *reportIndex) split(report *drift.Report) ([]*memberReport, bool) {
	if report == nil {
		return nil, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	parts, ok := x.parts[weak.Make(report)]
	return parts, ok
}

func dedupRefs(refs []drift.ObjectRef) []drift.ObjectRef {
	out := refs[:0]
	for i, r := range refs {
		if i > 0 && r == refs[i-1] {
			continue
		}
		out = append(out, r)
	}
	return out
}

func refOfDrift(r drift.ObjectRef) release.ObjectRef {
	return release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}, Namespace: r.Namespace, Name: r.Name}
}
