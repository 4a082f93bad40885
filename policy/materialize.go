package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/wI2L/jsondiff"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ClusterObjects are the objects one cluster gets, as they must be there.
type ClusterObjects struct {
	// Cluster name.
	Cluster string
	// Objects sorted by namespace, kind, name: replicas set to the cluster's
	// share, then overrides applied.
	Objects []*unstructured.Unstructured
	// Errors for objects that failed on this cluster (*OverrideError); those
	// objects are left out of Objects.
	Errors []error
}

// Materialize produces every cluster's objects from a placement: a copy of
// each placed object with the cluster's replica share written to its replica
// field, then the matching override rules applied (so overrides of
// /spec/replicas win). A failing override drops that object on that cluster
// only. Clusters that get nothing are included with no objects.
func (e *Engine) Materialize(p *Placement) []ClusterObjects {
	out := make([]ClusterObjects, len(p.clusters))
	idx := make(map[string]int, len(p.clusters))
	for i := range p.clusters {
		out[i].Cluster = p.clusters[i].Name
		idx[p.clusters[i].Name] = i
	}
	for _, op := range p.Objects {
		if op.Err != nil {
			continue
		}
		for _, t := range op.Targets {
			i := idx[t.Cluster]
			obj, _, err := e.renderOne(op, t, &p.clusters[i])
			if err != nil {
				out[i].Errors = append(out[i].Errors, err)
				continue
			}
			out[i].Objects = append(out[i].Objects, obj)
		}
	}
	return out
}

