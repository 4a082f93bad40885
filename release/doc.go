// Package release runs one Helm release on one cluster: the Release type
// (Flux's HelmRelease) and its decoding, the cluster roles backends
// implement, and the reconciler (Flux's helm-controller state machine)
// with its offline Plan.
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
// # Fidelity to Flux
//
// The state machine follows Flux helm-controller v1.6.3 (commit 372c34e2),
// checked by that project's own test data ported into
// testdata/peer/flux (peer_flux_test.go, peer_flux_actions_test.go): the
// state and action tables, the atomic-release scenarios and the suites of
// each action. As in Flux, an install starts a new history, a failure
// counts against the retries only when it wrote a release record, Ready is
// composed from Remediated, TestSuccess and Released (SummarizeReady), and
// a stall keeps Ready's failure reason beside Stalled. Documented
// differences: the safe remediation above; a Snapshot records no action;
// a reconcile in which an action failed returns that failure as its
// error even when a remediation followed, where Flux returns none after a
// remediation; and Uninstall removes the
// release the spec names even when the status history did not record it
// (Flux refuses without a matching history).
//
// # The layers above
//
// This package is one release on one cluster. Two packages build on it
// and are never imported by it:
//   - release/fleet places Releases on many member clusters with Karmada
//     policies, one real Helm release per member, and plans and applies
//     them in dependency order and progressive waves;
//   - release/distribute is rendered-manifest mode: a Cluster that renders
//     a chart once and spreads its objects over members by policy, driven
//     by this package's Reconciler unchanged.
//
// Member (a cluster backend and its placement facts), SortMembers and
// FactsOf serve both. Reconciler.Health, RollbackToPrevious and Drift are
// the per-release steps a rollout and a fleet-wide drift check are made
// of.
package release
