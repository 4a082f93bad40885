package policy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Placement is the result of Engine.Place: per object, the winning policy,
// the target clusters with replicas and what it follows.
type Placement struct {
	// Objects are sorted by namespace, kind, name.
	Objects []*ObjectPlacement
	// Warnings are sorted by code, policy, object and path.
	Warnings []Warning

	clusters []Cluster // sorted by name
	byKey    map[ObjectKey]*ObjectPlacement

	defaultClusters []string // given to PlaceDefault
	defaultReason   string
}

// ObjectPlacement is where one object goes.
type ObjectPlacement struct {
	// Object identifies the object.
	Object ObjectKey
	// Selection is the winning propagation policy; nil when none matches (the
	// object then goes nowhere unless it follows a workload).
	Selection *Selection
	// AffinityGroup is the clusterAffinities group used, if any.
	AffinityGroup string
	// Replicas is the object's own replica count; nil for objects without one.
	Replicas *int64
	// Targets are the clusters the object goes to, sorted by name. Objects
	// placed alike share its memory: copy it before changing an element.
	Targets []Target
	// Follows lists the workloads (or Services, Ingresses) this object
	// follows as their dependency, sorted.
	Follows []ObjectKey
	// FollowsVia says, for each object followed, through which field,
	// sorted by leader and field.
	FollowsVia []Follow
	// Default is true when PlaceDefault placed the object (no policy
	// selects it and it follows no placed object).
	Default bool
	// Err is why the object could not be placed (binding, scheduling); the
	// object then has no targets from its own policy.
	Err error
	// Conflict says what to do when a target cluster already holds the
	// object and something else manages it there: the object's
	// work.karmada.io/conflict-resolution annotation, else its policy's
	// spec.conflictResolution, else Abort.
	Conflict Conflict

	obj         *unstructured.Unstructured
	scheduled   []Target // what its own policy scheduled, sorted by cluster; shared with the run's memo, never written
	pos         int      // index in Placement.Objects
	replicaPath []string
	overrides   []ovMatch
	policy      *propPolicy
	// conflictAnnotation is the object's conflict-resolution annotation.
	conflictAnnotation string
}

// Cluster returns the object's target on the named cluster.
func (o *ObjectPlacement) Cluster(name string) (Target, bool) {
	i, ok := slices.BinarySearchFunc(o.Targets, name, func(t Target, n string) int { return strings.Compare(t.Cluster, n) })
	if !ok {
		return Target{}, false
	}
	return o.Targets[i], true
}

// Get returns the placement of one object, or nil.
func (p *Placement) Get(key ObjectKey) *ObjectPlacement { return p.byKey[key] }

// Clusters returns the clusters the placement was computed for, sorted by name.
func (p *Placement) Clusters() []Cluster { return slices.Clone(p.clusters) }

// Place decides, for every object, the winning propagation policy, the
// target clusters and each cluster's replicas, then lets dependencies follow
// their workloads. A failure for one object (a binding to a missing policy,
// an unsatisfiable placement) is recorded in its ObjectPlacement.Err and
// returned joined; the other objects are still placed. Invalid input (nil
// objects, duplicate objects or clusters) fails the call.
//
// The Placement refers to objs (Materialize and Explain copy them before
// changing anything); do not modify them while the Placement is in use.
func (e *Engine) Place(objs []*unstructured.Unstructured, clusters []Cluster) (*Placement, error) {
	return e.place(objs, clusters, evaluator{prop: e.matchProp, ov: e.matchOverrides, cache: true})
}

// evaluator is how place finds matching policies and whether it reuses
// scheduling work across objects; tests swap in Karmada's naive way to
// benchmark and cross-check the index.
type evaluator struct {
	prop  func(*unstructured.Unstructured, ObjectKey, *scratch) ([]scored, error)
	ov    func(*unstructured.Unstructured) ([]ovMatch, error)
	cache bool
}

func newRun(e *Engine, clusters []Cluster) *run {
	return &run{e: e, clusters: clusters, feasible: map[groupKey][]*Cluster{}, spread: map[groupKey]spreadResult{}, divided: map[divideKey][]Target{}}
}

