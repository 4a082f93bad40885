// Package helmv4 is the Helm v4 engine (helm.sh/helm/v4) of
// release/reconcile: set reconcile.Config.Engine to Engine{} to run every
// release of a Reconciler with Helm v4, or Config.EngineFor to move
// releases one by one. Only programs that import this package compile
// Helm v4; the Reconciler's default stays Helm v3 (reconcile.HelmV3).
//
// The engine is handed the cluster's Helm v3 configuration (what every
// backend, release/memory and release/kube, gives) and builds Helm v4's
// for the same cluster from it:
//
//   - Releases: a Helm v4 storage driver over the cluster's v3 one. Both
//     majors store the same release record; records are converted by a
//     JSON round trip at the boundary, so a release installed by one
//     engine is upgraded, rolled back, tested and uninstalled by the
//     other. Helm v4's apply method (Release.ApplyMethod, "ssa" or "csa"),
//     which the v3 record has no field for, is kept in the record's
//     labels under ApplyMethodLabel; a record without it (written by Helm
//     v3) is client-side, as Helm v4 reads a record without one.
//   - Charts: the v3 chart is converted to Helm v4's chart (API v2, the
//     same fields) at each action; values and post-renderers pass as
//     they are.
//   - Kube client: by default an adapter of the cluster's v3 kube client
//     to Helm v4's interface, so the reconciler's waits (kstatus, the
//     release's health checks, the caller's context) and every backend
//     serve it. Over it Helm v4 records server-side apply, but the
//     objects are written as Helm v3 writes them (create, three-way merge
//     update): no field ownership is taken and no conflict is reported.
//     On release/memory that is what "server-side apply" means. With
//     Engine.NativeKubeClient, Helm v4's own kube client is built on the
//     cluster's RESTClientGetter (release/kube): real server-side apply,
//     with field managers, forced conflicts and Helm v4's conversion of
//     client-side field managers on a release's first server-side upgrade.
//
// The HelmRelease fields only Helm v4 acts on, as Flux 2.8 maps them:
// spec.install.serverSideApply (true when unset, Flux's default),
// spec.upgrade.serverSideApply and spec.rollback.serverSideApply
// (enabled, disabled, or auto: the apply method Helm v4 recorded in the
// latest revision for an upgrade, in the target revision for a
// rollback), conflicts forced whenever server-side apply is on, force
// (replace) only when it is off, and spec.waitStrategy (poller: Helm
// v4's kstatus watcher; legacy: Helm's legacy wait; waits disabled: hooks
// only), and spec.postRenderStrategy (unset: combined, Helm v4's and Flux
// 2.8's default, which post-renders hooks too; nohooks is Helm v3's way).
// The Reconciler does not warn of these fields with this engine.
// spec.install.disableTakeOwnership and spec.upgrade.disableTakeOwnership
// negate Helm v4's TakeOwnership, as Flux sets it: unless disabled, a
// release adopts the objects it renders that exist without Helm's
// ownership metadata (Helm v3's engine refuses them).
// spec.rollback.recreate does not exist in Helm v4 and is ignored.
package helmv4
