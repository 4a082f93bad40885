package source

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectVersion(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	vs := func(versions ...string) []Candidate {
		out := make([]Candidate, len(versions))
		for i, v := range versions {
			out[i] = Candidate{Version: v, Created: t0.Add(time.Duration(i) * time.Hour)}
		}
		return out
	}
	tests := []struct {
		name       string
		constraint string
		cands      []Candidate
		want       string
		wantErr    error
	}{
		{name: "empty is latest stable", constraint: "", cands: vs("1.0.0", "2.0.0-rc.1", "1.5.0"), want: "1.5.0"},
		{name: "star is latest stable", constraint: "*", cands: vs("1.0.0", "2.0.0-rc.1", "1.5.0"), want: "1.5.0"},
		{name: "only pre-releases: star finds none", constraint: "*", cands: vs("2.0.0-rc.1"), wantErr: ErrNoMatchingVersion},
		{name: "x range excludes pre-release", constraint: "6.x", cands: vs("6.1.0", "6.2.0-beta.1"), want: "6.1.0"},
		{name: "gte excludes pre-release", constraint: ">= 6.0.0", cands: vs("6.1.0", "7.0.0-rc.1"), want: "6.1.0"},
		{name: "gte with -0 includes pre-release", constraint: ">=6.0.0-0", cands: vs("6.1.0", "7.0.0-rc.1"), want: "7.0.0-rc.1"},
		{name: "wildcard patch", constraint: "6.5.*", cands: vs("6.4.9", "6.5.0", "6.5.3", "6.6.0"), want: "6.5.3"},
		{name: "exact string first even if not semver", constraint: "latest", cands: vs("1.0.0", "latest"), want: "latest"},
		{name: "exact string beats higher match", constraint: "1.0", cands: vs("1.0.5", "1.0"), want: "1.0"},
		{name: "exact pre-release", constraint: "2.0.0-rc.1", cands: vs("1.0.0", "2.0.0-rc.1"), want: "2.0.0-rc.1"},
		{name: "v prefix on candidates", constraint: "~1.2", cands: vs("v1.2.0", "v1.2.7", "v1.3.0"), want: "v1.2.7"},
		{name: "v prefix in constraint", constraint: "v1.2.x", cands: vs("1.2.0", "1.2.7", "1.3.0"), want: "1.2.7"},
		{name: "partial versions are no candidates", constraint: ">=1", cands: vs("1.2", "1.10"), wantErr: ErrNoMatchingVersion},
		{name: "partial version by exact string", constraint: "1.2", cands: vs("1.2", "1.10"), want: "1.2"},
		{name: "four numbers are no version", constraint: "*", cands: vs("1.2.3.4", "0.1.0"), want: "0.1.0"},
		// Calendar versions: three dot-separated parts with leading zeros,
		// as current Flux reads them (fluxcd/pkg version v0.8.0+).
		{name: "calendar version by range", constraint: ">=2025.7.0 <2026", cands: vs("v2025.06.30", "v2025.07.03", "v2026.01.02"), want: "v2025.07.03"},
		{name: "calendar version is latest stable", constraint: "*", cands: vs("v2025.07.03", "1.0.0", "v2025.07.10-rc.1"), want: "v2025.07.03"},
		{name: "calendar tilde range", constraint: "~2025.07", cands: vs("2025.07.01", "2025.07.15", "2025.08.01"), want: "2025.07.15"},
		{name: "two-part calendar version is no candidate", constraint: "*", cands: vs("2025.07", "0.1.0"), want: "0.1.0"},
		{name: "non versions skipped", constraint: "*", cands: vs("banana", "0.1.0"), want: "0.1.0"},
		{name: "build metadata: newer created wins", constraint: "*",
			cands: []Candidate{{Version: "1.0.0+b", Created: t0.Add(2 * time.Hour)}, {Version: "1.0.0+a", Created: t0.Add(5 * time.Hour)}}, want: "1.0.0+a"},
		{name: "build metadata: order does not matter", constraint: "1.0.x",
			cands: []Candidate{{Version: "1.0.0+a", Created: t0.Add(5 * time.Hour)}, {Version: "1.0.0+b", Created: t0.Add(2 * time.Hour)}}, want: "1.0.0+a"},
		{name: "no match", constraint: "9.x", cands: vs("1.0.0"), wantErr: ErrNoMatchingVersion},
		{name: "no candidates", constraint: "*", cands: nil, wantErr: ErrNoMatchingVersion},
		{name: "invalid constraint", constraint: ">>1", cands: vs("1.0.0"), wantErr: ErrInvalidConstraint},
		{name: "or constraint", constraint: "^1.0 || ^3.0", cands: vs("1.4.0", "2.0.0", "3.1.0"), want: "3.1.0"},
		// semver v3.4+ (Flux v2.7+; Flux v2.6 pinned v3.3.0, where this
		// picked 1.4.0): one pre-release bound opens its AND group to
		// pre-releases, but not the other groups of an OR.
		{name: "pre-release bound opens its AND group", constraint: ">1.0.0-beta.1 <2", cands: vs("1.4.0", "1.5.0-rc.1"), want: "1.5.0-rc.1"},
		{name: "pre-release bound does not open other OR groups", constraint: ">1.0.0-beta.1 <1.1 || >=3", cands: vs("1.0.5", "3.1.0", "3.2.0-rc.1"), want: "3.1.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			i, err := SelectVersion(tt.constraint, tt.cands)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				assert.Equal(t, -1, i)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, tt.cands[i].Version)
		})
	}
}

func TestTagCandidates(t *testing.T) {
	got := tagCandidates([]string{"latest", "1.0.0", "1.0.0_build.2", "2.0.0-rc.1", "0.9.0", "sha256-abc", "v2025.07.03", "2025.07"})
	var vs []string
	for _, c := range got {
		vs = append(vs, c.Version)
	}
	assert.Equal(t, []string{"v2025.07.03", "2.0.0-rc.1", "1.0.0", "1.0.0+build.2", "0.9.0"}, vs)
	i, err := SelectVersion("1.0.0+build.2", got)
	require.NoError(t, err)
	assert.Equal(t, "1.0.0_build.2", versionToTag(got[i].Version))
}

func FuzzSelectVersion(f *testing.F) {
	f.Add("6.5.*", "6.5.1", "v6.5.2+b")
	f.Add("", "1.0.0-rc.1", "latest")
	f.Add(">=1.0.0-0", "1.0", "x")
	f.Fuzz(func(t *testing.T, constraint, a, b string) {
		cands := []Candidate{{Version: a}, {Version: b}}
		i, err := SelectVersion(constraint, cands)
		if err != nil {
			assert.Equal(t, -1, i)
			return
		}
		require.True(t, i == 0 || i == 1)
	})
}
