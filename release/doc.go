// Package release runs Helm releases on one cluster and across a fleet:
// the Release type and its decoding, the per-cluster reconciler (Flux's
// helm-controller state machine), and the fleet layer that places
// releases on member clusters with Karmada policies, plans and applies
// them in dependency order and progressive waves.
//
// # The Release type
//
// A Release is Flux's HelmRelease (helm.toolkit.fluxcd.io/v2) as Go types,
// with the same JSON names, so Flux YAML decodes unchanged. Decode reads a
// multi-document stream of HelmReleases (v2, or v2beta1/v2beta2 converted to
// v2), Flux sources (HelmRepository, OCIRepository, HelmChart) and Karmada
// policies strictly, and reports every unknown field, bad value or unknown
// kind at once, each with its document, object, field path and line. Default
// fills in Flux's defaults so a Release states exactly what will run,
// including the 53-character release-name hashing rule. Validate returns
// every problem of an object at once as a *ValidationError naming the field
// path and bad value. Load does all three.
//
// # Cluster backends
//
// A cluster is seen through small roles: HelmConfigurer (Helm's action
// configuration for a storage namespace), ObjectReader and ObjectWriter
// (get, list, server-side apply, delete), composed as Cluster, plus
// optional roles checked where used: Patcher (JSON patches, for drift
// correction), DriftDetector and, on a Helm kube client, ContextWaiter.
// Package release/memory implements them in memory, release/kube over
// client-go, and release/releasetest checks any implementation.
//
// # Reconciling one release
//
// A Reconciler (NewReconciler) takes charts from a ChartGetter (Charts
// adapts package source's resolvers) and valuesFrom objects from a
// values.Reader. Reconcile runs Flux's state machine, each action type at
// most once, stopping after a remediation: Absent → install; Locked
// (pending-*) → unlock; Unmanaged → upgrade; OutOfSync (chart, values,
// post-renderers, common metadata) → upgrade; Untested → test; Failed →
// remediate by rollback or uninstall while retries remain (RetryOnFailure
// upgrades again after its interval); Drifted → correct or report; InSync →
// nothing. It records Flux's conditions, history snapshots and failure
// counters in the Release's status, and the Result says what was done and
// what to do next (Next: done, requeue, stalled); the caller owns
// scheduling. Waits judge the release's objects with kstatus and observe
// the context, so a cancelled reconcile returns promptly with nothing left
// pending. helmfleet differs from Flux in one decision: a failed upgrade
// configured to remediate by uninstall is rolled back instead when the
// previous revision was deployed and healthy, unless the caller opts in
// (ReconcilerConfig.UninstallHealthyRelease). Plan computes what Reconcile
// would do, with the rendered objects and a diff, without writing anything.
//
// # Per-cluster releases across a fleet
//
// A Fleet (NewFleet) holds Members: a cluster backend and its placement
// facts. Fleet.Plan places each Release with propagation policies, gives
// each member its own copy through override policies (any field, e.g. a
// pre-release chart version on dev; the values overrider for per-member
// values) and plans each copy; releases a member no longer gets are
// planned as uninstalls. Fleet.Apply runs the plan with package depgraph:
// each release starts the moment its dependencies are ready, on the same
// member or on others (a database on one member before the app on
// another), within concurrency limits overall and per member; a Rollout
// spreads it over waves gated on the new revision's health after a bake
// time, a caller's gate and a failure budget, optionally rolling back the
// failed members. Fleet.Drift checks and corrects every member. Each
// member gets a real Helm release, visible with helm ls there.
//
// # Rendered manifests across a fleet
//
// NewDistributor returns a Cluster that spreads one Helm release over
// member clusters the way the seed platform's first method does. Helm
// renders the chart once and keeps the release's records on a hub (helm ls
// there shows it). The Distributor's kube client places the manifest's
// objects with propagation policies by kind, name and labels, so community
// charts work unmodified. It divides replicas by weight, lets ConfigMaps,
// Secrets, ServiceAccounts, Services and Ingresses follow their workloads,
// and applies override policies per member. It server-side applies each
// member's copies with inventory labels, and by those labels prunes what a
// member should no longer hold and refuses another release's objects.
// Policies the chart renders itself are used, never applied. Hooks run
// where the release's workloads run, and waits judge every member's copy
// with kstatus. The Reconciler drives a Distributor unchanged: install,
// upgrade, test, rollback, uninstall and drift correction reach every
// member, and a member that fails fails only its own part, named in the
// error.
package release
