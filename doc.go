// Package helmfleet runs Helm releases across a fleet of Kubernetes
// clusters, as plain Go packages that platform teams import into their own
// programs, controllers and unit tests.
//
// It does what Flux's helm-controller and source-controller do for one
// cluster — HelmRelease semantics with chart sources and semver ranges,
// valuesFrom, install/upgrade/test/rollback/uninstall with remediation,
// dependsOn, drift detection with ignore rules, post-renderers — and what a
// Karmada-based platform does to spread a Helm application over member
// clusters: propagation policies with weighted replica division and
// dependencies that follow their workload, and override policies per
// cluster. Callers bring their own cluster clients; the library brings the
// release logic, and an in-memory fleet that runs Helm's real engine for
// tests and demos.
//
// # The path of one fleet release
//
//	Release YAML ──release.Decode──▶ release.Release (validated, defaulted)
//	   chart ref ──source──▶ chart (+version, digest)
//	   valuesFrom/values ──values.Compose──▶ values (+provenance)
//	   policies + clusters ──policy──▶ per-cluster placement and overrides
//	   ──fleet.Plan──▶ per cluster: action, values, manifest, diff
//	   ──fleet.Apply (depgraph)──▶ per cluster, in dependency order: reconcile.Reconciler
//	   ──▶ Status per cluster; drift.Detect over live objects ──▶ report / correction
//
// # Packages
//
// Leaves, pure and free of I/O, import no sibling:
//   - [github.com/helmfleet/helmfleet/values]: compose values from ordered
//     sources with Flux's semantics, with provenance and Secret redaction.
//   - [github.com/helmfleet/helmfleet/source]: resolve chart references
//     (Helm HTTP repositories, OCI registries, local charts) with Flux's
//     version selection, fast on huge indexes.
//   - [github.com/helmfleet/helmfleet/policy]: Karmada-compatible
//     propagation and override policies over plain cluster facts.
//   - [github.com/helmfleet/helmfleet/drift]: compare desired and live
//     objects under ignore rules, and plan corrections.
//   - [github.com/helmfleet/helmfleet/depgraph]: a generic dependency graph
//     and an executor that starts each node as soon as it can run.
//
// Composition and side effects:
//   - [github.com/helmfleet/helmfleet/release]: the API: the Release type
//     (Flux HelmRelease v2 YAML) and the Kustomization, their status and
//     conditions, the multi-document decoder, validation, the scheme, and
//     the cluster roles backends implement. It imports no engine.
//   - [github.com/helmfleet/helmfleet/release/reconcile]: the engine: one
//     release on one cluster, Flux's state machine with its offline plan.
//   - [github.com/helmfleet/helmfleet/release/fleet]: per-cluster releases
//     across members: placement and overrides by policy, plan, apply in
//     dependency order and waves, garbage collection, drift across members;
//     Flux Kustomizations are units there too.
//   - [github.com/helmfleet/helmfleet/release/distribute]: rendered-manifest
//     mode: a cluster backend that renders a chart once and spreads its
//     objects over members by policy.
//   - [github.com/helmfleet/helmfleet/release/controller]: controller-runtime
//     reconcilers for HelmRelease objects on one cluster or on a fleet hub.
//   - [github.com/helmfleet/helmfleet/release/kustomize]: kustomize overlays
//     from an fs.FS, decoded into releases, sources, policies and plain
//     objects, and Flux Kustomizations reconciled on one cluster (server-side
//     apply with an inventory, prune, health); release/fleet runs them as
//     units beside releases, with dependsOn across the two kinds.
//   - [github.com/helmfleet/helmfleet/release/crds]: the CRDs of the kinds
//     the library reads, generated from its types.
//   - [github.com/helmfleet/helmfleet/release/memory]: an in-memory cluster
//     running Helm's real actions.
//   - [github.com/helmfleet/helmfleet/release/kube]: real clusters through
//     client-go.
//   - [github.com/helmfleet/helmfleet/release/releasetest]: a conformance
//     suite every cluster backend passes.
//   - [github.com/helmfleet/helmfleet/release/fleettest]: the test kit for
//     release logic: in-memory test fleets with scripted health and faults,
//     charts built in code and served by an in-memory Helm repository or OCI
//     registry, history and object getters.
//   - [github.com/helmfleet/helmfleet/release/controller/controllertest]: the
//     controllers over a fake client, with no API server.
//
// # Differences from Flux and Karmada
//
// Where the README's table "How helmfleet differs from Flux and Karmada" is
// silent, the library does what Flux and Karmada do, checked against their
// own test data (the peer suites count the cases that agree). Each row
// of the table says what the peer does, what helmfleet does, why, and what
// a user migrating must know; docs/fields.md says, field by field, which
// Flux fields are acted on, warned or refused.
//
// Runnable programs live under examples/ (quickstart, fleet, controller,
// unittest, realcluster, fluxrepo); start with
//
//	go run ./examples/quickstart
package helmfleet