func (e *Engine) place(objs []*unstructured.Unstructured, clusters []Cluster, ev evaluator) (*Placement, error) {
	sorted, err := sortClusters(clusters)
	if err != nil {
		return nil, err
	}
	p := &Placement{clusters: sorted, byKey: make(map[ObjectKey]*ObjectPlacement, len(objs)), Objects: make([]*ObjectPlacement, 0, len(objs))}
	ops := make([]ObjectPlacement, len(objs))
	r := newRun(e, sorted)
	sc := &scratch{pos: make([]int32, len(e.props))}
	matched := make([]bool, len(e.props)) // by propPolicy.idx
	won := make([]bool, len(e.props))
	for i, obj := range objs {
		if obj == nil {
			return nil, fmt.Errorf("policy: Place: object %d is nil", i)
		}
		key := KeyOf(obj)
		if p.byKey[key] != nil {
			return nil, fmt.Errorf("policy: Place: %s is given twice", key)
		}
		op := &ops[i]
		op.Object, op.obj = key, obj
		// Read now, while the object's metadata is in the cache.
		op.conflictAnnotation, _ = nested(obj.Object, "metadata", "annotations")[AnnotationConflictResolution].(string)
		p.byKey[key] = op
		p.Objects = append(p.Objects, op)
		if !ev.cache {
			w := r.workloads // what earlier objects constrain is not a cache
			r = newRun(e, sorted)
			r.workloads = w
		}
		e.placeOne(r, ev, sc, op, matched, won)
	}
	slices.SortFunc(p.Objects, func(a, b *ObjectPlacement) int { return compareKeys(a.Object, b.Object) })
	for i, op := range p.Objects {
		op.pos = i
	}
	p.Warnings = append(p.Warnings, e.follow(p)...)
	p.Warnings = append(p.Warnings, resolveConflicts(p)...)
	p.Warnings = append(p.Warnings, e.warnings(p, matched, won)...)
	p.Warnings = append(p.Warnings, dividedWithoutReplicas(p)...)
	sortWarnings(p.Warnings)
	var errs []error
	for _, op := range p.Objects {
		if op.Err != nil {
			errs = append(errs, op.Err)
		}
	}
	return p, errors.Join(errs...)
}

func compareKeys(a, b ObjectKey) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind),
		strings.Compare(a.Name, b.Name), strings.Compare(a.APIVersion, b.APIVersion))
}

func sortClusters(clusters []Cluster) ([]Cluster, error) {
	sorted := slices.Clone(clusters)
	slices.SortFunc(sorted, func(a, b Cluster) int { return strings.Compare(a.Name, b.Name) })
	for i := range sorted {
		if sorted[i].Name == "" {
			return nil, errors.New("policy: a cluster has no name")
		}
		if i > 0 && sorted[i].Name == sorted[i-1].Name {
			return nil, fmt.Errorf("policy: cluster %q is given twice", sorted[i].Name)
		}
	}
	return sorted, nil
}

func (e *Engine) placeOne(r *run, ev evaluator, sc *scratch, op *ObjectPlacement, matched, won []bool) {
	obj := op.obj
	path, replicas, hasReplicas := replicaField(obj, op.Object.Kind)
	if hasReplicas {
		op.replicaPath = path
		op.Replicas = &replicas
	}
	ovs, err := ev.ov(obj)
	if err != nil {
		op.Err = err
		return
	}
	op.overrides = ovs
	cands, err := ev.prop(obj, op.Object, sc)
	if err != nil {
		op.Err = err
		return
	}
	for _, c := range cands {
		matched[c.p.idx] = true
	}
	pp, sel, _ := e.selectFrom(cands, sc)
	if pp == nil {
		return
	}
	won[pp.idx] = true
	op.Selection = sel
	op.policy = pp
	if hrPath, hrReplicas, ok, err := helmReleaseReplicas(pp, obj, op.Object); err != nil {
		op.Err = err
		return
	} else if ok {
		path, replicas, hasReplicas = hrPath, hrReplicas, true
		op.replicaPath = path
		op.Replicas = &replicas
	}
	targets, group, err := r.scheduleObject(pp, obj, op.Object, hasReplicas, replicas)
	if err != nil {
		op.Err = err
		return
	}
	op.AffinityGroup = group
	// Objects scheduled alike share the memo's slice; its capacity is its
	// length, so follow's merge never writes into it.
	op.Targets = targets[:len(targets):len(targets)]
	op.scheduled = targets
}

