package values

import (
	"encoding/json"
	"fmt"
	"strings"
)

// CreditsAnnotation is the annotation on a Release whose spec.values an
// override policy changed: a JSON list of Credit, written by the layer
// that applied the policy (release/fleet on a member's copy) and read
// with CreditsOf, so that provenance names the policy rather than the
// inline values.
const CreditsAnnotation = "fleet.helmfleet.io/values-credits"

// Credit names the source of the inline values under one place.
type Credit struct {
	// Pointer is the place in the inline values, as an RFC 6901 JSON
	// pointer ("/replicaCount", "/image/tag"; "" for all of them).
	Pointer string `json:"pointer"`
	// By describes who set it, e.g. "OverridePolicy apps/prod rule 0
	// overriders.plaintext[0]"; it is what provenance prints.
	By string `json:"by"`
}

// CreditsOf returns the credits of a Release's CreditsAnnotation; none
// when it is absent. The error names the annotation and its value.
func CreditsOf(annotations map[string]string) ([]Credit, error) {
	text, ok := annotations[CreditsAnnotation]
	if !ok {
		return nil, nil
	}
	var out []Credit
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		return nil, fmt.Errorf("annotation %s %q: %w", CreditsAnnotation, text, err)
	}
	for i, c := range out {
		if c.Pointer != "" && !strings.HasPrefix(c.Pointer, "/") || c.By == "" {
			return nil, fmt.Errorf("annotation %s %q: entry %d: a pointer starting with / (or empty) and a non-empty by are required", CreditsAnnotation, text, i)
		}
	}
	return out, nil
}

// credit re-credits the leaves under each credit's pointer that the
// inline values set to the credit's policy, in order, so that a later
// credit for the same place wins and the earlier is listed as overridden.
// A pointer that names nothing credits nothing.
func (t *tracker) credit(values map[string]any, credits []Credit) {
	for _, c := range credits {
		src := Source{Kind: SourcePolicy, Name: c.By}
		t.atPointer(values, c.Pointer, func(p string) {
			r, ok := t.recs[p]
			if !ok || (r.src.Kind != SourceInline && r.src.Kind != SourcePolicy) || r.src == src {
				return
			}
			if r.src.Kind == SourcePolicy {
				r.hist = r.hist.push(r.src)
			}
			r.src = src
			t.recs[p] = r
		})
	}
}
