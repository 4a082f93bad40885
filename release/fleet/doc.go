// Package fleet runs Helm releases across a fleet of member clusters,
// one real Helm release per member (helm ls works there): what a platform
// running Flux's helm-controller on every member of a Karmada federation
// does, as one library call.
//
// A Fleet (New) holds Members: a cluster backend (release/memory,
// release/kube, or a rendered-manifest release/distribute.Distributor)
// and its placement facts.
//
// # Plan
//
// Fleet.Plan places each Release with Karmada propagation policies, gives
// each member its own copy through override policies (any field, such as
// a pre-release chart version on dev; the values overrider for
// per-member Helm values) and plans each copy with the Reconciler:
// action, chart, composed values, rendered objects and the diff against
// what runs there now, writing nothing. Releases a member no longer gets
// are planned as uninstalls (garbage collection). Plan.Table, Plan.Diff,
// Plan.MarshalJSON and Plan.Mermaid show it.
//
// # Apply
//
// Fleet.Apply runs a plan with package depgraph: each release starts the
// moment its own dependencies are ready, on the same member or on others
// (a database on one member before the app on another), within
// concurrency limits overall and per member; a member that fails fails
// only its own releases and their dependents. A Rollout spreads an Apply
// over waves of members, each gated on the new revision's health after a
// bake time, a caller's gate and a failure budget, optionally rolling
// back the failed members. The ApplyReport says what happened per release
// and wave (Table, Mermaid); Events report progress as it happens.
//
// # Inventory and drift
//
// The Fleet remembers, per member and release, the copy it last applied
// with its status: what garbage collection and the next plan start from.
// Inventory and Restore carry it over a restart. Fleet.Drift checks every
// applied release on its member under the release's ignore rules, listing
// each kind once per member, and with correct patches drift back.
package fleet
