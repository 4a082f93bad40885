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
//     and a cancelled context making Get, List, Apply and Delete return
//     promptly with context.Canceled;
//   - helm: install, upgrade, rollback, history and uninstall of Chart with
//     Helm's action package through HelmConfig.
//
// The suite needs nothing only a real API server does: no controllers run,
// Deployments need not become ready, Helm's Wait stays off.
package releasetest
