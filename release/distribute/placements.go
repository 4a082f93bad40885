package distribute

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
)

// Source says what part of a release an object is.
type Source string

// Sources of a release's objects.
const (
	// SourceManifest: an object of the release's manifest.
	SourceManifest Source = "manifest"
	// SourceHook: a hook object (helm.sh/hook).
	SourceHook Source = "hook"
	// SourceCRD: a CustomResourceDefinition of the chart's crds/.
	SourceCRD Source = "crds"
	// SourceNamespace: a namespace the Distributor creates on a member for
	// the objects that go into it.
	SourceNamespace Source = "namespace"
)

// Placements is where every object of one revision of a Helm release
// goes and why: what Distributor.Placements returns.
type Placements struct {
	// Release is namespace/name of the Helm release.
	Release string
	// Revision is the Helm revision described.
	Revision int
	// Members are the members' names, sorted.
	Members []string
	// Objects are sorted by namespace, kind, name and source.
	Objects []ObjectPlacement
	// Warnings are the placement's warnings (policy.WarnNotPlaced for an
	// object that goes to no member), sorted as policy sorts them.
	Warnings []policy.Warning

	manifest, hooks *spread
	crdPolicy       release.CRDsPolicy
}

// ObjectPlacement is where one object of a release goes.
type ObjectPlacement struct {
	// Object is the object.
	Object release.ObjectRef
	// Source says what part of the release it is.
	Source Source
	// Members are the members it goes to, sorted by name.
	Members []MemberPlacement
	// Selection is the propagation policy that selects it; nil when none.
	Selection *policy.Selection
	// Follows are the objects it follows and through which field.
	Follows []policy.Follow
	// Default is true when it goes where the release's workloads go
	// because nothing else places it.
	Default bool
	// Err is why it could not be placed (a binding or scheduling error).
	Err error
}

// MemberPlacement is one member an object goes to.
type MemberPlacement struct {
	// Member is the member's name.
	Member string
	// Replicas is the member's share of the object's replicas; nil for
	// objects without replicas.
	Replicas *int64
}

// MemberNames returns the names of the members the object goes to.
func (o ObjectPlacement) MemberNames() []string {
	out := make([]string, len(o.Members))
	for i, m := range o.Members {
		out[i] = m.Member
	}
	return out
}

