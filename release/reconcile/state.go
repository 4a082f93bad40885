package reconcile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/values"
)

// State is the state of a Helm release compared with its Release, as
// Flux's helm-controller determines it; it decides the next action.
type State string

const (
	// StateAbsent: no release in storage, or an uninstalled one → install.
	StateAbsent State = "Absent"
	// StateLocked: the latest release is pending-* → unlock, then go on.
	StateLocked State = "Locked"
	// StateUnmanaged: a release exists that the status did not record (or
	// that changed since) → adopt it with an upgrade.
	StateUnmanaged State = "Unmanaged"
	// StateOutOfSync: chart, values, post-renderers or common metadata
	// changed → upgrade.
	StateOutOfSync State = "OutOfSync"
	// StateUntested: tests are enabled and have not run for this
	// revision → test.
	StateUntested State = "Untested"
	// StateFailed: the last action or test failed → remediate.
	StateFailed State = "Failed"
	// StateUninstalling: an uninstall this Release ran did not complete
	// (a pre-delete hook or the deletion of its objects failed) and left
	// the release 'uninstalling', which Helm neither installs nor
	// upgrades over → stalled when the remediation's retries are used
	// up, else uninstall again to complete it.
	StateUninstalling State = "Uninstalling"
	// StateDrifted: in sync, but live objects differ from the manifest →
	// correct (mode enabled) or report (warn).
	StateDrifted State = "Drifted"
	// StateInSync: nothing to do.
	StateInSync State = "InSync"
)

// observation is what one state determination saw.
type observation struct {
	state  State
	reason string
	last   *helmrelease.Release
	drift  *drift.Report
}

// releaseDigest identifies the content of a Helm release record: what a
// Status snapshot records so that a later reconcile can tell whether
// someone else replaced the release since. It covers what an action
// writes once (name, revision, chart, values, manifest, deploy time) and
// leaves out what Helm itself changes over a revision's life (its status
// when superseded, the last run of its hooks), so a rollback target stays
// verifiable after it was superseded.
func releaseDigest(h *helmrelease.Release) string {
	sum := sha256.New()
	w := func(s string) { fmt.Fprintf(sum, "%d:%s;", len(s), s) }
	w(h.Name)
	w(h.Namespace)
	w(fmt.Sprint(h.Version))
	if h.Info != nil {
		w(h.Info.FirstDeployed.UTC().String())
	}
	if h.Chart != nil && h.Chart.Metadata != nil {
		w(h.Chart.Metadata.Name)
		w(h.Chart.Metadata.Version)
	}
	w(values.Digest(h.Config))
	w(h.Manifest)
	return "sha256:" + hex.EncodeToString(sum.Sum(nil))
}

// verifySnapshot reports why cur does not describe rls, or "" if it does.
// The digest is checked only for a snapshot of helmfleet's format
// (SnapshotAPIVersion): one written in another format (Flux's apiVersion
// v2 snapshots of a HelmRelease moved to helmfleet, Flux's legacy ones
// with no apiVersion) holds a digest computed another way, so, as Flux
// skips the digests of its legacy snapshots (VerifyReleaseObject), it is
// matched by name, namespace and revision alone and the next action
// records a snapshot of the current format.
func verifySnapshot(cur *release.Snapshot, rls *helmrelease.Release) string {
	switch {
	case cur.Name != rls.Name || cur.Namespace != rls.Namespace || cur.Version != rls.Version:
		return fmt.Sprintf("release %s/%s.v%d in storage was not made by this Release (last observed %s)", rls.Namespace, rls.Name, rls.Version, cur.FullReleaseName())
	case cur.APIVersion != release.SnapshotAPIVersion:
		return ""
	case cur.Digest != releaseDigest(rls):
		return fmt.Sprintf("release %s/%s.v%d in storage changed since it was observed", rls.Namespace, rls.Name, rls.Version)
	}
	return ""
}

// errStorage wraps a failure to read Helm's storage.
func errStorage(rel *release.Release, cluster string, err error) error {
	return fmt.Errorf("release %s on cluster %s: read helm storage: %w", refOf(rel), cluster, err)
}

// lastRelease returns the latest record of name, nil if none.
func lastRelease(h interface {
	Last(string) (*helmrelease.Release, error)
}, name string) (*helmrelease.Release, error) {
	rls, err := h.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	return rls, err
}
