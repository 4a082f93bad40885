package policy

import (
	"fmt"
	"slices"
	"strings"
)

// WarnNotPlaced: an object goes to no cluster, after the default placement
// (Engine.PlaceDefault): nothing places it, or its policy places it on no
// cluster.
const WarnNotPlaced WarningCode = "NotPlaced"

// PlaceDefault is helmfleet's placement of the objects Place leaves on no
// cluster: no propagation policy selects them, they follow no placed
// object, and their placement did not fail. Karmada leaves such objects
// on its control plane, so a community chart whose policies name only its
// workloads loses its RBAC, webhook configurations, IngressClass and
// custom resources on the members; PlaceDefault gives them clusters
// instead (sorted names among p's clusters), with reason saying why those
// clusters (for Explain and Table).
//
// Workloads (objects with a pod template) are placed first; each object
// placed so then leads its dependencies as under propagateDeps (see
// Place), so a default-placed Job's ServiceAccount, the RBAC bound to it
// and the ConfigMaps it names follow it rather than taking the default
// themselves. The remaining objects are placed next one at a time, those
// that lead others first (Ingresses, Services, ServiceAccounts, bindings,
// CRDs, then the rest, then what only follows: roles, IngressClasses,
// disruption budgets, autoscalers, webhook configurations, APIServices),
// each leading its own as soon as it is placed. An object with replicas
// keeps all of them on each cluster (Duplicated). Objects placed so have
// Default set; the result is the same on every call.
//
// Every object still on no cluster afterwards (clusters is empty, or its
// own policy schedules it nowhere) gets a WarnNotPlaced warning naming it
// and why. An unknown cluster name is an error and changes nothing.
func (e *Engine) PlaceDefault(p *Placement, clusters []string, reason string) error {
	var targets []Target
	for _, name := range clusters {
		if _, ok := slices.BinarySearchFunc(p.clusters, name, func(c Cluster, n string) int { return strings.Compare(c.Name, n) }); !ok {
			return fmt.Errorf("policy: PlaceDefault: cluster %q is not in the placement", name)
		}
		targets = append(targets, Target{Cluster: name})
	}
	slices.SortFunc(targets, func(a, b Target) int { return strings.Compare(a.Cluster, b.Cluster) })
	targets = slices.Compact(targets)
	p.defaultClusters, p.defaultReason = clusters, reason
	unplaced := func(op *ObjectPlacement) bool {
		return op.Err == nil && op.Selection == nil && len(op.Targets) == 0
	}
	var warnings []Warning
	if len(targets) > 0 {
		f := newFollower(p)
		place := func(op *ObjectPlacement) {
			op.Default = true
			op.Targets = slices.Clone(targets)
			if op.Replicas != nil {
				for i := range op.Targets {
					op.Targets[i].Replicas = *op.Replicas
				}
			}
			f.retarget(op)
		}
		// Workloads first, all at once: they do not follow one another.
		var leaders, rest []*ObjectPlacement
		for _, op := range p.Objects {
			if !unplaced(op) {
				continue
			}
			if _, _, ok := podTemplate(op.obj, op.Object.Kind); ok {
				place(op)
				leaders = append(leaders, op)
			} else {
				rest = append(rest, op)
			}
		}
		f.propagate(leaders)
		// Then the rest one by one, the kinds that lead others first, so
		// that what follows an object placed by default is placed as its
		// follower: a ServiceAccount before its bindings, a binding before
		// its role.
		slices.SortStableFunc(rest, func(a, b *ObjectPlacement) int { return leadRank(a.Object) - leadRank(b.Object) })
		for _, op := range rest {
			if unplaced(op) {
				place(op)
				f.propagate([]*ObjectPlacement{op})
			}
		}
		warnings = *f.warnings
	}
	for _, op := range p.Objects {
		if op.Err != nil || len(op.Targets) > 0 {
			continue
		}
		var why string
		switch {
		case op.Selection != nil:
			why = fmt.Sprintf("%s selects it but schedules it on no cluster", op.Selection.Policy)
		case len(targets) == 0:
			why = "no propagation policy selects it, it follows no placed object, and there is no default placement"
			if reason != "" {
				why += " (" + reason + ")"
			}
		}
		warnings = append(warnings, Warning{Code: WarnNotPlaced, Policy: refOf(op), Object: op.Object,
			Message: fmt.Sprintf("%s goes to no cluster: %s", op.Object, why)})
	}
	// Defaults may change whom an object follows, and so its conflict
	// resolution; the annotation warnings are the same as before.
	resolveConflicts(p)
	// A dependency reached from both Place's leaders and the defaults is
	// reported once.
	p.addWarnings(warnings)
	return nil
}

// leadRank orders the kinds that PlaceDefault places one by one: those
// whose dependencies follow them come before their dependencies.
func leadRank(k ObjectKey) int {
	switch {
	case k.Kind == "Ingress":
		return 0
	case isCore(k, "Service"):
		return 1
	case isCore(k, "ServiceAccount"):
		return 2
	case isRBACKind(k, "RoleBinding", "ClusterRoleBinding"):
		return 3
	case isCRD(k):
		return 4
	case isRBACKind(k, "Role", "ClusterRole"), k.Kind == "IngressClass", k.Kind == "PodDisruptionBudget",
		k.Kind == "HorizontalPodAutoscaler", k.Kind == "ValidatingWebhookConfiguration",
		k.Kind == "MutatingWebhookConfiguration", k.Kind == "APIService":
		return 6
	}
	return 5
}

// DefaultClusters returns the clusters and the reason PlaceDefault was
// given; none when it did not run.
func (p *Placement) DefaultClusters() (clusters []string, reason string) {
	return slices.Clone(p.defaultClusters), p.defaultReason
}

// Lead lets the dependencies of the objects keys names (those that are
// placed) follow them as under propagateDeps, whatever their own policy
// says: helmfleet's Distributor makes a hook lead what it uses wherever a
// policy runs it. Missing dependencies are warned about as in Place.
func (p *Placement) Lead(keys ...ObjectKey) {
	var leaders []*ObjectPlacement
	for _, k := range keys {
		if op := p.byKey[k]; op != nil && op.Err == nil && len(op.Targets) > 0 {
			leaders = append(leaders, op)
		}
	}
	if len(leaders) == 0 {
		return
	}
	p.addWarnings(followFrom(p, leaders))
	resolveConflicts(p)
}

// addWarnings appends the warnings p does not have yet, and sorts.
func (p *Placement) addWarnings(ws []Warning) {
	seen := make(map[Warning]bool, len(p.Warnings))
	for _, w := range p.Warnings {
		seen[w] = true
	}
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			p.Warnings = append(p.Warnings, w)
		}
	}
	sortWarnings(p.Warnings)
}