// Placements tells where each object of rel's newest Helm revision on the
// hub goes, and why: its manifest's objects and hooks (placed by the
// propagation policies, as dependencies of what they follow, or by the
// default: where the release's workloads go), the CRDs of the chart's
// crds/ (every member the release reaches, unless its CRD policy is
// Skip) and the namespaces created for them, with the placement's
// warnings. Nothing is written; the answer is computed from the release
// record and the policies as an upgrade would compute it, so it is the
// same on every call. Explain answers "why is this object on that
// member?" from it.
func (d *Distributor) Placements(ctx context.Context, rel *release.Release) (*Placements, error) {
	cfg, err := d.hub.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace()})
	if err != nil {
		return nil, fmt.Errorf("distributor %s: hub: %w", d.name, err)
	}
	last, err := storage.Init(cfg.Releases.Driver).Last(rel.GetReleaseName())
	if err != nil {
		return nil, fmt.Errorf("distributor %s: release %s/%s: %w", d.name, rel.GetTargetNamespace(), rel.GetReleaseName(), err)
	}
	id := releaseID{Namespace: last.Namespace, Name: last.Name}
	crds, _ := d.mapper.learnChart(last.Chart)
	manifest, hooks, warnings, err := d.placeRecord(ctx, last)
	if err != nil {
		return nil, err
	}
	p := &Placements{Release: id.String(), Revision: last.Version, Warnings: warnings, manifest: manifest, hooks: hooks, crdPolicy: rel.GetInstall().GetCRDsPolicy()}
	if last.Version > 1 {
		p.crdPolicy = rel.GetUpgrade().GetCRDsPolicy()
	}
	for _, m := range d.members {
		p.Members = append(p.Members, m.Facts.Name)
	}
	reached := map[string]bool{}
	inNamespace := map[string]map[string]string{} // namespace -> member -> first object
	add := func(op *policy.ObjectPlacement, src Source, obj *unstructured.Unstructured) {
		o := ObjectPlacement{Object: release.RefOf(obj), Source: src, Selection: op.Selection, Follows: op.FollowsVia, Default: op.Default, Err: op.Err}
		for _, t := range op.Targets {
			mp := MemberPlacement{Member: t.Cluster}
			if op.Replicas != nil {
				mp.Replicas = &t.Replicas
			}
			o.Members = append(o.Members, mp)
			reached[t.Cluster] = true
			if ns := obj.GetNamespace(); ns != "" {
				if inNamespace[ns] == nil {
					inNamespace[ns] = map[string]string{}
				}
				if _, ok := inNamespace[ns][t.Cluster]; !ok {
					inNamespace[ns][t.Cluster] = policy.KeyOf(obj).String()
				}
			}
		}
		p.Objects = append(p.Objects, o)
	}
	for _, op := range manifest.placement.Objects {
		add(op, SourceManifest, manifest.byKey[op.Object])
	}
	for _, op := range hooks.placement.Objects {
		if o := hooks.byKey[op.Object]; o.GetAnnotations()[hookAnnotation] != "" {
			add(op, SourceHook, o)
		}
	}
	if p.crdPolicy != release.Skip {
		for _, ref := range crds {
			o := ObjectPlacement{Object: ref, Source: SourceCRD}
			for _, m := range p.Members {
				if reached[m] {
					o.Members = append(o.Members, MemberPlacement{Member: m})
				}
			}
			p.Objects = append(p.Objects, o)
		}
	}
	for ns, on := range inNamespace {
		o := ObjectPlacement{Object: release.ObjectRef{GroupVersionKind: namespaceGVK, Name: ns}, Source: SourceNamespace}
		for _, m := range p.Members {
			if _, ok := on[m]; ok {
				o.Members = append(o.Members, MemberPlacement{Member: m})
			}
		}
		p.Objects = append(p.Objects, o)
	}
	slices.SortFunc(p.Objects, func(a, b ObjectPlacement) int {
		return cmp.Or(strings.Compare(a.Object.Namespace, b.Object.Namespace), strings.Compare(a.Object.Kind, b.Object.Kind),
			strings.Compare(a.Object.Name, b.Object.Name), strings.Compare(string(a.Source), string(b.Source)))
	})
	return p, nil
}

// placeRecord places the objects of a release record as its actions place
// them: its manifest's objects alone, as they are applied (manifest), and
// its hooks together with the manifest, as they run (hooks). warnings are
// the manifest's placement warnings and then those of the hooks, each
// once: what Placements shows, and what Strict refuses.
func (d *Distributor) placeRecord(ctx context.Context, rec *helmrelease.Release) (manifest, hooks *spread, warnings []policy.Warning, err error) {
	ns := rec.Namespace
	id := releaseID{Namespace: ns, Name: rec.Name}
	objs, _, err := d.buildWith(ctx, rec.Manifest, ns, rec.Chart)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("release %s: %w", id, err)
	}
	if manifest, err = d.spreadObjects(objs, ns, id); err != nil {
		return nil, nil, nil, fmt.Errorf("distributor %s: release %s: %w", d.name, id, err)
	}
	if hooks, err = d.hookSpread(ctx, rec, ns, nil); err != nil {
		return nil, nil, nil, fmt.Errorf("distributor %s: release %s: hooks: %w", d.name, id, err)
	}
	warnings = append(warnings, manifest.placement.Warnings...)
	seen := map[policy.Warning]bool{}
	for _, w := range warnings {
		seen[w] = true
	}
	for _, w := range hooks.placement.Warnings {
		if o := hooks.byKey[w.Object]; o != nil && o.GetAnnotations()[hookAnnotation] != "" && !seen[w] {
			seen[w] = true
			warnings = append(warnings, w)
		}
	}
	return manifest, hooks, warnings, nil
}

