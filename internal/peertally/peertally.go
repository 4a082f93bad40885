package peertally

import "sort"

// Tally is the count of one group of peer cases, or of several.
type Tally struct {
	// Ported counts the cases that run: Agree + Difference + failures.
	Ported int
	// Agree counts the ported cases that passed with the peer's answer.
	Agree int
	// Difference counts the documented differences.
	Difference int
	// Skipped counts the cases not ported, with a reason.
	Skipped int
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
