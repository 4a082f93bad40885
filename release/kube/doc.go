// Package kube is the real-cluster backend of helmfleet: a release.Cluster
// over client-go and Helm's action configuration with Secret storage.
//
// A Cluster is built from what the caller already has, a
// genericclioptions.RESTClientGetter (kubectl's ConfigFlags, Flux's
// getters) or a *rest.Config:
//
//	c, err := kube.New(kube.Config{Name: "eu-1", REST: restConfig})
//
// NewRESTConfigGetter turns a *rest.Config into such a getter with a
// default namespace. New builds no client the caller cannot replace:
// Config.Dynamic, Config.Mapper and Config.Kubernetes take the caller's own
// dynamic client, RESTMapper and clientset, and otherwise come from the
// getter.
//
// HelmConfig returns a new *action.Configuration per call: release records
// are Secrets of HelmScope.StorageNamespace (Helm's "secret" driver), the
// Helm kube client defaults to HelmScope.Namespace, and Helm's debug output
// goes to Config.Log rather than a global logger.
//
// The object client reads and writes through the dynamic client:
//   - Get returns one object; List makes one list request by label
//     selector and sorts the result by namespace and name.
//   - Apply is a server-side apply (FieldManager, Force, DryRun). When the
//     server reports that other managers own fields, the error is a
//     *release.ConflictError listing each manager and field path.
//   - Delete removes one object with a propagation policy (background by
//     default).
//
// Capabilities (release.CapabilitiesReader) gives the library's own renders
// (Plan, the Reconciler's kubeVersion check) the cluster's Kubernetes
// version and API versions, computed from discovery as Helm computes them,
// cached per Cluster and checked with one conditional request per call
// (see Cluster.Capabilities for when it rediscovers). Helm's own actions
// still discover for themselves: HelmConfig sets no Capabilities, so an
// install sees the CRDs it has just created from crds/.
//
// Kinds are mapped to resources through a deferred discovery RESTMapper,
// reset once when a kind is unknown so CRDs created after the first call
// are found. Absent objects yield a *release.NotFoundError (matching
// release.ErrNotFound); RBAC denials a *release.ForbiddenError naming the
// cluster, verb and resource; a cancelled context an error matching
// ctx.Err().
//
// # Kubeconfigs from Secrets and impersonation
//
// RESTConfigFromKubeconfig turns kubeconfig bytes someone else wrote (a
// Secret's) into a *rest.Config as data: exec and auth-provider plugins
// and file references (tokenFile, client-certificate, client-key,
// certificate-authority) are refused unless KubeconfigOptions allow them,
// impersonation fields always; errors are *KubeconfigError naming the
// Secret, key and kubeconfig field, never a value.
//
// Cluster.Impersonate (release.Impersonator) returns the cluster acting
// as another user through the API server's impersonation headers, built
// once per user; a fleet uses it for a release's spec.serviceAccountName.
//
// The package passes releasetest.TestCluster against real kube-apiservers.
package kube
