// Package distribute is rendered-manifest mode: one Helm release spread
// over many member clusters object by object, as a Karmada control plane
// does with helm install against its API server.
//
// A Distributor (New) is a release.Cluster, like release/memory and
// release/kube, and the release.Reconciler drives it unchanged: install,
// upgrade, test, rollback, uninstall and drift correction reach every
// member. Helm renders the chart once and keeps the release's records on
// a hub (helm ls there shows it). The Distributor's kube client places
// the manifest's objects with propagation policies by kind, name and
// labels, so community charts work unmodified; divides replicas by
// weight; lets ConfigMaps, Secrets, ServiceAccounts, Services and
// Ingresses follow their workloads; and applies override policies per
// member. Policies the chart renders itself are used, never applied.
//
// Each member's copies are server-side applied with inventory labels
// (InventoryNameLabel, InventoryNamespaceLabel); by those labels the
// Distributor prunes what a member should no longer hold and refuses to
// take over another release's objects. Karmada's conflict resolution
// applies: under Abort (the default) an object a member holds without
// the labels fails that member's part with *ConflictResolutionError;
// Overwrite takes it over. Hooks run where the release's workloads run,
// and waits judge every member's copy with kstatus. A member that fails
// fails only its own part, named by *MemberError in the error.
//
// DetectDrift and CorrectDrift compare and correct every member's copies,
// so a release's drift detection covers the whole fleet.
package distribute
