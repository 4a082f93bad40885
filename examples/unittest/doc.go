// Package unittest shows how a platform team unit-tests its own release
// logic with helmfleet's in-memory fleet and failure injection, with no
// cluster at all.
//
// The logic under test is what a team would write on top of the library:
// RolloutPlatform, the team's rollout policy (dev first, then one prod
// canary, then the rest of prod; halt at the first failure and roll the
// failed wave back), and HealDrift, which puts back what someone changed
// by hand on a member.
//
// The tests (platform_test.go) build a fleet of release/memory clusters
// and run the policy through scenarios in one table: a healthy rollout, a
// Deployment that never becomes ready on the prod canary
// (memory.WithHealth), a member whose API server is gone
// (Cluster.SetUnreachable) and that comes back, and drift made by another
// field manager (Cluster.Update). Each scenario asserts what an operator
// would check by hand: the Helm history on every member (action.History
// over the member's HelmConfig, what `helm history` shows), the objects in
// the member (Cluster.Summary), the Ready condition of every release and
// the rollout report.
package unittest
