// Package memory is an in-memory Kubernetes cluster for Helm releases: the
// embedded default backend of helmfleet, on which the quickstart runs a
// whole fleet and platform teams unit-test their release logic with no
// cluster at all.
//
// A Cluster runs Helm's real action code (install, upgrade, rollback,
// uninstall, history, test) over Helm's memory storage driver and an
// object store that implements Helm's kube client. The store keeps
// objects as an API server does: uid, resourceVersion, generation (bumped
// when anything but metadata and status changes), creation time, and
// managedFields maintained by Kubernetes' own field manager, so
// server-side apply ownership and conflicts behave as on a real cluster.
// Kinds are served as by a real API server of the Kubernetes release the
// cluster runs: the built-in kinds in the versions such a server serves
// by default (GA versions: no beta or removed API, so a chart's
// policy/v1beta1 object is refused as on a current cluster), plus the
// kinds of each served version of a CustomResourceDefinition once it is
// stored; a custom resource before its CRD is an error.
//
// The cluster runs, by default, the Kubernetes release of the k8s.io
// libraries it is built with (DefaultKubeVersion; WithKubeVersion sets
// another), and says so, with the API versions it serves, through
// Capabilities (release.CapabilitiesReader, what plans render with) and to
// Helm's own actions: HelmConfig leaves Capabilities to discovery through
// a RESTClientGetter that answers from the store, so an install that
// creates a chart's CRDs renders its templates with their API versions,
// and a template's lookup reads the stored objects, as on a real cluster.
// WithAPIVersions adds API versions to what charts see, for planning
// offline for a cluster with more APIs.
//
// Services get what an API server allocates: a cluster IP from
// 10.96.0.0/12 (none for ExternalName; "None" and requested addresses
// kept), clusterIPs and the IP family fields, node ports from 30000-32767
// for NodePort and LoadBalancer ports and a health check node port where
// externalTrafficPolicy is Local. Allocations are unique in the cluster,
// deterministic (a hash of namespace and name picks them), owned by no
// field manager, kept by writes that leave them out, and freed with the
// Service.
//
// Readiness is scripted: every object is ready at once by default, and a
// HealthFunc (WithHealth, SetHealth) can keep a Deployment from ever
// becoming ready, or fail a hook or test Pod. Reads show the health as the
// status the missing controllers would write (a ready LoadBalancer has an
// ingress address, a ready APIService is Available), so kstatus and Helm's
// waits judge community charts ready with no per-chart settings. SetUnreachable makes the
// cluster fail every call, as a member whose API server went away.
// SetFaults fails single calls instead: a Fault is asked before each call
// through release.Cluster, each request Helm's kube client makes for one
// object, and each write of a Helm release record, and the error it
// returns fails that call before it changes anything, wrapped in a
// *FaultError that names the cluster, the operation and the object.
// FailNth fails the n-th matching call once.
// Storage exposes Helm's records for tests that tamper with them (a crash
// that left a release pending).
//
// What differs from a real cluster: there are no controllers (no Pods
// behind a Deployment), no defaulting (a Service gets no sessionAffinity
// or port protocol it was not sent), no OpenAPI documents, and the HTTP
// API Helm reads through serves reads only; deletes are immediate with the
// garbage collector's cascade by ownerReferences, Helm's updates merge
// three ways with JSON merge patches for every kind (Helm uses strategic
// merge patches for built-in kinds), and Helm waits poll the HealthFunc.
//
// A test fleet of many clusters should share one Schemas (WithSchemas):
// the built-in kinds' REST mappings, type converters and field managers
// are then made once for all of them, and the managed fields a create by
// server-side apply records are worked out once per object shape (exactly:
// see Schemas), which makes a fleet of a thousand members quick to make
// and to fill.
//
// A Cluster implements release.Cluster and release.CapabilitiesReader and
// is safe for concurrent use.
package memory
