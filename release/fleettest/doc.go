// Package fleettest helps test release logic without a cluster, the way
// net/http/httptest and testing/fstest help test HTTP and file-system
// code: it builds an in-memory fleet, serves charts, and reads back what
// Helm and the members hold.
//
//   - New builds a fleet of release/memory members, each with a name,
//     labels, a Kubernetes version, scripted health (ImageNeverReady,
//     ChartNeverReady) and injected faults (a memory.Fault such as
//     memory.FailNth), behind
//     a release/fleet Fleet and a reconciler; Inputs decodes YAML for it,
//     Fleet.Run plans and applies, Fleet.Ready reads a member's Ready.
//     NewCluster builds one such member alone.
//   - Chart builds a chart in code, LoadDir loads one from a directory,
//     Podinfo is a small ready-made chart; Charts serves a set of them to a
//     reconciler, choosing versions as Flux does.
//   - NewHelmRepository and NewOCIRegistry serve charts over HTTP as a
//     Helm repository (index.yaml and .tgz) and an OCI registry, at the
//     URL a HelmRepository or OCIRepository names.
//   - History and Object read a member's Helm history and live objects for
//     assertions.
//
// The controller-runtime environment (a reconciler over a fake client,
// with no API server) is in release/controller/controllertest.
//
// Everything runs in the test's process; nothing here is meant for
// production.
package fleettest
