// Package controller runs helmfleet's release reconciler inside a
// controller-runtime manager: what Flux's helm-controller does, as a
// reconciler a platform team wires into its own manager in a few lines.
//
//	scheme := runtime.NewScheme()
//	_ = clientgoscheme.AddToScheme(scheme)
//	_ = controller.AddToScheme(scheme) // release.Release, source kinds
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{
//		Scheme:                  scheme,
//		LeaderElection:          true,
//		LeaderElectionID:        controller.LeaderElectionID(""),
//		LeaderElectionNamespace: controller.LeaderElectionNamespace(), // also outside a cluster
//	})
//	_, err := controller.Setup(ctx, mgr, controller.Config{Charts: charts})
//	…
//	mgr.Start(ctx)
//
// # One cluster
//
// HelmReleaseReconciler reads Flux HelmReleases (helm.toolkit.fluxcd.io/v2,
// the typed release.Release; install the CRDs of release/crds) where they
// live, defaults and validates each (an invalid spec is Stalled with its
// field path, never guessed at), and reconciles it
// with reconcile.Reconciler on the manager's own cluster, or on the remote
// cluster of spec.kubeConfig.secretRef (key "value" or "value.yaml", as
// Flux), as spec.serviceAccountName when set (impersonating
// system:serviceaccount:<namespace>:<name>). Each target's release/kube
// Cluster is built once per kubeconfig Secret version and service account,
// so discovery is not repeated on every reconcile. A kubeconfig Secret
// sets no client rate limit, which client-go would hold to 5 requests a
// second (bursts of 10); KubeCluster gives it kube.DefaultQPS and
// kube.DefaultBurst (50, 300, Flux's) instead.
//
// Values of spec.valuesFrom are read with ValuesReader from the API
// server directly (no cache of every Secret in the controller's memory).
// Status goes through the status subresource with Flux's conditions as
// reconcile.Reconciler writes them (Ready, Reconciling, Stalled, Released,
// TestSuccess, Remediated, Drifted) and observedGeneration, so kstatus and
// `flux get`-style tools read it. Deleting a HelmRelease uninstalls its
// Helm release first (Flux's finalizer), unless it is suspended.
//
// # Kubeconfig Secrets
//
// A kubeconfig in a Secret (spec.kubeConfig.secretRef, and the member
// Secrets SecretMembers reads) is data from whoever may write that Secret,
// so it is read with kube.RESTConfigFromKubeconfig: nothing in it makes
// the controller run a program or read a file of its own host. Refused,
// wherever they appear in the kubeconfig:
//
//   - users[].user.exec and users[].user.auth-provider: credential
//     plugins run on the controller's host, whatever service account the
//     release impersonates;
//   - users[].user.tokenFile, client-certificate and client-key, and
//     clusters[].cluster.certificate-authority: files of the controller's
//     host (a tokenFile naming the controller's own service account token
//     would send it to a server the kubeconfig names); use the inline
//     token, client-certificate-data, client-key-data and
//     certificate-authority-data instead;
//   - users[].user.as, as-uid, as-groups and as-user-extra: whom a
//     release acts as is spec.serviceAccountName (or
//     Config.DefaultServiceAccount), which would replace them unseen.
//
// A refused kubeconfig fails the release with Ready=False InitFailed and
// a message naming the HelmRelease, spec.kubeConfig.secretRef, the Secret,
// its key and the kubeconfig field (users[0].user.exec); the error is a
// *TargetError wrapping a *kube.KubeconfigError. No value of the Secret
// is quoted, and no client is built. For SecretMembers the member's
// error says the same and stops the fleet's reconcile.
//
// Two opt-ins, off by default, on Config and on SecretMembers:
// InsecureKubeconfigExec accepts exec and auth-provider plugins (Flux's
// --insecure-kubeconfig-exec), InsecureKubeconfigFiles the file
// references. proxy-url and insecure-skip-tls-verify are accepted: they
// concern only the connection to a server the kubeconfig names anyway,
// with credentials it carries itself.
//
// # Signed charts
//
// A chart whose source asks for verification (chart.spec.verify, or the
// spec.verify of the OCIRepository or HelmChart) is installed only when
// its cosign signature verifies against the public keys of
// verify.secretRef; the release's SourceVerified condition names the
// signer or the refusal. The keys are read by the resolver's
// source.OCIOptions.Secrets: give it ValuesReader{Reader:
// mgr.GetAPIReader()}; a resolver without one refuses every chart that
// asks for verification.
//
// # Triggers and requeues
//
// A release is reconciled when its spec, labels or annotations change
// (reconcile.fluxcd.io/requestedAt included), when a ConfigMap or Secret
// it reads changes, when a release of its dependsOn becomes ready, and,
// with Config.Resolver, when its HelmRepository, OCIRepository or
// HelmChart changes, or the HelmRepository of the HelmChart its
// spec.chartRef names: field indexes (IndexConfigMaps, IndexSecrets,
// IndexDependsOn, IndexSources on HelmReleases, IndexHelmChartSource on
// HelmCharts) find the releases of a changed object, and ConfigMaps and
// Secrets are watched by metadata only. Nothing polls
// beyond spec.interval.
//
// A release whose dependencies are not ready is marked Ready=False
// DependencyNotReady and tried again after Config.RetryInterval (Flux's
// --requeue-dependency, 30s), or as soon as the dependency becomes ready.
// Result.Next done requeues after spec.interval; requeue after its
// RequeueAfter; a stalled release returns reconcile.TerminalError and
// waits for a change; errors composing values or getting the chart
// requeue after Config.RetryInterval; a failed Helm action returns its
// error to the controller's backoff.
//
// # Events, logs and metrics
//
// Events (Config.Events, the manager's recorder) carry Flux's reasons:
// InstallSucceeded, UpgradeFailed, … Logs go to the logr logger in the
// context (ctrl.LoggerFrom). Metrics registered in controller-runtime's
// metrics.Registry: helmfleet_reconcile_duration_seconds{kind},
// helmfleet_reconcile_condition{kind,namespace,name,type,status} (Flux's
// gotk_reconcile_condition) and
// helmfleet_release_actions_total{cluster,action}.
//
// None of them carries a Secret value: for a HelmRelease whose values
// come from a Secret, Helm's error text is withheld by package release
// before it reaches the status, the events or the logs, which show a
// message naming the release, the chart and the template file and line
// instead (see "Secret values in errors and plans" in package release).
// Metric labels are names, never messages.
//
// # A fleet
//
// FleetReconciler (SetupFleet) keeps HelmReleases and Karmada
// PropagationPolicies and OverridePolicies on a hub and runs them on member
// clusters with release/fleet: every change of a release, a policy or a
// member Secret replans the whole fleet (one reconcile key), which is
// applied in dependency order across members; each HelmRelease's Ready
// condition says on how many members it is ready, and why not on the
// others. It is True only when the release is ready on every member it is
// placed on: a member where it failed, or where an override policy fails
// for it (fleet.MemberError), makes it False, reason ReconciliationFailed,
// naming the member and the failure, with a Warning event, and the fleet is
// tried again after FleetConfig.RetryInterval. A member the release left
// (its placement changed) is not counted: the release is uninstalled there,
// and only an uninstall that fails is named, as "<member> (no longer placed
// there; uninstall)", making Ready False. Charts come from
// FleetConfig.Charts, or from FleetConfig.Resolver and the hub's source
// objects as in one-cluster mode. Members come from a MemberSource:
// SecretMembers reads kubeconfig Secrets labelled
// helmfleet.io/member=<name> on the hub (their other labels are the
// placement labels), StaticMembers is a fixed list. The per-member statuses
// stay in the fleet's inventory: in FleetConfig.Store when set
// (fleet.NewObjectStore over ObjectClient("hub", mgr.GetClient()) keeps it
// in Secrets on the hub), so a restarted or newly elected controller still
// uninstalls from the members a release removed while none ran; without a
// store, in memory only, and such a release is left on its members. Do not
// run both reconcilers on the same HelmReleases: shard them apart.
//
// # Service accounts in a fleet
//
// A release's spec.serviceAccountName, else FleetConfig.DefaultServiceAccount,
// is honoured on every member it is placed on: the fleet acts there as
// system:serviceaccount:<release namespace>:<name> by impersonation
// through the member's cluster (release.Impersonator; KubeCluster's
// clusters send the API server's impersonation header, so each member's
// kubeconfig user needs RBAC's impersonate verb on those service
// accounts). A member whose cluster cannot impersonate, or refuses to,
// fails that release with a message naming the release, the member and
// spec.serviceAccountName, and nothing is installed there with the
// member's own credentials. Without either, releases act with the
// members' own credentials.
//
// # Client rate limits and throughput
//
// The manager's rest.Config sets the rate limit of the manager's own
// client (four requests a release: the finalizer, two status writes, an
// event) and, for releases without spec.kubeConfig, of their Helm clients
// too, as KubeCluster keeps a limit the config sets. Give it Flux's
// --kube-api-qps and --kube-api-burst defaults:
//
//	cfg := ctrl.GetConfigOrDie() // 20 QPS, bursts of 30, otherwise
//	cfg.QPS, cfg.Burst = kube.DefaultQPS, kube.DefaultBurst
//
// A rest.Config with neither set (what a plain kubeconfig gives) is held
// by client-go to 5 requests a second, bursts of 10: the manager's client
// alone then caps the controller near one release a second.
//
// Measured on one local API server beside Helm's action.Install of the
// same releases one at a time. 1,000 ten-object releases, waits off, on a 2-core machine
// shared with other work, all in one run:
//
//	controller (4 at once, 50/300)  10.5 releases/s   96 ms each  31 requests each
//	Helm, client-go's 5 QPS/burst 10 1.7 releases/s  598 ms each  24 requests each
//	Helm, no client rate limit       5.0 releases/s  199 ms each  24 requests each
//
// That is 6.3 and 2.1 times Helm's. The controller's heap in use peaked
// 63 MB over its start (the peak RSS grew 52 MB). It sends a quarter more
// requests than a Helm install (its status, a finalizer, an event, and
// discovery); reconcile.Reconciler reads Helm's release records once per
// reconcile, as Helm's install does, and more reconciles at once do not
// help (see DefaultMaxConcurrentReconciles). The README's performance
// section says how to run the measurement.
//
// # Horizontal scale
//
// Instances split HelmReleases by Flux's sharding.fluxcd.io/key label:
// Config.Shard = ShardSelector("a") reconciles shard a, ShardSelector("")
// the unlabelled releases. ShardCacheOptions narrows the manager's cache
// to the shard too. Within a shard, leader election is the manager's,
// on the Lease LeaderElectionID(key).
//
// # Running tenants
//
// A platform whose HelmReleases belong to several tenants, each in a
// namespace of its own, turns on Config.NoCrossNamespaceRefs, or
// FleetConfig.NoCrossNamespaceRefs for a fleet (off by default, as
// Flux's --no-cross-namespace-refs is). A HelmRelease whose
// spec.chart.spec.sourceRef, spec.chartRef or spec.dependsOn names
// another namespace is then Ready False and Stalled, reason
// AccessDenied, with a message naming the HelmRelease, the field path
// and the other namespace (a *release.AccessDeniedError), and nothing
// else happens to it: no source or HelmChart of the other namespace is
// read, no chart resolved, no finalizer added, nothing installed, and it
// waits for a change of its spec. dependsOn is refused too, where Flux
// refuses only sources: the refusal is written before any dependency is
// looked at, so a tenant's status never shows whether another tenant's
// release exists or is ready. A reference in the HelmRelease's own
// namespace, spelled out or left empty, is allowed; a HelmChart named by
// spec.chartRef takes its repository from its own namespace.
// valuesFrom, kubeConfig and verify.secretRef cannot name a namespace;
// spec.targetNamespace and spec.storageNamespace say where the release
// goes, are not references, and are not refused (nor are they in Flux).
// What guards them is the identity the release is installed with: a
// platform running tenants also sets a default service account for
// releases that name none (DefaultServiceAccount, Flux's
// --default-service-account) and keeps kubeconfigs that run exec plugins
// or read local files refused, opting in only where it trusts them.
package controller
