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
// does instead) or is skipped with its reason. The tally is checked
// against testdata/peer/tally.json (rewritten by -update), the record that
// internal/peertally sums over every peer suite.
func TestPeerFlux(t *testing.T) {
	groups := []struct {
		file string
		run  func(*testing.T, *peertally.Tally)
	}{
		{"actions.yaml", scenarios("actions.yaml")},
		{"atomic.yaml", scenarios("atomic.yaml")},
		{"diff.yaml", peerFluxDiff},
		{"install.yaml", scenarios("install.yaml")},
		{"names.yaml", peerFluxReleaseName},
		{"postrender.yaml", peerFluxPostRender},
		{"requests.yaml", scenarios("requests.yaml")},
		{"rollback.yaml", scenarios("rollback.yaml")},
		{"scenarios.yaml", scenarios("scenarios.yaml")},
		{"snapshots.yaml", peerFluxSnapshots},
		{"state.yaml", scenarios("state.yaml")},
		{"summarize.yaml", peerFluxSummarize},
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
	require.Len(t, files, len(groups), "every peer file is a group of TestPeerFlux")

	tallies := map[string]*peertally.Tally{}
	for _, g := range groups {
		tl := &peertally.Tally{}
		tallies[g.file] = tl
		t.Run(g.file, func(t *testing.T) { g.run(t, tl) })
	}
	keys, total := peertally.Sum(tallies)
	for _, k := range keys {
		t.Logf("%s: %s", k, tallies[k])
	}
	t.Logf("total: %s", total)
	// Every ported case agrees with Flux or is a documented difference
	// (the package doc says why for each). Issue 16's 99% bar is over all
	// peer suites (internal/peertally TestTotal).
	peertally.Check(t, tallies)
}

// scenarios runs one scenario file as a group.
func scenarios(file string) func(*testing.T, *peertally.Tally) {
	return func(t *testing.T, tl *peertally.Tally) { runScenarios(t, tl, file) }
}

// countCase records one ported case: a documented difference, or one that
// agreed with the peer when passed.
func countCase(tl *peertally.Tally, difference, passed bool) {
	tl.Count(false, difference, passed)
}