// follow lets dependencies take the clusters of the objects they follow,
// starting from the objects whose policy has propagateDeps (or
// association): see followFrom.
func (e *Engine) follow(p *Placement) []Warning {
	var leaders []*ObjectPlacement
	for _, op := range p.Objects {
		if op.Err == nil && op.policy != nil && (op.policy.spec.PropagateDeps || op.policy.spec.Association) && len(op.Targets) > 0 {
			leaders = append(leaders, op)
		}
	}
	return followFrom(p, leaders)
}

// dependent is one edge of the follow graph: the object that follows and
// the field that links it to its leader.
type dependent struct {
	op  *ObjectPlacement
	via string
}

// followFrom lets the dependencies of leaders take the leaders' clusters,
// transitively: Karmada's propagateDeps fields, plus (helmfleet) Services
// whose selector matches a workload's pod labels, Ingresses that name a
// followed Service as a backend, an Ingress's TLS Secrets and IngressClass,
// ConfigMaps and Secrets a workload names in a container flag
// (--configmap=$(POD_NAMESPACE)/name), the IngressClass whose controller a
// workload runs, the PodDisruptionBudgets that select a workload's pods
// and the HorizontalPodAutoscalers that scale it, the RoleBindings and
// ClusterRoleBindings of a followed
// ServiceAccount and the Role or ClusterRole they grant, the webhook
// configurations and APIServices that call a followed Service, and the
// custom resources of a followed CustomResourceDefinition. A dependency
// that also has a placement of its own gets the union. It returns warnings
// for dependencies of Karmada's fields that are not among the objects.
func followFrom(p *Placement, leaders []*ObjectPlacement) []Warning {
	if len(leaders) == 0 {
		return nil
	}
	f := newFollower(p)
	f.propagate(leaders)
	return *f.warnings
}

// follower propagates placements along the follow graph of one
// placement, whose indexes it builds once.
type follower struct {
	// propagate lets the dependencies of leaders take their clusters.
	propagate func(leaders []*ObjectPlacement)
	// retarget forgets what it knew of op's clusters, after op's Targets
	// were set from outside.
	retarget func(op *ObjectPlacement)
	// warnings are the missing dependencies found so far.
	warnings *[]Warning
}

