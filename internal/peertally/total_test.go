package peertally_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/peertally"
)

// suites are the packages with a peer suite; each checks its run against
// its testdata/peer/tally.json.
var suites = []string{"drift", "policy", "release/reconcile", "source", "values"}

// TestTotal sums the records of every peer suite: issue 16's bar is that
// at least 99% of all ported cases agree with the peer and every other
// one is a documented difference.
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
		total.Add(r.Total)
	}
	t.Logf("%-8s %4d ported, %4d agree, %2d documented differences, %4d skipped (%.2f%% agree)",
		"total", total.Ported, total.Agree, total.Difference, total.Skipped, 100*total.Share())
	require.Positive(t, total.Ported)
	assert.Equal(t, total.Ported, total.Agree+total.Difference, "every ported case agrees or is a documented difference")
	// The bar is not met while the documented differences are more than
	// 1% of the ported cases: the share is reported, not asserted, until
	// it is (asserting a lower bar would fake the issue's).
	if total.Share() < 0.99 {
		t.Logf("below issue 16's bar: %.2f%% of ported peer cases agree, 99%% wanted (%d documented differences in %d)",
			100*total.Share(), total.Difference, total.Ported)
	}
}
