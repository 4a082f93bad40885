package peertally_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/peertally"
)

func TestGolden(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally.json")
	groups := map[string]*peertally.Tally{}
	a, b := &peertally.Tally{}, &peertally.Tally{}
	a.Count(false, false, true)
	a.Count(false, true, false)
	b.Count(true, false, false)
	groups["a"], groups["b"] = a, b

	require.Error(t, peertally.Golden(path, groups, false), "no record yet")
	require.NoError(t, peertally.Golden(path, groups, true))
	require.NoError(t, peertally.Golden(path, groups, false))
	r, err := peertally.ReadRecord(path)
	require.NoError(t, err)
	assert.Equal(t, peertally.Tally{Ported: 2, Agree: 1, Difference: 1, Skipped: 1}, r.Total)
	assert.InDelta(t, 0.5, r.Total.Share(), 1e-9)

	// A case that no longer agrees, and a group that no longer runs, are
	// named.
	a.Count(false, false, false)
	delete(groups, "b")
	err = peertally.Golden(path, groups, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a: ran")
	assert.Contains(t, err.Error(), "b: recorded")

	require.NoError(t, os.WriteFile(path, []byte(`{"groups":{},"totl":{}}`), 0o644))
	_, err = peertally.ReadRecord(path)
	assert.Error(t, err, "unknown fields are refused")
}

// TestGoldenEngines: a suite run on several Helm engines records each
// engine's total, and an engine whose run no longer agrees with its
// record, or no longer runs, is named even when the default engine's
// groups are unchanged.
func TestGoldenEngines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tally.json")
	v3, v4 := &peertally.Tally{}, &peertally.Tally{}
	v3.Count(false, false, true)
	v4.Count(false, false, true)
	engines := map[string]map[string]*peertally.Tally{"v3": {"a": v3}, "v4": {"a": v4}}
	require.NoError(t, peertally.GoldenRecord(path, peertally.NewEngineRecord(engines, "v3"), true))
	r, err := peertally.ReadRecord(path)
	require.NoError(t, err)
	assert.Equal(t, map[string]peertally.Tally{"v3": *v3, "v4": *v4}, r.Engines)
	assert.Equal(t, *v3, r.Total, "the default engine's groups are the record's")

	v4.Count(false, false, false)
	err = peertally.GoldenRecord(path, peertally.NewEngineRecord(engines, "v3"), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "engine v4: ran")

	delete(engines, "v4")
	err = peertally.GoldenRecord(path, peertally.NewEngineRecord(engines, "v3"), false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "engine v4: recorded")
}

// TestPartialSkip: a run with a -skip pattern counts only part of a suite
// (go test -skip 'TestPeerFlux/helmv4' leaves the Helm v4 pass out), so
// its tally is not compared with the Record.
func TestPartialSkip(t *testing.T) {
	f := flag.Lookup("test.skip")
	require.NotNil(t, f, "the testing package's -skip flag")
	old := f.Value.String()
	t.Cleanup(func() { require.NoError(t, flag.Set("test.skip", old)) })
	require.NoError(t, flag.Set("test.skip", "TestPeerFlux/helmv4"))
	assert.True(t, peertally.Partial())
}