func newFollower(p *Placement) *follower {
	type nsKind struct{ namespace, kind, name string }
	core := map[nsKind]*ObjectPlacement{}
	// Services are indexed by namespace and the smallest key of their
	// selector with its value: a workload looks only at the Services whose
	// first selector pair its pod labels carry.
	type selectorKey struct{ namespace, key, value string }
	services := map[selectorKey][]*ObjectPlacement{}
	ingressByBackend := map[nsKind][]*ObjectPlacement{}
	bindingsBySA := map[nsName][]*ObjectPlacement{}
	roles := map[nsKind]*ObjectPlacement{}
	callersBySvc := map[nsName][]*ObjectPlacement{}
	var classes []*ObjectPlacement
	budgets := map[string][]*ObjectPlacement{} // PodDisruptionBudgets by namespace
	scalers := map[nsKind][]*ObjectPlacement{} // HorizontalPodAutoscalers by target
	crsByKind := map[[2]string][]*ObjectPlacement{}
	for _, op := range p.Objects {
		o, k := op.obj, op.Object
		switch {
		case isCore(k, "Service"):
			if sel := nested(o.Object, "spec", "selector"); len(sel) > 0 {
				first := sortedKeys(sel)[0]
				if v, ok := sel[first].(string); ok {
					sk := selectorKey{k.Namespace, first, v}
					services[sk] = append(services[sk], op)
				}
			}
			core[nsKind{k.Namespace, "Service", k.Name}] = op
		case isCore(k, "ConfigMap"), isCore(k, "Secret"), isCore(k, "ServiceAccount"), isCore(k, "PersistentVolumeClaim"):
			core[nsKind{k.Namespace, k.Kind, k.Name}] = op
		case k.Kind == "Ingress":
			for _, svc := range ingressBackends(o) {
				k := nsKind{k.Namespace, "Service", svc}
				if !slices.Contains(ingressByBackend[k], op) {
					ingressByBackend[k] = append(ingressByBackend[k], op)
				}
			}
		case isRBACKind(k, "RoleBinding", "ClusterRoleBinding"):
			for _, sa := range boundServiceAccounts(o, k.Namespace) {
				if !slices.Contains(bindingsBySA[sa], op) {
					bindingsBySA[sa] = append(bindingsBySA[sa], op)
				}
			}
		case isRBACKind(k, "Role", "ClusterRole"):
			roles[nsKind{k.Namespace, k.Kind, k.Name}] = op
		case k.Kind == "IngressClass" && groupOf(k.APIVersion) == "networking.k8s.io":
			classes = append(classes, op)
		case k.Kind == "PodDisruptionBudget" && groupOf(k.APIVersion) == "policy":
			budgets[k.Namespace] = append(budgets[k.Namespace], op)
		case k.Kind == "HorizontalPodAutoscaler" && groupOf(k.APIVersion) == "autoscaling":
			if kind, name := str(o.Object, "spec", "scaleTargetRef", "kind"), str(o.Object, "spec", "scaleTargetRef", "name"); name != "" {
				t := nsKind{k.Namespace, kind, name}
				scalers[t] = append(scalers[t], op)
			}
		default:
			for _, svc := range calledServices(o, k.Kind) {
				callersBySvc[svc] = append(callersBySvc[svc], op)
			}
		}
		if isCRD(k) {
			group, kind := crdKind(o)
			crsByKind[[2]string{group, kind}] = nil
		}
	}
	if len(crsByKind) > 0 { // only the kinds of CRDs among the objects are indexed
		for _, op := range p.Objects {
			gk := [2]string{groupOf(op.Object.APIVersion), op.Object.Kind}
			if crs, ok := crsByKind[gk]; ok {
				crsByKind[gk] = append(crs, op)
			}
		}
	}
	var warnings []Warning
	type missingKey struct{ from, dep ObjectKey }
	missing := map[missingKey]bool{}
	var keyBuf []string
	edges := func(op *ObjectPlacement) []dependent {
		o, k, ns := op.obj, op.Object, op.Object.Namespace
		var deps []depRef
		var out []dependent
		if spec, podLabels, ok := podTemplate(o, k.Kind); ok {
			deps = podDependencies(spec)
			if k.Kind == "StatefulSet" {
				deps = withoutClaimTemplates(deps, o)
			}
			keyBuf = appendSortedKeys(keyBuf[:0], podLabels)
			for _, lk := range keyBuf {
				v, _ := podLabels[lk].(string)
				for _, svc := range services[selectorKey{ns, lk, v}] {
					if selectorMatches(nested(svc.obj.Object, "spec", "selector"), podLabels) {
						out = append(out, dependent{svc, "Service spec.selector"})
					}
				}
			}
			words := podTexts(spec)
			named := namedInPodTexts(words, ns)
			keyBuf = appendSortedKeys(keyBuf[:0], named)
			for _, name := range keyBuf {
				for _, kind := range []string{"ConfigMap", "Secret"} {
					if dep := core[nsKind{ns, kind, name}]; dep != nil {
						out = append(out, dependent{dep, "container flag naming it"})
					}
				}
			}
			for _, c := range classes {
				if runsIngressClass(words, c.obj) {
					out = append(out, dependent{c, "IngressClass spec.controller run by the workload"})
				}
			}
			for _, b := range budgets[ns] {
				if budgetSelects(b.obj, podLabels) {
					out = append(out, dependent{b, "PodDisruptionBudget spec.selector"})
				}
			}
			for _, h := range scalers[nsKind{ns, k.Kind, k.Name}] {
				out = append(out, dependent{h, "HorizontalPodAutoscaler spec.scaleTargetRef"})
			}
		}
		switch {
		case isCore(k, "Service"):
			for _, in := range ingressByBackend[nsKind{ns, "Service", k.Name}] {
				out = append(out, dependent{in, "Ingress backend"})
			}
			for _, c := range callersBySvc[nsName{ns, k.Name}] {
				out = append(out, dependent{c, "clientConfig.service"})
			}
		case isCore(k, "ServiceAccount"):
			for _, b := range bindingsBySA[nsName{ns, k.Name}] {
				out = append(out, dependent{b, b.Object.Kind + " subjects"})
			}
		case isRBACKind(k, "RoleBinding", "ClusterRoleBinding"):
			if kind, ref, ok := roleRef(o, ns); ok {
				if r := roles[nsKind{ref.namespace, kind, ref.name}]; r != nil {
					out = append(out, dependent{r, "roleRef"})
				}
			}
		case k.Kind == "Ingress":
			deps = append(deps, ingressTLSSecrets(o)...)
			if name := ingressClassOf(o); name != "" {
				for _, c := range classes {
					if c.Object.Name == name {
						out = append(out, dependent{c, "spec.ingressClassName"})
					}
				}
			}
		case isCRD(k):
			group, kind := crdKind(o)
			for _, cr := range crsByKind[[2]string{group, kind}] {
				out = append(out, dependent{cr, "custom resource of the CustomResourceDefinition"})
			}
		}
		for _, d := range deps {
			if dep := core[nsKind{ns, d.kind, d.name}]; dep != nil {
				out = append(out, dependent{dep, d.via})
				continue
			}
			dk := ObjectKey{APIVersion: "v1", Kind: d.kind, Namespace: ns, Name: d.name}
			from := k
			from.APIVersion = "" // reported once per kind, namespace and name
			id := missingKey{from, dk}
			if !missing[id] {
				missing[id] = true
				warnings = append(warnings, Warning{Code: WarnDependencyMissing, Policy: refOf(op), Object: k, Path: d.via,
					Message: fmt.Sprintf("%s depends on %s through %s, which is not among the objects", k, dk, d.via)})
			}
		}
		return out
	}
	// The clusters each object currently reaches, as bit sets over p.clusters.
	words := (len(p.clusters) + 63) / 64
	for i, op := range p.Objects {
		op.pos = i
	}
	reach := make([][]uint64, len(p.Objects))
	block := make([]uint64, words*len(p.Objects)) // backs reach
	type sharedKey struct {
		first *Target // &op.scheduled[0]
		n     int
	}
	scheduledBits := map[sharedKey][]uint64{}
	clustersOf := func(op *ObjectPlacement) []uint64 {
		s := reach[op.pos]
		if s == nil {
			s = block[op.pos*words : (op.pos+1)*words : (op.pos+1)*words]
			reach[op.pos] = s
			// Objects scheduled alike share op.scheduled: their sets are
			// computed once, while their Targets are still what was
			// scheduled.
			var shared sharedKey
			if n := len(op.scheduled); n > 0 && n == len(op.Targets) && sameClusters(op.Targets, op.scheduled) {
				shared = sharedKey{&op.scheduled[0], n}
				if b, ok := scheduledBits[shared]; ok {
					copy(s, b)
					return s
				}
			}
			clear(s) // retarget may have left bits
			// Targets and clusters are both sorted by name: walk them together.
			i := 0
			for _, t := range op.Targets {
				for p.clusters[i].Name != t.Cluster {
					i++
				}
				s[i/64] |= 1 << (i % 64)
			}
			if shared.first != nil {
				scheduledBits[shared] = slices.Clone(s)
			}
		}
		return s
	}
	edgesOf := make([][]dependent, len(p.Objects))
	edgesDone := make([]bool, len(p.Objects))
	follows := make([][]Follow, len(p.Objects))
	var touched []int // positions of follows in use
	propagate := func(leaders []*ObjectPlacement) {
		queue := slices.Clone(leaders)
		for len(queue) > 0 {
			leader := queue[0]
			queue = queue[1:]
			from := clustersOf(leader)
			if !edgesDone[leader.pos] { // an object reached again has the same edges
				edgesOf[leader.pos], edgesDone[leader.pos] = edges(leader), true
			}
			for _, d := range edgesOf[leader.pos] {
				dep := d.op
				if dep == leader {
					continue
				}
				first := follows[dep.pos] == nil
				if first {
					touched = append(touched, dep.pos)
				}
				f := Follow{Leader: leader.Object, Via: d.via}
				if !slices.Contains(follows[dep.pos], f) {
					follows[dep.pos] = append(follows[dep.pos], f)
				}
				to := clustersOf(dep)
				changed := false
				for i := range to {
					if n := to[i] | from[i]; n != to[i] {
						to[i] = n
						changed = true
					}
				}
				if changed || first {
					queue = append(queue, dep)
				}
			}
		}
		for _, pos := range touched {
			fs := follows[pos]
			follows[pos] = nil
			op := p.Objects[pos]
			if op.FollowsVia == nil {
				op.FollowsVia = fs // follows[pos] was reset: fs is op's alone
			} else {
				op.FollowsVia = append(op.FollowsVia, fs...)
			}
			slices.SortFunc(op.FollowsVia, compareFollows)
			op.FollowsVia = slices.Compact(op.FollowsVia)
			leaders := 0
			for i, f := range op.FollowsVia {
				if i == 0 || op.FollowsVia[i-1].Leader != f.Leader {
					leaders++
				}
			}
			op.Follows = slices.Grow(op.Follows[:0], leaders)
			for _, f := range op.FollowsVia {
				if len(op.Follows) == 0 || op.Follows[len(op.Follows)-1] != f.Leader {
					op.Follows = append(op.Follows, f.Leader)
				}
			}
			set := reach[pos]
			own := len(op.Targets)
			// The clusters in set that op.Targets lacks; op.Targets and
			// p.clusters are both sorted by name.
			added, j := 0, 0
			for i := range p.clusters {
				if j < own && op.Targets[j].Cluster == p.clusters[i].Name {
					j++
				} else if set[i/64]&(1<<(i%64)) != 0 {
					added++
				}
			}
			if added == 0 {
				continue
			}
			merged := make([]Target, 0, own+added)
			j = 0
			for i := range p.clusters {
				switch {
				case j < own && op.Targets[j].Cluster == p.clusters[i].Name:
					merged = append(merged, op.Targets[j])
					j++
				case set[i/64]&(1<<(i%64)) != 0:
					t := Target{Cluster: p.clusters[i].Name}
					if op.Replicas != nil {
						t.Replicas = *op.Replicas
					}
					merged = append(merged, t)
				}
			}
			op.Targets = merged
		}
		touched = touched[:0]
	}
	return &follower{propagate: propagate, retarget: func(op *ObjectPlacement) { reach[op.pos] = nil }, warnings: &warnings}
}

