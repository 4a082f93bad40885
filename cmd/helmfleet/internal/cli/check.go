package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/helmfleet/helmfleet/release/fleet"
)

// Problem is one thing `helmfleet test` fails on.
type Problem struct {
	// Member is the member's name; empty for a problem of the whole
	// fleet (placement).
	Member string `json:"member,omitempty"`
	// Unit is "HelmRelease namespace/name" or "Kustomization
	// namespace/name", when known.
	Unit string `json:"unit,omitempty"`
	// File is the repository directory the unit is built from (the
	// Kustomization's spec.path, for a release the path of the
	// Kustomization that produces it).
	File string `json:"file,omitempty"`
	// Message is the engine's error.
	Message string `json:"message"`
}

// problemsOf returns the problems of a plan made after an in-memory
// apply, with the apply's error: every error, and every release not
// rendered (still deferred after its dependencies ran).
func problemsOf(p *fleet.Plan, applyErr error) []Problem {
	files := map[fleet.Key]string{}
	for _, kp := range p.Kustomizations {
		files[kp.Key()] = kp.Kustomization.Spec.Path
		for _, k := range kp.Produced {
			files[k] = kp.Kustomization.Spec.Path
		}
	}
	unitOf := func(k fleet.Key) string {
		if k.IsKustomization() {
			return "Kustomization " + k.Namespace + "/" + k.Name
		}
		return "HelmRelease " + k.Namespace + "/" + k.Name
	}
	var out []Problem
	seen := map[string]bool{}
	add := func(pr Problem) {
		key := pr.Member + "\x00" + pr.Unit + "\x00" + pr.Message
		if !seen[key] {
			seen[key] = true
			out = append(out, pr)
		}
	}
	for _, e := range p.Errors {
		var ie *fleet.ItemError
		var me *fleet.MemberError
		switch {
		case errors.As(e, &ie):
			add(Problem{Member: ie.Key.Cluster, Unit: unitOf(ie.Key), File: files[ie.Key], Message: e.Error()})
		case errors.As(e, &me):
			add(Problem{Member: me.Key.Cluster, Unit: unitOf(me.Key), File: files[me.Key], Message: e.Error()})
		default:
			add(Problem{Message: e.Error()})
		}
	}
	for _, it := range p.Items {
		if it.State == fleet.StateDeferred && it.Err == nil {
			k := fleet.Key{Cluster: it.Cluster, Namespace: it.Release.Namespace, Name: it.Release.Name}
			add(Problem{Member: it.Cluster, Unit: unitOf(k), File: files[k], Message: "not rendered: " + it.Reason})
		}
	}
	if applyErr != nil && len(out) == 0 {
		add(Problem{Message: applyErr.Error()})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Member != out[j].Member {
			return out[i].Member < out[j].Member
		}
		return out[i].Unit < out[j].Unit
	})
	return out
}

// writeProblems writes the result of `helmfleet test`.
func writeProblems(w io.Writer, format string, units int, probs []Problem) error {
	if format == FormatJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Units    int       `json:"units"`
			Problems []Problem `json:"problems"`
		}{units, append([]Problem{}, probs...)})
	}
	if len(probs) == 0 {
		_, err := fmt.Fprintf(w, "ok: %d units rendered and placed on every member\n", units)
		return err
	}
	if format == FormatMarkdown {
		fmt.Fprintf(w, "## helmfleet test: %d problems\n\n| Member | Unit | File | Problem |\n|---|---|---|---|\n", len(probs))
		for _, p := range probs {
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(dash(p.Member)), cell(dash(p.Unit)), cell(dash(p.File)), cell(p.Message))
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tUNIT\tFILE\tPROBLEM")
	for _, p := range probs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", dash(p.Member), dash(p.Unit), dash(p.File), strings.ReplaceAll(p.Message, "\n", " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "FAIL: %s\n", plural(len(probs), "problem", "problems"))
	return err
}
