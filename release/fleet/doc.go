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
// are planned as uninstalls (garbage collection), in state StateRemoved;
// a unit in sync shows the action none. Plan.Table, Plan.Diff,
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
// and wave (Table, Mermaid); Events report progress as it happens. A
// panic of Config.Events or of the Rollout's Gate does not reach the
// caller as a panic: Apply returns it as a *release.CallbackPanicError
// (Events is called no more during that Apply; a panicking Gate halts the
// rollout as a refusal does, and the wave report carries it as GateErr).
//
// # Kustomizations
//
// Flux Kustomizations (kustomize.toolkit.fluxcd.io/v1, Inputs.Kustomizations)
// are a second kind of unit, run with Config.Kustomize or
// Config.KustomizeConfig (package release/kustomize). Propagation
// policies place them (resourceSelectors of apiVersion
// kustomize.toolkit.fluxcd.io/v1, kind Kustomization) and override
// policies patch each member's copy, as for releases; a Key of one has
// Kind KindKustomization. Each member's copy is built from its source and
// planned there: Plan.Kustomizations say what it would apply, the diff
// and what its prune would delete. The HelmReleases and Kustomizations a
// Kustomization builds are not applied as objects: they become units on
// that member, as if decoded directly (labelled with Flux's
// kustomize.toolkit.fluxcd.io/name and /namespace, then overridden by
// the override policies of the inputs and those the Kustomization
// built), so clusters/<env> in Flux's layout runs its infrastructure and
// apps Kustomizations and their releases. Such a unit depends on the
// Kustomization that produced it, so it starts after that
// Kustomization's own dependencies and objects (namespaces, CRDs) are
// ready. A `flux bootstrap` repository's flux-system Kustomization, which
// produces itself (gotk-sync.yaml), is one unit: a Kustomization that
// produces itself, or one placed on the member directly, produces no new
// unit (the placed spec is kept; a plan warning says when the produced
// one differs). Flux sources it builds (GitRepository, OCIRepository, …)
// are neither applied nor run: Sources and the ChartGetter serve them.
// Flux's own controllers (gotk-components.yaml) are applied as plain
// objects.
//
// A release whose chart uses a kind the member does not serve yet (a
// custom resource whose CRD a unit it depends on brings) is planned
// after its dependencies (StateDeferred, with the kinds it waits for),
// and Apply renders and reconciles it once they are ready, as Flux,
// which never plans ahead, would. Without dependencies that error stays
// an error.
//
// dependsOn names a unit of the dependent's own kind, as in Flux, or,
// with kind (a helmfleet extension), the other kind: a HelmRelease may
// wait for a CRD Kustomization and a Kustomization for a HelmRelease, on
// the same member or, when that member does not run it, on every member
// that does. A dependency on a Kustomization with spec.wait is a
// dependency on the releases it produces too, as Flux's wait includes
// their Ready (with spec.healthChecks, on those it names). Such a
// Kustomization is itself ready only when they are: when one fails, its
// report item fails with a *ProducedNotReadyError and its status
// (KustomizationStatus) is Ready and Healthy False, reason
// HealthCheckFailed, naming the unit and why, as Flux's health check of
// the HelmReleases it applied makes it. A cycle across kinds is a plan
// error naming it, and Apply then applies nothing.
//
// Garbage collection deletes a Kustomization a member no longer gets,
// after the units it produced and those that depend on it; its objects
// are pruned when its deletion policy says so (spec.prune with the
// default MirrorPrune). What a Kustomization produced and no longer
// produces is removed when it prunes, and left in place, as Flux orphans
// it, when it does not prune, or when it failed to build (what it
// produces is then unknown). Waves, gates, the failure budget and the
// Store cover Kustomizations like releases; rollback and drift do not
// (Flux has neither for them).
//
// # A repository as the input
//
// Config.Repository runs a whole Flux repository with no glue: Root is
// the tree of the bootstrap source (GitRepository
// flux-system/flux-system unless RootSource says otherwise), Sources the
// trees of the other sources its Kustomizations name (GitRepository,
// Bucket, OCIRepository of manifests, ExternalArtifact) by
// kustomize.SourceKey, MemberSources those that differ per member, and
// Charts the resolver of every chart (source.NewHTTPResolver,
// source.NewOCIResolver, …). The inputs are then the bootstrap
// Kustomization with its policies (ExampleRepository). The
// HelmRepository, OCIRepository and HelmChart objects any Kustomization
// builds on a member are that member's chart sources from then on: a
// release it or a later Kustomization produces there finds its chart
// through them, per member, as Flux's source-controller on that cluster
// would serve it. A Kustomization whose source the member's registry
// does not serve, and a release whose chart source no Kustomization
// planned before it produced there, are plan errors naming the object
// and the kind. The fleet does not run Flux 2.7's ArtifactGenerator: it
// is not applied, and each ExternalArtifact it declares must be
// registered in Sources (or MemberSources), else the producing
// Kustomization fails to plan with an *UnservedArtifactError naming the
// generator, the field and the artifact (never an apply of a kind the
// member lacks).
//
// # Mirrors
//
// A member's chart sources are its own copies: Karmada's override
// policies reach them (an OverridePolicy selecting HelmRepository or
// OCIRepository objects), and then Config.Mirrors, prefix rules selected
// per member by name or label, rewrite their spec.url and the absolute
// chart URLs an index lists, for a regional or air-gapped registry
// (ExampleMirror). Plan.Mirrored lists every URL rewritten, with what
// rewrote it; a chart that fails through a mirror is a *MirrorError
// naming the member, the source and both URLs. Plain HTTP to an OCI
// registry is per source, its spec.insecure.
//
// # Where valuesFrom is read
//
// A release's spec.valuesFrom names ConfigMaps and Secrets in its
// namespace; the fleet reads them on the hub or on each member, per
// release: the annotation fleet.helmfleet.io/values-from (ValuesFromHub,
// ValuesFromMember) on the member's copy after overrides, else
// Config.ValuesFrom. Member mode reads through the member's own cluster
// (release.NewObjectValues), so each member gets the values of the
// objects it holds: platforms that place per-cluster values ConfigMaps on
// each cluster (with Cluster API's ClusterResourceSets, say), and in Karmada's per-member Flux each
// member's helm-controller reads its local ConfigMaps. It needs
// Config.ReconcilerConfig, from which the fleet builds one reconciler per
// member. Plan.ValuesFrom, the table's VALUESFROM column and the JSON
// field valuesFrom say which was used; a read that fails is a
// *ValuesFromError naming the member, the release and the reference.
//
// The default is the hub, for three reasons. Flux reads valuesFrom where
// the HelmRelease lives, and the fleet's HelmReleases live on the hub. A
// plan made on the hub then depends on what the hub holds only: every
// per-member difference is declared there, by an override policy, and is
// reviewed in the plan, where in member mode a ConfigMap changed on one
// member by hand changes that member's release. And a missing object is
// one error on the hub, not a different state on each member. Choose
// member mode where the objects are per cluster by design (values
// ConfigMaps placed on each cluster, Karmada's per-member Flux), or where Secrets must not leave their
// member.
//
// # Service accounts
//
// A release that names spec.serviceAccountName (else, with
// Config.DefaultServiceAccount set, that one) acts on every member as
// system:serviceaccount:<its namespace>:<name>, as Flux's helm-controller
// acts as it on its own cluster: its plan, install, upgrade, rollback,
// health checks, drift checks and uninstall go through the member's
// cluster impersonating that user (the release.Impersonator role;
// release/kube sends the API server's impersonation header, so the
// member's credentials need RBAC's impersonate verb on it, and the
// release may do what the service account may). A member whose cluster
// cannot impersonate fails that release with an error naming the
// release, the member and spec.serviceAccountName; it is never run with
// the member's own credentials instead.
//
// # Inventory and drift
//
// The Fleet remembers, per member and release, the copy it last applied
// with its status: what garbage collection and the next plan start from.
// With a Config.Store (NewObjectStore: one Secret per entry in a
// namespace of the hub, through the hub's release.ObjectClient) it
// survives a restart: Apply saves an entry before a release is first
// installed on a member (a process that dies during the install still
// leaves it known) and after every reconcile, rollback and uninstall, and
// a new Fleet loads the store before its first Plan or Drift, so it
// garbage-collects releases an earlier process installed. Garbage
// collection proves ownership from what the fleet recorded itself: it
// uninstalls with the entry's copy, whose status history names the
// revision and digest the fleet last saw, and the engine removes the
// member's Helm release only when that is still Helm's latest record
// (reconcile.Reconciler.Uninstall, as Flux). Where the entry lost its
// status (a first install whose outcome was never saved, with a Helm
// record left) or someone else superseded the recorded revision, the
// release is not uninstalled: its ApplyReport item holds a
// *NotOwnedError naming the member, the Helm release and what did not
// match, and the entry stays. One process
// writes a store at a time (a controller elects a leader; Load again
// after taking over). Without a store, Inventory and Restore carry it by
// hand. Fleet.Drift checks every applied release on its member under the
// release's ignore rules, listing each kind once per member and identity,
// and with correct patches drift back.
//
// # Running tenants
//
// A platform whose hub holds the units of several tenants, each in a
// namespace of its own, turns on Config.NoCrossNamespaceRefs (off by
// default, as Flux's --no-cross-namespace-refs is). A release whose
// spec.chart.spec.sourceRef, spec.chartRef or spec.dependsOn, or a
// Kustomization whose spec.sourceRef or spec.dependsOn, names another
// namespace is then refused on every member it is placed on (after
// override policies, and whether placed directly or produced by a
// Kustomization): its plan item fails with a *release.AccessDeniedError
// naming the unit, the field path and the other namespace, its chart or
// source is not resolved, and Apply does nothing for it, not even an
// uninstall. dependsOn is refused too, where Flux refuses only sources,
// and a refused unit waits for nothing: its report is the same whether
// the unit it names exists, is ready or failed. A HelmChart named by a
// chartRef takes its repository from its own namespace. valuesFrom,
// kubeConfig and postBuild.substituteFrom cannot name a namespace;
// targetNamespace, storageNamespace and a Kustomization's healthChecks
// are where the unit's objects go, not references, and are not refused.
// What guards those is the identity a unit's objects are applied with:
// a platform running tenants also sets a default service account for
// units that name none (DefaultServiceAccount) and keeps the refusal of
// kubeconfigs that run exec plugins or read local files, opting in only
// for members it trusts.
//
// # Secret values
//
// A plan's table, diff, JSON and errors, the apply's error, report and
// events, and the releases' status hold no Secret value: the values are
// redacted, the objects and diffs masked, and Helm's error text for a
// release with Secret-derived values is withheld by package release,
// which names the release, the chart and the template file and line
// instead (see "Secret values in errors and plans" there).
package fleet
