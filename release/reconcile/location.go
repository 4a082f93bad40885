package reconcile

import (
	"strconv"
	"strings"
)

// templateLocation is where in a chart a Helm error says it arose: a
// template file and, when the error names one, its line.
type templateLocation struct {
	File string
	Line int
}

// locationMarkers are the prefixes after which Helm and text/template
// name a template file, with what ends the location each introduces:
//
//	template: NAME:LINE:COL: ...            (text/template)
//	execution error at (NAME:LINE:COL): ... (Helm's fail, required)
//	parse error at (NAME:LINE): ...         (Helm's template parse)
//	YAML parse error on NAME: ...           (Helm's manifest split)
var locationMarkers = []struct {
	prefix, end string
	lines       bool
}{
	{prefix: "template: ", end: ": ", lines: true},
	{prefix: "execution error at (", end: ")", lines: true},
	{prefix: "parse error at (", end: ")", lines: true},
	{prefix: "YAML parse error on ", end: ": "},
}

// parseTemplateLocation reads the location of the first marker in msg,
// an error message of Helm or text/template. Only the location is read:
// what follows it is never looked at, and the file is returned only
// when known says it is one of the chart's files (the message may hold
// Secret text, which must not pass for a file name). ok is false when
// msg names no known file.
func parseTemplateLocation(msg string, known func(string) bool) (loc templateLocation, ok bool) {
	at, which := -1, -1
	for i, m := range locationMarkers {
		if j := strings.Index(msg, m.prefix); j >= 0 && (at < 0 || j < at) {
			at, which = j, i
		}
	}
	if at < 0 {
		return templateLocation{}, false
	}
	m := locationMarkers[which]
	rest := msg[at+len(m.prefix):]
	end := strings.Index(rest, m.end)
	if end <= 0 {
		return templateLocation{}, false
	}
	loc.File = rest[:end]
	if m.lines {
		// NAME:LINE or NAME:LINE:COL; the file name itself may hold a colon.
		var nums []int
		for len(nums) < 2 {
			i := strings.LastIndexByte(loc.File, ':')
			if i < 0 {
				break
			}
			n, err := strconv.Atoi(loc.File[i+1:])
			if err != nil || n <= 0 || strings.ContainsAny(loc.File[i+1:], "+-") {
				break
			}
			nums = append(nums, n)
			loc.File = loc.File[:i]
		}
		if len(nums) == 0 {
			return templateLocation{}, false
		}
		loc.Line = nums[len(nums)-1]
	}
	if loc.File == "" || !known(loc.File) {
		return templateLocation{}, false
	}
	return loc, true
}

// String says where, as "template NAME line N" (or without the line).
func (l templateLocation) String() string {
	if l.Line == 0 {
		return "template " + l.File
	}
	return "template " + l.File + " line " + strconv.Itoa(l.Line)
}
