// Package simulation is helmfleet's deterministic fault simulation: a test
// harness that drives the real code through a schedule of spec changes and
// faults drawn from a seed, and checks invariants after every step. A
// schedule has two tracks, each drawn from its own stream of the seed and
// run over clusters of its own, one step of each per step:
//
//   - the first drives the engine (release/reconcile on one in-memory
//     cluster, "solo") and the fleet (release/fleet: Plan, Apply with
//     rollout waves, restarts over its ObjectStore on a hub) on members
//     m1 to m3;
//   - the second (kinds_test.go) drives the controller in one-cluster
//     mode (release/controller's HelmReleaseReconciler over a
//     controller-runtime fake client, release "web" on cluster ctl) and in
//     fleet mode (FleetReconciler, release "fl" placed by a
//     PropagationPolicy on f1 and f2, its inventory in an ObjectStore on
//     chub), both reading values from a Secret by valuesFrom, and a fleet
//     of Kustomizations (release/kustomize through release/fleet on k1 and
//     k2): "infra" with wait: true producing the HelmRelease "addon" and a
//     Secret whose token is substituted (postBuild.substituteFrom) from
//     each member's cluster-vars Secret, and "site", which dependsOn infra.
//
// Faults: a cluster failing every call of one verb, or its n-th call of
// one, unreachable, a context cancelled at its k-th call (first track),
// hooks failing (the 7.0.0 chart's pre-install/upgrade/delete Job), a
// Deployment that never becomes ready (6.6.0 on the members the schedule
// marks), process restarts (with the fleet stores), spec changes at any
// point; on the second track also: the Kustomizations' source changing
// revision or disappearing, valuesFrom Secrets rotated, deleted, rotated
// to YAML that does not parse or to a replicaCount the schema refuses,
// cluster-vars rotated, chart versions withdrawn from the repository, an
// OverridePolicy that fails on f2, fl's placement shrinking to f1 and
// growing back. The stores' hub chub gets no faults.
//
// One schedule is replayed exactly with its seed:
//
//	go test ./internal/simulation -run TestSimulation -args -seed=N
//
// (-hist logs its whole history, also on a violation.) Without -seed a
// fixed budget runs: seeds 1 to 30 of 100 steps each (4 under the race
// detector), one to two minutes on 2 cores; TestSimulationRegressions
// replays the seeds that once found a bug. A long run:
//
//	go test ./internal/simulation -run TestSimulation -timeout 0 -args -seeds=10000
//
// -steps sets the steps per schedule and -first the first seed of a budget.
//
// The invariants, each checked after every step:
//
//  1. Ready means ready: a release whose Ready is True for its generation (on
//     one cluster, or a member's copy in the fleet's inventory) runs on its
//     cluster as the latest Helm revision, deployed, at the chart version
//     and replica count of its spec, and its Deployment is healthy. So does
//     the controller's "web" when Ready (at the values its Secret held at
//     its last reconcile; a reconcile that could not read them must not
//     leave it Ready), and "fl" on every member it is placed on, whose
//     Ready counts each placed member once ("ready on n/placed"), a failed
//     one never hidden. A Kustomization with wait Ready for its generation
//     runs addon at the version and replicas of the source revision it
//     last applied; site runs only in an apply where infra succeeded.
//  2. No dead ends: once the faults stop, every release reaches Ready or
//     Stalled (with a reason) within a bounded number of reconciles or
//     applies, and no Helm release is left pending or uninstalling; on the
//     second track, fl is Ready or each of its member copies is Ready or
//     Stalled, and a Kustomization is Ready, Stalled, or held by addon
//     stalled on its member.
//  3. Every action accounted for: the Helm revisions a step adds on a member
//     are at most the install, upgrade and rollback actions reported for it
//     (by the Result or the ApplyReport, a rollout's rollback included); a
//     step that reports no action adds none; a fleet report's revision is
//     Helm's latest; no step writes the same rollback twice in a row.
//  4. Nothing lost after a restart: a new Fleet over the same store knows
//     every member copy the old one knew. A copy whose last save failed (the
//     hub was unreachable) comes back with the older status the store holds,
//     which may read Ready for what ran before: invariant 1 leaves such a
//     copy out until it is applied and saved again.
//  5. No panic, and no Secret canary in any output: every value the second
//     track writes into a Secret (valuesFrom, cluster-vars) is a canary that
//     must appear, in none of fixture.CanaryForms, in the controllers'
//     results and errors, the HelmReleases' status JSON, the events, the log
//     lines, the fleet's Plan (fmt, Table, Diff, JSON), ApplyReport (fmt,
//     Table, JSON), its events, the Kustomizations' status and the
//     inventory's copies.
//
// Not driven yet: conflicts from another field manager and hand edits,
// slow members, lost leadership, Kustomizations in the controller (it runs
// HelmReleases only), chart versions withdrawn on the first track.
//
// A violation fails with the seed, the step and the last steps of the
// schedule. Charts: the test chart at 6.5.0 and 6.5.1 (good), 6.6.0 (its
// Deployment never becomes ready on the members whose schedule says so) and
// 7.0.0 (with a Job hook run before install, upgrade and delete, which
// fails on a member while the schedule says so).
package simulation
