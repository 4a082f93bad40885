// Package distribute is rendered-manifest mode: one Helm release spread
// over many member clusters object by object, as a Karmada control plane
// does with helm install against its API server.
//
// A Distributor (New) is a release.Cluster, like release/memory and
// release/kube, and the reconcile.Reconciler drives it unchanged: install,
// upgrade, test, rollback, uninstall and drift correction reach every
// member. Helm renders the chart once and keeps the release's records on
// a hub (helm ls there shows it). The Distributor's kube client places
// the manifest's objects with propagation policies by kind, name and
// labels, so community charts work unmodified; divides replicas by
// weight; lets what a workload uses follow it; places what no policy
// names where the release's workloads go; and applies override policies
// per member. Policies the chart renders itself are used, never applied.
//
// Each member's copies are server-side applied with inventory labels
// (InventoryNameLabel, InventoryNamespaceLabel); by those labels the
// Distributor prunes what a member should no longer hold and refuses to
// take over another release's objects. Karmada's conflict resolution
// applies: under Abort (the default) an object a member holds without
// the labels fails that member's part with *ConflictResolutionError;
// Overwrite takes it over. Waits judge every member's copy with kstatus.
// A member that fails fails only its own part, named by *MemberError in
// the error.
//
// DetectDrift and CorrectDrift compare and correct every member's copies,
// so a release's drift detection covers the whole fleet.
//
// # Placement: what Karmada does, what the Distributor does
//
// The weakness of this mode on a Karmada platform is that community
// charts cannot be used out of the box: with Karmada, an object of a chart goes to
// a member only if a propagation policy selects it (or, with
// propagateDeps, if a workload's pod template names it); everything else
// stays on the Karmada control plane, in silence. A community chart
// renders far more than its workloads: ingress-nginx 4.15 renders 12
// objects and 7 hooks, kube-prometheus-stack 88.5 66 objects, 7 hooks and
// 10 CRDs, and one PropagationPolicy naming their Deployments reached 4 and
// 16 of them. The Distributor places every object, and says where and why:
//
//  1. A propagation policy that selects an object places it, as in Karmada
//     (policy.Engine.Place: selection, affinity, taints, spread, Divided
//     and Weighted replicas, overrides per member).
//  2. With propagateDeps, what a placed object uses follows it, to the
//     same members. Karmada's fields (Secrets, ConfigMaps, the
//     ServiceAccount and PVCs of a pod template; an Ingress's TLS Secrets)
//     and, helmfleet's additions: Services that select a workload's pods,
//     Ingresses of a followed Service and their IngressClass, ConfigMaps
//     and Secrets named in container flags (ingress-nginx's
//     --configmap=$(POD_NAMESPACE)/name), the IngressClass whose
//     controller a workload runs, PodDisruptionBudgets and
//     HorizontalPodAutoscalers of a workload, the RoleBindings and
//     ClusterRoleBindings of a followed ServiceAccount and the roles they
//     grant, webhook configurations and APIServices that call a followed
//     Service, and the custom resources of a followed CRD.
//  3. An object that neither a policy nor a link places goes where the
//     release's workloads go: the members of its Deployments,
//     StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs and Pods (hooks
//     aside), or, when the policies place none of them, the members of its
//     placed objects (policy.Engine.PlaceDefault). Workloads are placed
//     first, then the objects that lead others (Services,
//     ServiceAccounts, bindings, CRDs), each leading what it uses as in
//     2, so the RBAC of a ServiceAccount placed by default follows that
//     ServiceAccount. A workload placed so keeps all its replicas on each
//     member. Karmada has no such default.
//  4. An object that still goes to no member (the policies place nothing
//     of the release, or a policy selects it and schedules it nowhere) is
//     a policy.WarnNotPlaced warning naming it and why; Config.Strict turns
//     it into an *UnplacedError that fails the action before anything is
//     written. A hook that would run nowhere is always an error.
//
// So one PropagationPolicy naming only a chart's workloads is enough: the
// tests spread podinfo, ingress-nginx (as a Deployment and as a
// DaemonSet) and kube-prometheus-stack so, and compare every member with
// Helm's own rendering.
//
// # Seeing the placement
//
// A platform engineer sees the placement three ways:
//
//   - Distributor.Placements(ctx, rel) lists, for the newest revision of a
//     release on the hub, every object (manifest, hooks, the CRDs of
//     crds/, the namespaces created for them) with its members, replicas
//     and reasons, and the warnings; Placements.Table prints it, and
//     Placements.Explain answers "why is this object on member2?" (or why
//     not) down to a policy or the default: "it follows
//     ClusterRoleBinding ingress-nginx via roleRef, which is there because
//     it follows ServiceAccount ingress/ingress-nginx via
//     ClusterRoleBinding subjects, which is there because it follows
//     Deployment ingress/ingress-nginx-controller via serviceAccountName,
//     which is there because PropagationPolicy ingress/ingress-nginx places
//     it there". The answer depends on the release record and the
//     policies only, so it is the same on every call.
//   - Config.OnWarning is told every placement warning of each install,
//     upgrade, rollback and hook run, before anything is applied: the
//     place to turn them into events or conditions. It runs on Helm's
//     goroutine: a panic of it fails the action before anything is
//     applied, with a *release.CallbackPanicError, instead of ending the
//     process.
//   - Config.Strict makes an object that goes nowhere fail the action
//     with an error naming it (the Reconciler records it in the Release's
//     Ready and Released conditions like any failed install or upgrade).
//     The check runs on the release record before Helm stores it, over
//     the manifest and the hooks as Placements places them, so the hub
//     stores no record either, hooks do not run, and the caller gets the
//     *UnplacedError through Helm's error (which flattens a hook's error
//     with %s) whatever hooks the chart has.
//
// # CRDs and namespaces
//
// Helm writes a chart's crds/ and, with install.createNamespace, the
// release's namespace before its release record, when no placement can be
// known. The Distributor holds them and gives them to each member with
// the release's first objects there: every CRD to every member the
// release reaches (its objects or hooks), before anything else, and waits
// until they are Established; the namespace to every member whose objects
// go into it (with the labels Helm gives it). A CRD goes to every member
// the release reaches, not only to those that get one of its custom
// resources, because an operator needs its CRDs wherever it runs. The
// release's CRD policy holds per member: Create (the default) creates the
// CRDs a member lacks and leaves a member's own copy alone, as Helm does;
// CreateReplace replaces it too; Skip leaves them to someone else (the
// Distributor then learns their kinds from the members' CRDs). As Helm
// does, uninstall leaves the CRDs of crds/ and the namespaces; CRDs the
// chart templates are the release's objects and are placed, pruned and
// uninstalled like the others. Namespaces the Distributor creates for
// objects (as Karmada propagates namespaces) carry no inventory labels
// and are never deleted: other releases may live there.
//
// The hub holds none of the release's objects, but Helm's storage keeps
// the release records there (Secrets of the storage namespace, on a real
// API server), which needs that namespace: with install.createNamespace
// the Distributor creates the storage namespace on the hub when the hub
// lacks it and is an ObjectWriter, as Helm on one cluster creates the
// namespace its records then go into. An error of the hub's storage names
// the hub and the namespace of its records.
//
// # Hooks
//
// A hook goes where a policy that selects it puts it, else where the
// release's workloads go (the default placement); what it uses follows it
// there whatever its policy says: its ServiceAccount, the Roles,
// ClusterRoles and bindings of that ServiceAccount, the ConfigMaps and
// Secrets it names. Every hook of a revision is placed together with the
// release's manifest, so a hook ServiceAccount that two hook Jobs use
// reaches the members of both before either runs. Hook copies carry the
// inventory labels and InventoryHookLabel: their delete policy
// (before-hook-creation, hook-succeeded, hook-failed), which Helm
// applies, removes them from every member they were put on and from no
// other; they are never pruned with the release's objects. A manifest
// object a hook uses goes where the manifest's placement puts it, which is
// where the hooks run unless a policy runs the hook elsewhere.
//
// # Capabilities
//
// Karmada renders a chart against its own API server: the control plane's
// Kubernetes version and API groups, which need be none of the members'.
// The Distributor renders once for all members, so it renders for what
// every member can take (Distributor.Capabilities, a
// release.CapabilitiesReader): the lowest Kubernetes version among the
// members that report theirs and the API versions all of them serve; the
// Reconciler adds the chart's own CRDs unless its CRD policy is Skip, and
// HelmConfig's configuration carries the same capabilities for Helm's own
// actions, plus the API versions of the CRDs Helm creates. A chart whose
// kubeVersion one member does not satisfy is refused before any action
// (*release.KubeVersionError with that version). Members that do not
// implement release.CapabilitiesReader, or whose report fails, are left
// out with the reason (CapabilitiesOf); when no member reports, the hub's
// capabilities are used.
package distribute