// sameClusters reports whether a and b name the same clusters in order.
func sameClusters(a, b []Target) bool {
	for i := range a {
		if a[i].Cluster != b[i].Cluster {
			return false
		}
	}
	return true
}

// Follow is one reason an object follows another: the leader's placement
// reaches it through the field Via (the leader's, such as
// serviceAccountName, or its own, such as "Service spec.selector").
type Follow struct {
	// Leader is the object followed.
	Leader ObjectKey
	// Via names the link.
	Via string
}

// String renders the link for people: "Deployment ns/web via serviceAccountName".
func (f Follow) String() string { return f.Leader.String() + " via " + f.Via }

func compareFollows(a, b Follow) int {
	return cmp.Or(compareKeys(a.Leader, b.Leader), strings.Compare(a.Via, b.Via))
}

// resolveConflicts sets every object's Conflict, after follow: its
// annotation, else its own winning policy, else (for a dependency that only
// follows) the policies of the objects it follows, any Overwrite winning as
// when Karmada aggregates a dependency's bindings. It warns about
// annotation values Karmada would ignore.
func resolveConflicts(p *Placement) []Warning {
	for i, op := range p.Objects {
		op.pos = i
	}
	memo := make([]conflictMemo, len(p.Objects)) // by ObjectPlacement.pos
	var warnings []Warning
	for _, op := range p.Objects {
		c := policyConflict(p, op, memo)
		v := op.conflictAnnotation
		switch v {
		case AnnotationOverwrite:
			c.Resolution, c.Source = ConflictOverwrite, ConflictFromAnnotation
		case AnnotationAbort:
			c.Resolution, c.Source = ConflictAbort, ConflictFromAnnotation
		case "":
		default:
			warnings = append(warnings, Warning{Code: WarnConflictAnnotationInvalid, Policy: c.Policy, Object: op.Object,
				Path: "metadata.annotations." + AnnotationConflictResolution,
				Message: fmt.Sprintf("%s: annotation %s=%q is neither %q nor %q and is ignored; conflict resolution %s comes from the %s",
					op.Object, AnnotationConflictResolution, v, AnnotationOverwrite, AnnotationAbort, c.Resolution, c.Source)})
		}
		op.Conflict = c
	}
	return warnings
}

