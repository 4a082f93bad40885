package helmv4_test

import (
	"testing"

	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/releasetest"
)

// The Helm checks of the backend conformance suite pass with the Helm v4
// engine on release/memory as they do with Helm v3 (release/memory's
// TestConformance): install, upgrade, rollback, history, uninstall, CRDs
// in crds/ seen by the first install, and lookup. The real API server's
// run, both engines and Helm v4's native kube client, is
// internal/integration's TestConformance.
func TestConformance(t *testing.T) {
	releasetest.TestCluster(t, memory.New("conformance"), releasetest.Options{Engine: helmv4.Engine{}})
}
