package peertally

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Tally is the count of one group of peer cases, or of several.
type Tally struct {
	// Ported counts the cases that run: Agree + Difference + failures.
	Ported int `json:"ported"`
	// Agree counts the ported cases that passed with the peer's answer.
	Agree int `json:"agree"`
	// Difference counts the documented differences.
	Difference int `json:"difference"`
	// Skipped counts the cases not ported, with a reason.
	Skipped int `json:"skipped"`
}

// Share is the fraction of the ported cases that agree with the peer
// (0 when none is ported).
func (tl Tally) Share() float64 {
	if tl.Ported == 0 {
		return 0
	}
	return float64(tl.Agree) / float64(tl.Ported)
}

// Count records one case: skipped when skip, a documented difference when
// difference, otherwise a ported case that agreed when passed.
func (tl *Tally) Count(skip, difference, passed bool) {
	switch {
	case skip:
		tl.Skipped++
	case difference:
		tl.Ported++
		tl.Difference++
	default:
		tl.Ported++
		if passed {
			tl.Agree++
		}
	}
}

// Add adds o to tl.
func (tl *Tally) Add(o Tally) {
	tl.Ported += o.Ported
	tl.Agree += o.Agree
	tl.Difference += o.Difference
	tl.Skipped += o.Skipped
}

// Sum returns the group names sorted and the total of their tallies.
func Sum(groups map[string]*Tally) ([]string, Tally) {
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var total Tally
	for _, k := range keys {
		total.Add(*groups[k])
	}
	return keys, total
}

// String says the tally in one line, as the suites log it.
func (tl Tally) String() string {
	return fmt.Sprintf("%d ported (%d agree, %d documented differences), %d skipped; %.1f%% agree",
		tl.Ported, tl.Agree, tl.Difference, tl.Skipped, 100*tl.Share())
}

// Record is a suite's tally as committed beside its cases
// (testdata/peer/tally.json): the tally of each group and their total.
// The suite checks its run against it, so that a test summing every
// suite's Record (internal/peertally) sums what the suites really gave.
type Record struct {
	Groups map[string]Tally `json:"groups"`
	Total  Tally            `json:"total"`
	// Engines is, for a suite that runs its cases on several Helm
	// engines, the total of each engine's run by engine name; Groups and
	// Total are then the default engine's.
	Engines map[string]Tally `json:"engines,omitempty"`
}

// NewRecord returns the Record of groups.
func NewRecord(groups map[string]*Tally) Record {
	_, total := Sum(groups)
	r := Record{Groups: make(map[string]Tally, len(groups)), Total: total}
	for k, tl := range groups {
		r.Groups[k] = *tl
	}
	return r
}

// ReadRecord reads the Record committed at path.
func ReadRecord(path string) (Record, error) {
	var r Record
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("peer tally %s: %w", path, err)
	}
	return r, nil
}

// Golden compares the Record of groups with the one committed at path
// and returns an error naming every group whose tally differs; with
// update it writes the Record to path instead.
func Golden(path string, groups map[string]*Tally, update bool) error {
	return GoldenRecord(path, NewRecord(groups), update)
}

// NewEngineRecord returns the Record of a suite run on several Helm
// engines: engines maps an engine's name to its groups' tallies, and def
// names the default engine, whose groups are the Record's.
func NewEngineRecord(engines map[string]map[string]*Tally, def string) Record {
	r := NewRecord(engines[def])
	r.Engines = make(map[string]Tally, len(engines))
	for name, groups := range engines {
		_, r.Engines[name] = Sum(groups)
	}
	return r
}

// GoldenRecord compares got with the Record committed at path and
// returns an error naming every group and engine whose tally differs;
// with update it writes got to path instead.
func GoldenRecord(path string, got Record, update bool) error {
	if update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(path, append(b, '\n'), 0o644)
	}
	want, err := ReadRecord(path)
	if err != nil {
		return fmt.Errorf("%w (run the suite with -update to write it)", err)
	}
	diffs := diffTallies("", got.Groups, want.Groups)
	if got.Total != want.Total {
		diffs = append(diffs, fmt.Sprintf("total: ran %+v, recorded %+v", got.Total, want.Total))
	}
	diffs = append(diffs, diffTallies("engine ", got.Engines, want.Engines)...)
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("peer tally %s differs from the run (run with -update if the cases changed):\n%s", path, joinLines(diffs))
	}
	return nil
}

// diffTallies names, each after prefix, every key whose tally in got
// differs from want's or that only one of them has.
func diffTallies(prefix string, got, want map[string]Tally) []string {
	var diffs []string
	for k, tl := range got {
		if w, ok := want[k]; !ok || w != tl {
			diffs = append(diffs, fmt.Sprintf("%s%s: ran %+v, recorded %+v", prefix, k, tl, want[k]))
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s%s: recorded %+v, not run", prefix, k, w))
		}
	}
	return diffs
}

func joinLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString("  ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// Partial reports whether the test binary runs with a -run pattern that
// selects subtests ("Suite/case") or with any -skip pattern (one engine's
// pass left out, say): such a run counts only part of a suite, so its
// tally is not compared with the Record.
func Partial() bool {
	if f := flag.Lookup("test.skip"); f != nil && f.Value.String() != "" {
		return true
	}
	f := flag.Lookup("test.run")
	return f != nil && strings.Contains(f.Value.String(), "/")
}

// Update reports whether the test binary runs with -update, the flag the
// packages' golden tests define: the suites then rewrite their Record.
func Update() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}