// MaterializeCluster produces the objects of one cluster of a placement,
// as Materialize does for every cluster: the same copies, in the same
// order, with the same errors. When only is not nil, it produces the copies
// of the objects only accepts and leaves the others out. It lets a caller
// hold one cluster's copies at a time. ok is false when the placement was
// not computed for cluster.
func (e *Engine) MaterializeCluster(p *Placement, cluster string, only func(ObjectKey) bool) (co ClusterObjects, ok bool) {
	ci, ok := slices.BinarySearchFunc(p.clusters, cluster, func(c Cluster, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return ClusterObjects{}, false
	}
	co.Cluster = cluster
	for _, op := range p.Objects {
		if op.Err != nil || (only != nil && !only(op.Object)) {
			continue
		}
		t, placed := op.Cluster(cluster)
		if !placed {
			continue
		}
		obj, _, err := e.renderOne(op, t, &p.clusters[ci])
		if err != nil {
			co.Errors = append(co.Errors, err)
			continue
		}
		co.Objects = append(co.Objects, obj)
	}
	return co, true
}

func (e *Engine) renderOne(op *ObjectPlacement, t Target, cl *Cluster) (*unstructured.Unstructured, []Applied, error) {
	obj := op.obj.DeepCopy()
	if op.replicaPath != nil {
		if err := unstructured.SetNestedField(obj.Object, t.Replicas, op.replicaPath...); err != nil {
			return nil, nil, fmt.Errorf("%s: set replicas: %w", op.Object, err)
		}
	}
	return applyOverrides(obj, op.overrides, cl)
}

// Explanation says why an object looks the way it does on one cluster.
type Explanation struct {
	// Object explained.
	Object ObjectKey
	// Cluster explained.
	Cluster string
	// Selection is the winning propagation policy and why; nil if none.
	Selection *Selection
	// Placed says whether the object goes to the cluster.
	Placed bool
	// Target is the cluster's share when Placed.
	Target Target
	// Follows lists the objects whose placement this one follows.
	Follows []ObjectKey
	// ByPolicy is true when the winning policy itself schedules the object
	// on the cluster (rather than only the objects it follows).
	ByPolicy bool
	// Because lists the links by which followed objects bring this one to
	// the cluster: those of FollowsVia whose leader goes there, sorted.
	Because []Follow
	// Default is true when PlaceDefault put the object on the cluster.
	Default bool
	// DefaultReason is the reason PlaceDefault was given for its clusters.
	DefaultReason string
	// Applied are the override rules applied, in order.
	Applied []Applied
	// Diff is the RFC 6902 patch from the object as given to the object as
	// the cluster gets it (replicas and overrides).
	Diff []PatchOp
	// Err is why the object is not placed or failed on this cluster.
	Err error
}

// PatchOp is one RFC 6902 operation of an Explanation's diff.
type PatchOp struct {
	// Op is add, remove or replace.
	Op string `json:"op"`
	// Path is the JSON pointer.
	Path string `json:"path"`
	// Value for add and replace.
	Value any `json:"value,omitempty"`
}

// Explain tells, for one object of a placement and one cluster, which
// propagation policy won and why, whether and with how many replicas the
// object goes there, which override rules applied in which order, and the
// resulting diff.
func (e *Engine) Explain(p *Placement, key ObjectKey, cluster string) (*Explanation, error) {
	op := p.Get(key)
	if op == nil {
		return nil, fmt.Errorf("policy: Explain: %s is not in the placement", key)
	}
	ci, ok := slices.BinarySearchFunc(p.clusters, cluster, func(c Cluster, n string) int { return strings.Compare(c.Name, n) })
	if !ok {
		return nil, fmt.Errorf("policy: Explain: cluster %q is not in the placement", cluster)
	}
	x := &Explanation{Object: key, Cluster: cluster, Selection: op.Selection, Follows: op.Follows, Err: op.Err}
	t, placed := op.Cluster(cluster)
	if placed {
		for _, f := range op.FollowsVia {
			if l := p.Get(f.Leader); l != nil {
				if _, there := l.Cluster(cluster); there {
					x.Because = append(x.Because, f)
				}
			}
		}
		x.Default, x.DefaultReason = op.Default, p.defaultReason
		_, x.ByPolicy = slices.BinarySearchFunc(op.scheduled, cluster, func(t Target, n string) int { return strings.Compare(t.Cluster, n) })
	}
	if !placed || op.Err != nil {
		return x, nil
	}
	x.Placed, x.Target = true, t
	obj, applied, err := e.renderOne(op, t, &p.clusters[ci])
	x.Applied = applied
	if err != nil {
		x.Err = err
		return x, nil
	}
	diff, err := diffObjects(op.obj, obj)
	if err != nil {
		return nil, err
	}
	x.Diff = diff
	return x, nil
}

func diffObjects(before, after *unstructured.Unstructured) ([]PatchOp, error) {
	patch, err := jsondiff.Compare(before.Object, after.Object)
	if err != nil {
		return nil, fmt.Errorf("policy: diff %s: %w", KeyOf(before), err)
	}
	out := make([]PatchOp, 0, len(patch))
	for _, o := range patch {
		po := PatchOp{Op: o.Type, Path: o.Path}
		if o.Type != jsondiff.OperationRemove {
			po.Value = o.Value
		}
		out = append(out, po)
	}
	return out, nil
}

// String renders the explanation as indented text, for logs and CLIs.
func (x *Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on cluster %s\n", x.Object, x.Cluster)
	if x.Selection != nil {
		fmt.Fprintf(&b, "  propagation: %s (%s)\n", x.Selection.Policy, x.Selection.Reason)
	} else {
		b.WriteString("  propagation: no policy matches\n")
	}
	for _, f := range x.Follows {
		fmt.Fprintf(&b, "  follows: %s\n", f)
	}
	for _, f := range x.Because {
		fmt.Fprintf(&b, "  placed here as it follows %s\n", f)
	}
	if x.Default {
		fmt.Fprintf(&b, "  placed here by default")
		if x.DefaultReason != "" {
			fmt.Fprintf(&b, ": %s", x.DefaultReason)
		}
		b.WriteString("\n")
	}
	switch {
	case x.Err != nil && !x.Placed:
		fmt.Fprintf(&b, "  not placed: %v\n", x.Err)
		return b.String()
	case !x.Placed:
		b.WriteString("  not placed on this cluster\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  placed, replicas %d\n", x.Target.Replicas)
	for _, a := range x.Applied {
		fmt.Fprintf(&b, "  override: %s rule %d %s -> %s\n", a.Policy, a.Rule, a.Overrider, strings.Join(a.Targets, ", "))
	}
	if x.Err != nil {
		fmt.Fprintf(&b, "  failed: %v\n", x.Err)
	}
	for _, d := range x.Diff {
		if d.Op == jsondiff.OperationRemove {
			fmt.Fprintf(&b, "  diff: %s %s\n", d.Op, d.Path)
			continue
		}
		v, _ := json.Marshal(d.Value)
		fmt.Fprintf(&b, "  diff: %s %s %s\n", d.Op, d.Path, v)
	}
	return b.String()
}
