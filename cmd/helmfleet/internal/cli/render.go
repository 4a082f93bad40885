package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Output formats of -o.
const (
	FormatTable    = "table"
	FormatDiff     = "diff"
	FormatJSON     = "json"
	FormatMarkdown = "markdown"
)

// foldLines is the length past which markdown folds a diff in <details>.
const foldLines = 20

// checkFormat refuses an unknown -o.
func checkFormat(f string) error {
	switch f {
	case FormatTable, FormatDiff, FormatJSON, FormatMarkdown:
		return nil
	}
	return fmt.Errorf("-o %s: unknown output format (table, diff, json or markdown)", f)
}

// Render writes r in format.
func (r *Report) Render(w io.Writer, format string) error {
	switch format {
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case FormatDiff:
		return r.renderDiff(w)
	case FormatMarkdown:
		return r.renderMarkdown(w)
	default:
		return r.renderTable(w)
	}
}

func (r *Report) renderTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tUNIT\tSTATE\tACTION\tCHART\tOBJECTS\tERROR")
	for _, m := range r.Members {
		if len(m.Units) == 0 {
			fmt.Fprintf(tw, "%s\t(no change)\t\t\t\t\t\n", m.Name)
		}
		for _, u := range m.Units {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, u.Unit, u.State, u.Action, dash(u.Chart),
				dash(strings.Join(u.Objects, ", ")), oneLine(u.Error))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	return nil
}

func (r *Report) renderDiff(w io.Writer) error {
	for _, m := range r.Members {
		for _, u := range m.Units {
			if !u.Changed() {
				continue
			}
			fmt.Fprintf(w, "### %s %s (%s)\n", m.Name, u.Unit, u.Action)
			if u.Error != "" {
				fmt.Fprintf(w, "error: %s\n", u.Error)
			}
			io.WriteString(w, u.Diff)
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(w, "error: %s\n", e)
	}
	return nil
}

func (r *Report) renderMarkdown(w io.Writer) error {
	title := "helmfleet plan"
	if r.Base != "" {
		title = "helmfleet diff"
	}
	fmt.Fprintf(w, "## %s\n\n", title)
	for _, e := range r.Errors {
		fmt.Fprintf(w, "> **error:** %s\n\n", oneLine(e))
	}
	for _, m := range r.Members {
		n := 0
		for _, u := range m.Units {
			if u.Changed() {
				n++
			}
		}
		fmt.Fprintf(w, "### %s: %s\n\n", m.Name, plural(n, "unit changes", "units change"))
		if len(m.Units) == 0 {
			continue
		}
		fmt.Fprintln(w, "| Unit | Action | Chart | Objects |")
		fmt.Fprintln(w, "|---|---|---|---|")
		for _, u := range m.Units {
			objs := strings.Join(u.Objects, "<br>")
			if u.Error != "" {
				objs = "**error:** " + oneLine(u.Error)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(u.Unit), u.Action, cell(dash(u.Chart)), cell(dash(objs)))
		}
		fmt.Fprintln(w)
		for _, u := range m.Units {
			if u.Diff == "" {
				continue
			}
			fence := "```diff\n" + strings.ReplaceAll(u.Diff, "```", "` ` `") + "```\n"
			if strings.Count(u.Diff, "\n") > foldLines {
				fmt.Fprintf(w, "<details><summary>%s (%d lines)</summary>\n\n%s\n</details>\n\n", u.Unit, strings.Count(u.Diff, "\n"), fence)
			} else {
				fmt.Fprintf(w, "%s\n%s\n", u.Unit, fence)
			}
		}
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", "\\|") }
