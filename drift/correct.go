package drift

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Action is what a Correction does.
type Action string

const (
	// ActionCreate creates a missing object.
	ActionCreate Action = "create"
	// ActionPatch applies an RFC 6902 JSON patch to a modified object.
	ActionPatch Action = "patch"
)

// Correction restores one object. It holds real values, Secret data
// included: send it to the cluster, never to a log (its String masks).
type Correction struct {
	// Object is the object to correct.
	Object ObjectRef
	// Action is ActionCreate or ActionPatch.
	Action Action
	// Create is the desired object to create (ActionCreate), in full:
	// ignore rules concern fields of existing objects. It is a copy the
	// caller may modify.
	Create *unstructured.Unstructured
	// Patch is the JSON patch for the live object (ActionPatch). It adds
	// or replaces fields desired sets, removes only fields that
	// Options.OverrideManagers own, leaves ignored paths alone, and keeps
	// real Secret values.
	Patch Patch
}

// Corrections plans how to bring the live objects back to the desired
// state: creates first, then patches, each in Flux's reconcile order
// (CustomResourceDefinitions, Namespaces, ClusterRoles and the other kinds
// that others refer to first, webhook configurations last, then by group,
// kind, namespace and name), so that a missing Namespace is created before
// the objects in it. With ModeWarn
// or ModeDisabled it returns nothing: drift is only reported. Extra
// objects are not deleted.
func (r *Report) Corrections() []Correction {
	if r.Mode != ModeEnabled {
		return nil
	}
	var creates, patches []Correction
	for i := range r.Objects {
		o := &r.Objects[i]
		var data resultData // none in a Report built or decoded by the caller
		if o.private != nil {
			data = **o.private
		}
		switch o.Status {
		case StatusMissing:
			creates = append(creates, Correction{Object: o.Object, Action: ActionCreate, Create: data.desired.DeepCopy()})
		case StatusModified:
			patches = append(patches, Correction{Object: o.Object, Action: ActionPatch, Patch: data.correction})
		}
	}
	byKind := func(a, b Correction) int { return cmp.Compare(kindRank(a.Object.Kind), kindRank(b.Object.Kind)) }
	slices.SortStableFunc(creates, byKind)
	slices.SortStableFunc(patches, byKind)
	return append(creates, patches...)
}

// reconcileOrder is the order in which fluxcd/pkg/ssa (ReconcileOrder)
// applies kinds: these first, in this order; webhook configurations last;
// every other kind between them.
var reconcileOrder = [...]string{
	"CustomResourceDefinition", "Namespace", "ClusterRole", "ClusterClass", "RuntimeClass",
	"PriorityClass", "StorageClass", "VolumeSnapshotClass", "IngressClass", "GatewayClass",
	"ClusterRoleBinding", "ResourceQuota", "ServiceAccount", "Role", "RoleBinding",
	"ConfigMap", "Secret", "Service", "LimitRange", "Deployment", "StatefulSet", "CronJob",
	"PodDisruptionBudget",
}

func kindRank(kind string) int {
	if i := slices.Index(reconcileOrder[:], kind); i >= 0 {
		return i - len(reconcileOrder)
	}
	switch kind {
	case "MutatingWebhookConfiguration":
		return 1
	case "ValidatingWebhookConfiguration":
		return 2
	}
	return 0
}

// Format prints the correction with Secret data masked, whatever the
// verb: %#v as GoString, every other verb as String. A Correction holds
// the real values, which fmt would otherwise print field by field.
func (c Correction) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, c.GoString())
		return
	}
	_, _ = io.WriteString(f, c.String())
}

// GoString, for %#v, masks Secret data as String does.
func (c Correction) GoString() string {
	type fields Correction // without methods, for fmt
	f := fields(c)
	if c.Object.isSecret() {
		f.Patch = maskPatch(c.Patch)
	}
	s := fmt.Sprintf("%#v", f)
	if _, rest, ok := strings.Cut(s, "{"); ok {
		s = "drift.Correction{" + rest
	}
	return s
}

// String describes the correction with Secret data masked, e.g.
// "patch Deployment.apps/default/web: replace /spec/replicas 2".
func (c Correction) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", c.Action, c.Object)
	if c.Action != ActionPatch {
		return b.String()
	}
	p := c.Patch
	if c.Object.isSecret() {
		p = maskPatch(p)
	}
	for i, op := range p {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s %s", op.Op, op.Path, displayValue(op.Value))
	}
	return b.String()
}