// policyConflict is the conflict resolution the policies give op, before
// its annotation.
func policyConflict(p *Placement, op *ObjectPlacement, memo []conflictMemo) Conflict {
	m := &memo[op.pos]
	if m.done {
		return m.c
	}
	m.done = true
	c := &m.c
	*c = Conflict{Resolution: ConflictAbort, Source: ConflictFromDefault} // a follow cycle reads the default
	switch {
	case op.policy != nil:
		c.Policy = op.policy.ref
		if r := op.policy.spec.ConflictResolution; r != "" {
			c.Resolution, c.Source = r, ConflictFromPolicy
		}
	case len(op.Follows) > 0:
		first := true
		for _, k := range op.Follows {
			leader := p.Get(k)
			if leader == nil {
				continue
			}
			lc := policyConflict(p, leader, memo)
			if first || (lc.Resolution == ConflictOverwrite && c.Resolution != ConflictOverwrite) {
				*c, first = lc, false
			}
		}
	}
	return *c
}

// conflictMemo is policyConflict's result for one object, once done.
type conflictMemo struct {
	c    Conflict
	done bool
}

func refOf(op *ObjectPlacement) Ref {
	if op.Selection == nil {
		return Ref{}
	}
	return op.Selection.Policy
}

// Table renders the placement as a text table: one row per object, one
// column per cluster, each cell the cluster's replicas ("-" when the object
// does not go there, "✓" for an object without replicas), then the winning
// policy or the workloads it follows.
func (p *Placement) Table() string {
	var b strings.Builder
	rows := [][]string{{"OBJECT"}}
	for _, c := range p.clusters {
		rows[0] = append(rows[0], c.Name)
	}
	rows[0] = append(rows[0], "POLICY")
	for _, op := range p.Objects {
		row := []string{op.Object.String()}
		for _, c := range p.clusters {
			t, ok := op.Cluster(c.Name)
			switch {
			case !ok:
				row = append(row, "-")
			case op.Replicas == nil:
				row = append(row, "✓")
			default:
				row = append(row, fmt.Sprint(t.Replicas))
			}
		}
		var why []string
		if op.Selection != nil {
			why = append(why, op.Selection.Policy.String())
		}
		for _, f := range op.Follows {
			why = append(why, "follows "+f.String())
		}
		if op.Default {
			why = append(why, "default")
		}
		if op.Err != nil {
			why = append(why, "error: "+op.Err.Error())
		}
		if len(why) == 0 {
			why = append(why, "none")
		}
		row = append(row, strings.Join(why, ", "))
		rows = append(rows, row)
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
		}
		b.WriteString("\n")
	}
	return b.String()
}
