// Package release runs Helm releases: the Release type, its decoding and
// validation, and the reconciler that brings one Release on one cluster to
// its desired state with Helm's own actions.
//
// # The Release type
//
// Release is Flux's HelmRelease (helm.toolkit.fluxcd.io/v2) field for field,
// with Flux's JSON names, so Flux YAML decodes unchanged; v2beta1 and v2beta2
// documents are converted to it. Decode reads a multi-document YAML stream
// holding any mix of the kinds the library understands (HelmRelease,
// HelmRepository, OCIRepository, HelmChart) strictly: an unknown or
// misspelled field is an error naming the document, the object and the field
// path, and every problem of the stream is reported at once. Default applies
// Flux's defaults; Validate reports every invalid field with its path and
// value.
//
// # Cluster backends
//
// A cluster is seen through small roles: HelmConfigurer (Helm's action
// configuration for a storage namespace), ObjectReader and ObjectWriter
// (get, list, server-side apply, delete), composed as Cluster. Package
// release/memory implements them in memory, release/kube over client-go, and
// release/releasetest checks any implementation.
//
// # Reconciling
//
// A Reconciler (NewReconciler) takes the chart from a ChartGetter and the
// valuesFrom objects from a values.Reader. Reconcile installs a release that
// is absent, upgrades one whose chart name or version or values changed or
// whose last action failed, unlocks one a crash left pending, and does
// nothing when in sync; it records Flux's conditions (Ready, Released), a
// history snapshot and failure counters in the Release's status and says
// when to reconcile again. Uninstall removes the release with
// spec.uninstall's settings. The caller owns scheduling; the reconciler owns
// decisions and keeps no state of its own.
package release