// find returns the placement of ref (compared by group, kind, namespace
// and name), preferring the manifest's copy.
func (p *Placements) find(ref release.ObjectRef) (*ObjectPlacement, error) {
	want := groupKindRef(ref)
	for i := range p.Objects {
		if groupKindRef(p.Objects[i].Object) == want {
			return &p.Objects[i], nil
		}
	}
	return nil, fmt.Errorf("release %s revision %d has no object %s", p.Release, p.Revision, ref)
}

// Explanation answers why an object of a release is, or is not, on one
// member.
type Explanation struct {
	// Object and Member are what was asked about.
	Object release.ObjectRef
	// Member is the member's name.
	Member string
	// Source says what part of the release the object is.
	Source Source
	// Placed is true when the object goes to the member.
	Placed bool
	// Replicas is the member's share when the object has replicas.
	Replicas *int64
	// Reasons are full sentences, in a fixed order: the propagation
	// policy, then each followed object (with why that one is there), then
	// the default; or why the object is not there.
	Reasons []string
	// Policy is the policy engine's explanation (override rules applied
	// and the resulting diff) for manifest and hook objects placed there;
	// nil otherwise.
	Policy *policy.Explanation
}

// String renders the explanation for people.
func (x *Explanation) String() string {
	var b strings.Builder
	verb := "is on"
	if !x.Placed {
		verb = "is not on"
	}
	fmt.Fprintf(&b, "%s %s member %s", x.Object, verb, x.Member)
	if x.Replicas != nil {
		fmt.Fprintf(&b, " (%d replicas)", *x.Replicas)
	}
	b.WriteString(":\n")
	for _, r := range x.Reasons {
		fmt.Fprintf(&b, "  - %s\n", r)
	}
	if x.Policy != nil {
		for _, a := range x.Policy.Applied {
			fmt.Fprintf(&b, "  override: %s rule %d %s -> %s\n", a.Policy, a.Rule, a.Overrider, strings.Join(a.Targets, ", "))
		}
	}
	return b.String()
}

// Explain answers "why is this object on that member?" (or why not) for
// an object of the release: the propagation policy that places it there,
// the objects it follows there and through which field (each with why
// that one is there, down to a policy or the default), the default
// placement, the crds/ rule or the namespace rule. The answer depends only
// on the release record and the policies.
func (p *Placements) Explain(ref release.ObjectRef, member string) (*Explanation, error) {
	if !slices.Contains(p.Members, member) {
		return nil, fmt.Errorf("release %s: %q is not a member", p.Release, member)
	}
	o, err := p.find(ref)
	if err != nil {
		return nil, err
	}
	x := &Explanation{Object: o.Object, Member: member, Source: o.Source}
	for _, m := range o.Members {
		if m.Member == member {
			x.Placed, x.Replicas = true, m.Replicas
		}
	}
	switch o.Source {
	case SourceCRD:
		if x.Placed {
			x.Reasons = []string{fmt.Sprintf("the chart's crds/ go to every member the release reaches, before its objects (CRD policy %s), and objects of the release go to %s", p.crdPolicy, member)}
		} else {
			x.Reasons = []string{fmt.Sprintf("no object of the release goes to %s", member)}
		}
		return x, nil
	case SourceNamespace:
		if x.Placed {
			x.Reasons = []string{fmt.Sprintf("objects of the release go into namespace %s on %s; it is created there if missing and never deleted", o.Object.Name, member)}
		} else {
			x.Reasons = []string{fmt.Sprintf("no object of the release goes into namespace %s on %s", o.Object.Name, member)}
		}
		return x, nil
	}
	sp := p.manifest
	if o.Source == SourceHook {
		sp = p.hooks
	}
	key := policy.ObjectKey{APIVersion: o.Object.GroupVersion().String(), Kind: o.Object.Kind, Namespace: o.Object.Namespace, Name: o.Object.Name}
	pe, err := sp.engine.Explain(sp.placement, key, member)
	if err != nil {
		return nil, err
	}
	x.Reasons = p.reasons(sp, key, member, pe, map[policy.ObjectKey]bool{})
	if x.Placed {
		x.Policy = pe
	}
	return x, nil
}

