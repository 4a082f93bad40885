package reconcile_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/peertally"
)

// update is the -update flag of the golden files (peertally.Update reads
// it): TestPeerFlux then rewrites testdata/peer/tally.json.
var update = flag.Bool("update", false, "rewrite testdata/peer/tally.json")

// TestPeerFlux runs every group of the Flux peer suite (testdata/peer/flux)
// and tallies its verdicts: each case agrees with Flux, is a documented
// difference (its `difference` says why and the case checks what helmfleet
// does instead) or is skipped with its reason. The groups that reach Helm
// run once per engine of peerEngines, as subtests named by the engine
// (TestPeerFlux/helmv4/actions.yaml/...); the groups of pure functions
// (names, snapshots, summarize) run once and count for every engine. The
// tally is checked against testdata/peer/tally.json (rewritten by
// -update): its groups are the default engine's, its engines column each
// engine's total; internal/peertally sums the records of every peer suite.
func TestPeerFlux(t *testing.T) {
	pure := []struct {
		file string
		run  func(*testing.T, *peertally.Tally)
	}{
		{"names.yaml", peerFluxReleaseName},
		{"snapshots.yaml", peerFluxSnapshots},
		{"summarize.yaml", peerFluxSummarize},
	}
	engined := []struct {
		file string
		run  func(*testing.T, *peertally.Tally, peerEngine)
	}{
		{"actions.yaml", scenarios("actions.yaml")},
		{"atomic.yaml", scenarios("atomic.yaml")},
		{"diff.yaml", peerFluxDiff},
		{"install.yaml", scenarios("install.yaml")},
		{"postrender.yaml", peerFluxPostRender},
		{"requests.yaml", scenarios("requests.yaml")},
		{"rollback.yaml", scenarios("rollback.yaml")},
		{"scenarios.yaml", scenarios("scenarios.yaml")},
		{"state.yaml", scenarios("state.yaml")},
		{"target.yaml", scenarios("target.yaml")},
		{"test.yaml", scenarios("test.yaml")},
		{"uninstall.yaml", scenarios("uninstall.yaml")},
		{"uninstall_remediation.yaml", scenarios("uninstall_remediation.yaml")},
		{"unlock.yaml", scenarios("unlock.yaml")},
		{"upgrade.yaml", scenarios("upgrade.yaml")},
		{"verify.yaml", scenarios("verify.yaml")},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "peer", "flux", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, len(pure)+len(engined), "every peer file is a group of TestPeerFlux")

	engines := map[string]map[string]*peertally.Tally{}
	for _, e := range peerEngines {
		engines[e.Name] = map[string]*peertally.Tally{}
	}
	for _, g := range pure {
		tl := &peertally.Tally{}
		t.Run(g.file, func(t *testing.T) { g.run(t, tl) })
		for _, e := range peerEngines {
			engines[e.Name][g.file] = tl
		}
	}
	for _, e := range peerEngines {
		t.Run(e.Name, func(t *testing.T) {
			for _, g := range engined {
				tl := &peertally.Tally{}
				engines[e.Name][g.file] = tl
				t.Run(g.file, func(t *testing.T) { g.run(t, tl, e) })
			}
		})
	}
	for _, e := range peerEngines {
		keys, total := peertally.Sum(engines[e.Name])
		for _, k := range keys {
			t.Logf("%s %s: %s", e.Name, k, engines[e.Name][k])
		}
		t.Logf("%s total: %s", e.Name, total)
	}
	// Every ported case agrees with Flux or is a documented difference
	// (the package doc says why for each), on every engine. Issue 16's
	// 99% bar is over all peer suites (internal/peertally TestTotal).
	peertally.CheckEngines(t, engines, peerEngines[0].Name)
}

// scenarios runs one scenario file as a group.
func scenarios(file string) func(*testing.T, *peertally.Tally, peerEngine) {
	return func(t *testing.T, tl *peertally.Tally, eng peerEngine) { runScenarios(t, tl, file, eng) }
}

// countCase records one ported case: a documented difference, or one that
// agreed with the peer when passed.
func countCase(tl *peertally.Tally, difference, passed bool) {
	tl.Count(false, difference, passed)
}
