package source

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
)

// Candidate is one version of a chart that a repository or registry offers.
type Candidate struct {
	// Version is the version string exactly as the index or tag spells it.
	Version string
	// Created is when the version was published; it breaks ties between
	// versions equal but for build metadata. Zero when unknown (OCI tags).
	Created time.Time
}

// SelectVersion picks the candidate that constraint selects, the way Flux's
// source-controller and Helm do, and returns its index in candidates:
//
//   - a candidate whose Version equals constraint as a string wins first
//     (so "1.0" or "latest" can name a version that is not valid semver);
//   - "" and "*" select the highest stable version (no pre-releases);
//   - anything else is a Masterminds/semver v3 constraint: "6.x" and
//     ">= 6.0.0" exclude pre-releases, ">=6.0.0-0" includes them;
//   - candidates are versions as Flux reads them: three dot-separated
//     parts with an optional "v" prefix, leading zeros allowed (calendar
//     versions such as "v2025.07.03"); others ("1.2", "latest") are
//     skipped, so only an exact string match selects them;
//   - among versions equal but for build metadata, the newer Created wins.
//
// SelectVersion is pure: no I/O, no clock. It returns an error wrapping
// ErrInvalidConstraint when constraint does not parse, and ErrNoMatchingVersion
// when nothing matches.
func SelectVersion(constraint string, candidates []Candidate) (int, error) {
	parsed := make([]*semver.Version, len(candidates))
	for i, c := range candidates {
		if v, err := parseVersion(c.Version); err == nil {
			parsed[i] = v
		}
	}
	return selectParsed(constraint, candidates, parsed)
}

// parseVersion reads a candidate's version the way current Flux does
// (fluxcd/pkg/version.ParseVersion since v0.8.0): the string must hold
// three dot-separated parts, and is then read by Masterminds' non-strict
// parser. So calendar versions with leading zeros ("v2025.07.03") and an
// optional "v" are versions, while "1.2" (two parts) or "1.2.3.4" (which
// the parser refuses) are not: only an exact string match selects them.
func parseVersion(s string) (*semver.Version, error) {
	if strings.Count(s, ".") < 2 {
		return nil, fmt.Errorf("%w: %q has fewer than three dot-separated parts", semver.ErrInvalidSemVer, s)
	}
	return semver.NewVersion(s)
}

// selectParsed is SelectVersion over versions parsed beforehand (nil where a
// candidate is not a version), so cached chart entries skip the parsing.
func selectParsed(constraint string, candidates []Candidate, parsed []*semver.Version) (int, error) {
	if len(candidates) == 0 {
		return -1, fmt.Errorf("%w: %q: the chart has no versions", ErrNoMatchingVersion, constraint)
	}
	if constraint != "" {
		best := -1
		for i, c := range candidates {
			if c.Version == constraint && (best < 0 || c.Created.After(candidates[best].Created)) {
				best = i
			}
		}
		if best >= 0 {
			return best, nil
		}
	}
	var check *semver.Constraints
	if constraint != "" && constraint != "*" {
		c, err := semver.NewConstraint(constraint)
		if err != nil {
			return -1, fmt.Errorf("%w: %q: %v", ErrInvalidConstraint, constraint, err)
		}
		check = c
	}
	best := -1
	for i, v := range parsed {
		if v == nil {
			continue
		}
		if check == nil {
			if v.Prerelease() != "" {
				continue
			}
		} else if !check.Check(v) {
			continue
		}
		if best < 0 || newer(v, candidates[i].Created, parsed[best], candidates[best].Created) {
			best = i
		}
	}
	if best < 0 {
		return -1, fmt.Errorf("%w: %q", ErrNoMatchingVersion, displayConstraint(constraint))
	}
	return best, nil
}

// newer reports whether version a (published at ca) sorts above b: a higher
// semantic version, or an equal one (build metadata differs) published later.
func newer(a *semver.Version, ca time.Time, b *semver.Version, cb time.Time) bool {
	if c := a.Compare(b); c != 0 {
		return c > 0
	}
	return ca.After(cb)
}

// displayConstraint spells the empty constraint as the "*" it means.
func displayConstraint(c string) string {
	if c == "" {
		return "*"
	}
	return c
}

// tagCandidates returns the tags that are semantic versions once "_" is read
// as "+" (OCI tags cannot hold "+"), as candidates, highest first.
func tagCandidates(tags []string) []Candidate {
	type tv struct {
		tag string
		v   *semver.Version
	}
	var vs []tv
	for _, t := range tags {
		v, err := parseVersion(tagToVersion(t))
		if err != nil {
			continue
		}
		vs = append(vs, tv{t, v})
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].v.GreaterThan(vs[j].v) })
	out := make([]Candidate, len(vs))
	for i, x := range vs {
		out[i] = Candidate{Version: tagToVersion(x.tag)}
	}
	return out
}

// tagToVersion reads an OCI tag as a version: tags cannot hold "+", so Helm
// pushes build metadata with "_" instead.
func tagToVersion(tag string) string { return strings.ReplaceAll(tag, "_", "+") }

// versionToTag is the inverse of tagToVersion.
func versionToTag(v string) string { return strings.ReplaceAll(v, "+", "_") }
