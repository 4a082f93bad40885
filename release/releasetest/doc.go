// Package releasetest checks cluster backends: TestCluster is a
// conformance suite, in the spirit of testing/fstest.TestFS, that every
// release.Cluster (release/memory, release/kube, a caller's own) must pass.
//
//	func TestConformance(t *testing.T) {
//		releasetest.TestCluster(t, myCluster)
//	}
//
// Each check is a subtest:
//   - namespaces: the suite's namespaces are created through Apply (a
//     real API server needs them) and listed back;
//   - objects: apply and get, list by label selector in one namespace and
//     in all (sorted by namespace and name), dry run, delete (then get and
//     delete again yield release.ErrNotFound), not-found errors carrying
//     the cluster and the object, server-side apply field ownership (a
//     second manager's conflicting apply is a *release.ConflictError naming
//     the first manager and the field; with Force it takes the field over),
//     the status subresource, Services (a cluster IP allocated, unless
//     ExternalName, "None" and requested addresses kept; node ports in
//     30000-32767 for NodePort and LoadBalancer ports; allocations owned by
//     no manager, kept when an apply leaves them out, and one held by
//     another Service refused), and a cancelled context making Get, List,
//     Apply and Delete return promptly with context.Canceled;
//   - capabilities, for a cluster that implements
//     release.CapabilitiesReader (skipped otherwise): a Kubernetes version,
//     the APIs of a current server and none removed, a CRD's group/version
//     and group/version/Kind once it is created;
//   - helm: install, upgrade, rollback, history and uninstall of Chart with
//     Helm's action package through HelmConfig;
//   - helm crds and lookup: a chart with a CRD in crds/ whose templates see
//     its API in .Capabilities on the first install and read a stored
//     object with lookup, as Helm does on a real cluster.
//
// The suite needs nothing only a real API server does: no controllers run,
// Deployments need not become ready, LoadBalancers need no address, Helm's
// Wait stays off.
package releasetest
