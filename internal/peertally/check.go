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
	_, total := Sum(groups)
	require.Positive(t, total.Ported)
	for _, bar := range bars {
		bar(total)
	}
	assert.Equal(t, total.Ported, total.Agree+total.Difference, "every ported case agrees or is a documented difference")
	if Partial() || t.Failed() {
		return
	}
	// The record internal/peertally sums over every peer suite.
	assert.NoError(t, Golden(filepath.Join("testdata", "peer", "tally.json"), groups, Update()))
}