// reasons says why key is (or is not) on member, following leaders down
// to a policy or the default; seen guards against follow cycles.
func (p *Placements) reasons(sp *spread, key policy.ObjectKey, member string, x *policy.Explanation, seen map[policy.ObjectKey]bool) []string {
	seen[key] = true
	var out []string
	if x.Err != nil {
		return []string{fmt.Sprintf("it could not be placed: %v", x.Err)}
	}
	if x.Selection != nil {
		if x.ByPolicy {
			out = append(out, fmt.Sprintf("%s places it there (%s)", x.Selection.Policy, x.Selection.Reason))
		} else if !x.Placed {
			out = append(out, fmt.Sprintf("%s selects it (%s) but does not schedule it there", x.Selection.Policy, x.Selection.Reason))
		}
	}
	for _, f := range x.Because {
		why := "it follows " + f.String()
		if !seen[f.Leader] {
			if lx, err := sp.engine.Explain(sp.placement, f.Leader, member); err == nil {
				why += ", which is there because " + strings.Join(p.reasons(sp, f.Leader, member, lx, seen), "; and ")
			}
		}
		out = append(out, why)
	}
	if x.Default {
		out = append(out, "no propagation policy selects it and it follows no placed object, so it goes by default: "+x.DefaultReason)
	}
	if !x.Placed && x.Selection == nil {
		op := sp.placement.Get(key)
		switch {
		case op == nil:
		case len(op.Targets) == 0:
			for _, w := range sp.placement.Warnings {
				if w.Code == policy.WarnNotPlaced && w.Object == key {
					out = append(out, w.Message)
				}
			}
		case op.Default:
			clusters, reason := sp.placement.DefaultClusters()
			out = append(out, fmt.Sprintf("it goes by default to %s only: %s", strings.Join(clusters, ", "), reason))
		case len(x.Follows) == 1:
			out = append(out, fmt.Sprintf("it follows only %s, which does not go there", x.Follows[0]))
		default:
			names := make([]string, len(x.Follows))
			for i, f := range x.Follows {
				names[i] = f.String()
			}
			out = append(out, fmt.Sprintf("it follows only %s, none of which goes there", strings.Join(names, ", ")))
		}
	}
	return out
}

// Table renders the placements as text: one row per object, one column
// per member ("-" not there, "✓" there, a number: its replicas there),
// then why (the policy, "follows …", "default", "crds/", "namespace").
func (p *Placements) Table() string {
	rows := [][]string{append(append([]string{"OBJECT"}, p.Members...), "WHY")}
	for _, o := range p.Objects {
		row := []string{o.Object.String()}
		for _, m := range p.Members {
			cell := "-"
			for _, mp := range o.Members {
				if mp.Member == m {
					cell = "✓"
					if mp.Replicas != nil {
						cell = fmt.Sprint(*mp.Replicas)
					}
				}
			}
			row = append(row, cell)
		}
		var why []string
		switch o.Source {
		case SourceCRD:
			why = append(why, "crds/")
		case SourceNamespace:
			why = append(why, "namespace")
		case SourceHook:
			why = append(why, "hook")
		}
		if o.Selection != nil {
			why = append(why, o.Selection.Policy.String())
		}
		for _, f := range o.Follows {
			why = append(why, "follows "+f.String())
		}
		if o.Default {
			why = append(why, "default")
		}
		if o.Err != nil {
			why = append(why, "error: "+o.Err.Error())
		}
		if len(o.Members) == 0 && o.Err == nil {
			why = append(why, "NOT PLACED")
		}
		row = append(row, strings.Join(why, ", "))
		rows = append(rows, row)
	}
	return renderTable(rows)
}

func renderTable(rows [][]string) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	_ = w.Flush()
	return b.String()
}
