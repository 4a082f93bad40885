package peertally_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/peertally"
)

// suites are the packages with a peer suite; each checks its run against
// its testdata/peer/tally.json.
var suites = []string{"drift", "policy", "release/reconcile", "source", "values"}

// TestTotal sums the records of every peer suite: issue 27's bar is that
// at least 98.5% of all ported cases agree with the peer and every other
// one is a documented difference (a row of the README's table "How
// helmfleet differs from Flux and Karmada"). Issue 16 had asked for 99%
// before issue 27 decided which differences stay.
func TestTotal(t *testing.T) {
	var total peertally.Tally
	for _, s := range suites {
		r, err := peertally.ReadRecord(filepath.Join("..", "..", filepath.FromSlash(s), "testdata", "peer", "tally.json"))
		require.NoError(t, err, s)
		var sum peertally.Tally
		for _, g := range r.Groups {
			sum.Add(g)
		}
		require.Equal(t, r.Total, sum, "%s: the record's total is the sum of its groups", s)
		t.Logf("%-8s %4d ported, %4d agree, %2d documented differences, %4d skipped (%.1f%% agree)",
			s, r.Total.Ported, r.Total.Agree, r.Total.Difference, r.Total.Skipped, 100*r.Total.Share())
		for _, e := range sortedKeys(r.Engines) {
			tl := r.Engines[e]
			require.Equal(t, tl.Ported, tl.Agree+tl.Difference, "%s on %s: every ported case agrees or is a documented difference", s, e)
			t.Logf("%-8s   on %s: %4d ported, %4d agree, %2d documented differences", s, e, tl.Ported, tl.Agree, tl.Difference)
		}
		total.Add(r.Total)
	}
	t.Logf("%-8s %4d ported, %4d agree, %2d documented differences, %4d skipped (%.2f%% agree)",
		"total", total.Ported, total.Agree, total.Difference, total.Skipped, 100*total.Share())
	require.Positive(t, total.Ported)
	assert.Equal(t, total.Ported, total.Agree+total.Difference, "every ported case agrees or is a documented difference")
	assert.GreaterOrEqual(t, total.Share(), 0.985, "issue 27's bar: %d documented differences in %d ported cases", total.Difference, total.Ported)
}

func sortedKeys(m map[string]peertally.Tally) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
