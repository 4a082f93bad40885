package peertally

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Check ends a peer suite's test over its groups: it requires ported
// cases, runs the suite's own bars over the total (a share to meet, say),
// asserts that every ported case agrees or is a documented difference and
// then, unless the run is Partial or has failed, compares the suite's
// Record with testdata/peer/tally.json (which -update rewrites instead).
func Check(t *testing.T, groups map[string]*Tally, bars ...func(total Tally)) {
	t.Helper()
	checkRecord(t, NewRecord(groups), bars)
}

// CheckEngines is Check for a suite that runs its cases on several Helm
// engines (engines: each engine's groups by engine name; def: the default
// engine, whose groups the Record keeps): every engine's run must meet
// the bars and have every ported case agree or be a documented
// difference, and the Record holds each engine's total.
func CheckEngines(t *testing.T, engines map[string]map[string]*Tally, def string, bars ...func(total Tally)) {
	t.Helper()
	require.Contains(t, engines, def, "the default engine runs")
	checkRecord(t, NewEngineRecord(engines, def), bars)
}

func checkRecord(t *testing.T, r Record, bars []func(total Tally)) {
	t.Helper()
	totals := map[string]Tally{"": r.Total}
	for name, tl := range r.Engines {
		totals[name] = tl
	}
	for name, total := range totals {
		if total.Ported == 0 && Partial() {
			continue // a -run pattern left this engine's cases out
		}
		require.Positive(t, total.Ported, "engine %q", name)
		for _, bar := range bars {
			bar(total)
		}
		assert.Equal(t, total.Ported, total.Agree+total.Difference, "every ported case agrees or is a documented difference (engine %q)", name)
	}
	if Partial() || t.Failed() {
		return
	}
	// The record internal/peertally sums over every peer suite.
	assert.NoError(t, GoldenRecord(filepath.Join("testdata", "peer", "tally.json"), r, Update()))
}
