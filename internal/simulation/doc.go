// Package simulation is helmfleet's deterministic fault simulation: a test
// harness that drives the real engine (release/reconcile on one in-memory
// cluster) and the real fleet (release/fleet: Plan, Apply with rollout waves,
// restarts over its ObjectStore) through a schedule of spec changes and
// faults drawn from a seed, and checks invariants after every step.
//
// One schedule is replayed exactly with its seed:
//
//	go test ./internal/simulation -run TestSimulation -args -seed=N
//
// Without -seed a fixed budget runs: seeds 1 to 30 of 100 steps each (4 under
// the race detector), about a minute on 2 cores; TestSimulationRegressions
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
//     and replica count of its spec, and its Deployment is healthy.
//  2. No dead ends: once the faults stop, every release reaches Ready or
//     Stalled (with a reason) within a bounded number of reconciles or
//     applies, and no Helm release is left pending or uninstalling.
//  3. Every action accounted for: the Helm revisions a step adds on a member
//     are at most the install, upgrade and rollback actions reported for it
//     (by the Result or the ApplyReport, a rollout's rollback included); a
//     step that reports no action adds none; a fleet report's revision is
//     Helm's latest.
//  4. Nothing lost after a restart: a new Fleet over the same store knows
//     every member copy the old one knew. A copy whose last save failed (the
//     hub was unreachable) comes back with the older status the store holds,
//     which may read Ready for what ran before: invariant 1 leaves such a
//     copy out until it is applied and saved again.
//  5. No panic.
//
// A violation fails with the seed, the step and the last steps of the
// schedule. Charts: the test chart at 6.5.0 and 6.5.1 (good), 6.6.0 (its
// Deployment never becomes ready on the members whose schedule says so) and
// 7.0.0 (with a Job hook run before install, upgrade and delete, which
// fails on a member while the schedule says so).
package simulation
