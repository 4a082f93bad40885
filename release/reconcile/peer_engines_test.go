package reconcile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// peerEngine is a Helm engine the Flux peer suites run their cases on
// (issue 33: both engines pass the peer suites). Each case builds its
// reconciler with the engine; the cluster is release/memory's, whose kube
// client Helm v4 reaches through release/helmv4's adapter (the native
// client needs a real apiserver).
type peerEngine struct {
	// Name names the engine's subtests and its column of the tally.
	Name   string
	Engine reconcile.Engine
}

// IsV4 reports whether the engine is Helm v4: a case whose Flux 2.8
// semantics differ by design (server-side apply on install, kstatus
// waits) asserts the v4 behaviour then.
func (e peerEngine) IsV4() bool { return e.Engine.HelmMajor() == 4 }

// peerEngines are the engines the peer suites run on, the default (Helm
// v3) first: its tally is the suite's record of groups.
var peerEngines = []peerEngine{
	{Name: "helmv3", Engine: reconcile.HelmV3{}},
	{Name: "helmv4", Engine: helmv4.Engine{}},
}

// checkApplyMethod checks that the engine wrote Helm's records of the
// scenario's release, by the apply method they record. Helm v3 records
// none. Helm v4 records one on every release it writes (Release.ApplyMethod,
// kept in helmv4.ApplyMethodLabel), and on install it is server-side:
// Flux 2.8 installs with server-side apply unless
// spec.install.serverSideApply says otherwise (helm-controller v1.6.3
// internal/action/install.go newInstall: "install.ServerSideApply = true"
// unless UseHelm3Defaults; api/v2 InstallSpec.ServerSideApply "Defaults to
// true"), where Helm v3 applies client-side. Records a case's own "helm"
// step wrote (Helm v3's actions, someone else's) carry none on either
// engine.
func checkApplyMethod(t *testing.T, c *memory.Cluster, eng peerEngine) {
	t.Helper()
	hist, err := c.Storage("apps").History("podinfo")
	if err != nil || len(hist) == 0 {
		return
	}
	labelled := 0
	for _, h := range hist {
		method, ok := h.Labels[helmv4.ApplyMethodLabel]
		if !eng.IsV4() {
			assert.False(t, ok, "Helm v3 records no apply method (v%d: %q)", h.Version, method)
			continue
		}
		if !ok {
			continue
		}
		labelled++
		if h.Version == 1 {
			assert.Equal(t, "ssa", method, "Helm v4 installs server-side by default, as Flux 2.8 (v1)")
		}
	}
	if eng.IsV4() {
		assert.Positive(t, labelled, "the Helm v4 engine wrote the release's records")
	}
}
