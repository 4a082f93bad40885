package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/strictyaml"
)

// FindChartVersion resolves one chart version from the raw bytes of a Helm
// repository index (YAML or JSON), selecting it with SelectVersion's rules.
//
// It does not decode the whole index. For a document in the block form that
// Helm and every common repository server write, it locates the
// entries.<chart> block in the text and decodes only the version and created
// fields of its items, then the selected item in full. JSON indexes are
// walked by a validating scanner that decodes only the chart's array. Any
// form it cannot scan safely (flow style, quoted or duplicated keys, tabs,
// aliases reaching outside the chart's block, …) falls back to a full parse
// with Helm's semantics, so the answer is the same either way.
//
// Entries that fail Helm's validation are skipped, as Helm and Flux skip
// them when they load an index. FindChartVersion is pure: no I/O.
func FindChartVersion(index []byte, chartName, constraint string) (*repo.ChartVersion, error) {
	e, err := parseChartEntries(index, chartName)
	if err != nil {
		return nil, err
	}
	return e.resolve(constraint)
}

// chartEntries are the versions of one chart in one index, with the
// selection fields parsed and each item decoded only once it is selected.
type chartEntries struct {
	name   string
	format entryFormat
	block  []byte   // the chart's block, copied out of the index
	items  [][2]int // each version's bytes within block
	cands  []Candidate
	parsed []*semver.Version

	mu      sync.Mutex
	decoded []*repo.ChartVersion // memo; set for every item when format is formatDecoded
	invalid []bool
	chosen  map[string]int // memo: constraint -> selected valid item

	dup string // scanDuplicate only: the path of the key found twice
}

// maxChosen bounds the per-chart memo of constraint selections.
const maxChosen = 64

type entryFormat uint8

const (
	formatDecoded entryFormat = iota // full parse: decoded holds every item
	formatYAML                       // block holds YAML sequence items
	formatJSON                       // block holds JSON array elements
)

// newEntries prepares the parsed-version table of e.
func (e *chartEntries) finish() {
	e.parsed = make([]*semver.Version, len(e.cands))
	if e.decoded == nil {
		e.decoded = make([]*repo.ChartVersion, len(e.cands))
	}
	e.invalid = make([]bool, len(e.cands))
	for i, c := range e.cands {
		if v, err := parseVersion(c.Version); err == nil {
			e.parsed[i] = v
		}
	}
}

// resolve selects the version constraint asks for, decoding and validating
// the selected item; an invalid item is dropped and the selection repeated,
// which gives the same answer as dropping invalid items first.
func (e *chartEntries) resolve(constraint string) (*repo.ChartVersion, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		i, ok := e.chosen[constraint]
		if !ok {
			var err error
			if i, err = selectParsed(constraint, e.cands, e.parsed); err != nil {
				return nil, err
			}
		}
		cv, err := e.item(i)
		if err != nil {
			return nil, err
		}
		if cv == nil {
			e.invalid[i] = true
			e.parsed[i] = nil
			e.cands[i].Version = "\x00invalid"
			continue
		}
		if !ok {
			if e.chosen == nil || len(e.chosen) >= maxChosen {
				e.chosen = map[string]int{}
			}
			e.chosen[constraint] = i
		}
		out := *cv
		md := *cv.Metadata
		out.Metadata = &md
		return &out, nil
	}
}

// item decodes and validates item i; nil means Helm would skip it.
func (e *chartEntries) item(i int) (*repo.ChartVersion, error) {
	if e.invalid[i] {
		return nil, nil
	}
	if cv := e.decoded[i]; cv != nil || e.format == formatDecoded {
		return cv, nil
	}
	raw := e.block[e.items[i][0]:e.items[i][1]]
	var cv *repo.ChartVersion
	switch e.format {
	case formatYAML:
		var list []*repo.ChartVersion
		if err := strictyaml.CheckAliases(raw); err != nil {
			return nil, fmt.Errorf("%w: entries.%s[%d]: %v", ErrInvalidIndex, e.name, i, err)
		}
		if err := yaml.UnmarshalStrict(raw, &list); err != nil {
			return nil, fmt.Errorf("%w: entries.%s[%d]: %v", ErrInvalidIndex, e.name, i, err)
		}
		if len(list) == 1 {
			cv = list[0]
		}
	case formatJSON:
		if err := strictyaml.StrictJSON(raw); err != nil {
			return nil, fmt.Errorf("%w: entries.%s[%d]: %v", ErrInvalidIndex, e.name, i, err)
		}
		if err := json.Unmarshal(raw, &cv); err != nil {
			return nil, fmt.Errorf("%w: entries.%s[%d]: %v", ErrInvalidIndex, e.name, i, err)
		}
	}
	cv = validEntry(cv)
	e.decoded[i] = cv
	return cv, nil
}

// validEntry applies Helm's loadIndex rules to one entry: nil entries are
// skipped, a missing apiVersion means v1, entries failing validation are
// skipped (except for the dependency-alias check Helm also ignores).
func validEntry(cv *repo.ChartVersion) *repo.ChartVersion {
	if cv == nil {
		return nil
	}
	if cv.Metadata == nil {
		cv.Metadata = &chart.Metadata{}
	}
	if cv.APIVersion == "" {
		cv.APIVersion = chart.APIVersionV1
	}
	if err := cv.Validate(); err != nil {
		if verr, ok := err.(chart.ValidationError); !ok ||
			!strings.HasPrefix(verr.Error(), "validation: more than one dependency with name or alias") {
			return nil
		}
	}
	return cv
}

// parseChartEntries finds chartName's entries in index, scanning when the
// document allows it and parsing it whole otherwise.
func parseChartEntries(index []byte, chartName string) (*chartEntries, error) {
	if len(bytes.TrimSpace(index)) == 0 {
		return nil, fmt.Errorf("%w: the index is empty", ErrInvalidIndex)
	}
	if chartName == "" {
		return nil, fmt.Errorf("%w: the chart name is empty", ErrChartNotFound)
	}
	var (
		e   *chartEntries
		res scanResult
	)
	if first := firstNonSpace(index); first == '{' {
		e, res = scanJSON(newJSONScan(index), chartName)
	} else {
		e, res = scanYAML(index, chartName)
	}
	return settle(e, res, chartName, func() ([]byte, error) { return index, nil })
}

// settle turns a scan's outcome into the chart's entries; full supplies the
// whole document when it must be parsed whole after all.
func settle(e *chartEntries, res scanResult, chartName string, full func() ([]byte, error)) (*chartEntries, error) {
	switch res {
	case scanFound:
		e.finish()
		// A scanned item that cannot be decoded on its own (an alias to an
		// anchor outside it, say) sends the whole document to the full parse.
		for i := range e.items {
			if e.cands[i].Version == complexValue {
				cv, err := e.item(i)
				if err != nil {
					return parseFull(chartName, full)
				}
				if cv == nil {
					e.cands[i].Version = "\x00invalid"
				} else {
					e.cands[i] = Candidate{Version: cv.Version, Created: cv.Created}
				}
				e.parsed[i] = nil
				if v, err := parseVersion(e.cands[i].Version); err == nil {
					e.parsed[i] = v
				}
			}
		}
		return e, nil
	case scanNotFound:
		return nil, fmt.Errorf("%w: no entry %q in the index", ErrChartNotFound, chartName)
	case scanDuplicate:
		return nil, fmt.Errorf("%w: duplicate key %s", ErrInvalidIndex, e.dup)
	default:
		return parseFull(chartName, full)
	}
}

func parseFull(chartName string, full func() ([]byte, error)) (*chartEntries, error) {
	doc, err := full()
	if err != nil {
		return nil, err
	}
	return fullParse(doc, chartName)
}

// fullParse decodes the whole index the way Helm's loadIndex does.
func fullParse(index []byte, chartName string) (*chartEntries, error) {
	var f repo.IndexFile
	var err error
	if json.Valid(index) {
		if err = strictyaml.StrictJSON(index); err == nil {
			err = json.Unmarshal(index, &f)
		}
	} else if err = strictyaml.CheckAliases(index); err == nil {
		err = yaml.UnmarshalStrict(index, &f)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidIndex, err)
	}
	if f.APIVersion == "" {
		return nil, fmt.Errorf("%w: apiVersion is missing", ErrInvalidIndex)
	}
	cvs, ok := f.Entries[chartName]
	if !ok {
		return nil, fmt.Errorf("%w: no entry %q in the index", ErrChartNotFound, chartName)
	}
	e := &chartEntries{name: chartName, format: formatDecoded}
	for _, cv := range cvs {
		if cv = validEntry(cv); cv == nil {
			continue
		}
		e.cands = append(e.cands, Candidate{Version: cv.Version, Created: cv.Created})
		e.decoded = append(e.decoded, cv)
	}
	e.finish()
	return e, nil
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return c
		}
	}
	return 0
}

// scanResult says what a scanner made of a document.
type scanResult uint8

const (
	scanUnsafe    scanResult = iota // not a form the scanner reads safely: parse it whole
	scanFound                       // the chart's block was found
	scanNotFound                    // the document is scannable and has no such chart
	scanDuplicate                   // a key is twice in one object: refused (e.dup names it)
)

// complexValue marks a candidate whose version or created field was not a
// simple one-line scalar; the item is decoded in full to read them.
const complexValue = "\x00complex"

// nextLine returns the line starting at i, without its newline (and
// carriage return), and the start of the following line.
func nextLine(b []byte, i int) ([]byte, int) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		return bytes.TrimSuffix(b[i:], []byte{'\r'}), len(b)
	}
	return bytes.TrimSuffix(b[i:i+j], []byte{'\r'}), i + j + 1
}

// indent counts the leading spaces of line; ok is false when the
// indentation holds a tab, which the scanner does not interpret.
func indent(line []byte) (n int, ok bool) {
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n, n == len(line) || line[n] != '\t'
}

// blank reports whether line holds nothing but spaces and maybe a comment.
func blank(line []byte) bool {
	t := bytes.TrimLeft(line, " ")
	return len(t) == 0 || t[0] == '#'
}

// restEmpty reports whether what follows a "key:" is empty or a comment.
func restEmpty(rest []byte) bool {
	if len(rest) == 0 {
		return true
	}
	if rest[0] != ' ' && rest[0] != '\t' {
		return false
	}
	return blank(bytes.TrimLeft(rest, " \t"))
}

// topLevelKey finds "key:" at the start of a line of doc and returns the
// rest of that line and the offset of the following line.
func topLevelKey(doc []byte, key string) (rest []byte, next int, found bool) {
	pat := "\n" + key + ":"
	var at int
	if bytes.HasPrefix(doc, []byte(key+":")) {
		at = 0
	} else if i := bytes.Index(doc, []byte(pat)); i >= 0 {
		at = i + 1
	} else {
		return nil, 0, false
	}
	line, next := nextLine(doc, at)
	return line[len(key)+1:], next, true
}

// scanYAML locates entries.<chartName> in a block-style YAML index.
func scanYAML(doc []byte, chartName string) (*chartEntries, scanResult) {
	if bytes.HasPrefix(doc, []byte("\xef\xbb\xbf")) || bytes.HasPrefix(doc, []byte("%")) {
		return nil, scanUnsafe
	}
	apiRest, _, ok := topLevelKey(doc, "apiVersion")
	if !ok || restEmpty(apiRest) {
		return nil, scanUnsafe // let the full parse report it
	}
	rest, pos, ok := topLevelKey(doc, "entries")
	if !ok || !restEmpty(rest) {
		return nil, scanUnsafe
	}
	// The indentation of entries' keys is that of its first content line.
	child := -1
	for p := pos; p < len(doc); {
		line, next := nextLine(doc, p)
		if !blank(line) {
			n, ok := indent(line)
			if !ok || line[n] == '-' {
				return nil, scanUnsafe
			}
			child = n
			break
		}
		p = next
	}
	if child <= 0 {
		// entries is null or empty; a full parse tells "no chart" from errors.
		return nil, scanUnsafe
	}
	at, res := findChartKey(doc, pos, child, chartName)
	if res != scanFound {
		return nil, res
	}
	keyLine, start := nextLine(doc, at)
	if !restEmpty(keyLine[child+len(chartName)+1:]) {
		return nil, scanUnsafe
	}
	e := &chartEntries{name: chartName, format: formatYAML}
	itemIndent, keyIndent := -1, -1
	end := len(doc)
	cur := -1 // index of the current item
	for p := start; p < len(doc); {
		line, next := nextLine(doc, p)
		if blank(line) {
			p = next
			continue
		}
		n, ok := indent(line)
		if !ok {
			return nil, scanUnsafe
		}
		isDash := line[n] == '-' && (n+1 == len(line) || line[n+1] == ' ')
		if itemIndent < 0 {
			if n < child || !isDash {
				return nil, scanUnsafe // null, empty or not a sequence
			}
			itemIndent = n
		}
		if n < itemIndent || (n == itemIndent && !isDash) {
			if n > child || (n == child && isDash) {
				return nil, scanUnsafe
			}
			end = p
			break
		}
		if n == itemIndent { // a new item
			if cur >= 0 {
				e.items[cur][1] = p
			}
			e.items = append(e.items, [2]int{p, len(doc)})
			e.cands = append(e.cands, Candidate{})
			cur++
			content := bytes.TrimLeft(line[n+1:], " ")
			if len(content) == 0 || content[0] == '#' {
				keyIndent = -1
			} else {
				keyIndent = len(line) - len(content)
				if !scanKey(e, cur, content, doc, next, keyIndent) {
					e.cands[cur].Version = complexValue
				}
			}
			p = next
			continue
		}
		if keyIndent < 0 {
			keyIndent = n
		}
		if n == keyIndent && line[n] != '-' {
			if !scanKey(e, cur, line[n:], doc, next, keyIndent) {
				e.cands[cur].Version = complexValue
			}
		}
		p = next
	}
	if cur < 0 {
		return nil, scanUnsafe
	}
	e.items[cur][1] = end
	base := e.items[0][0]
	e.block = append([]byte(nil), doc[base:end]...)
	for i := range e.items {
		e.items[i][0] -= base
		e.items[i][1] -= base
	}
	return e, scanFound
}

// findChartKey walks the lines from pos to the end of doc once and returns
// the start of the line "<child spaces><chartName>:" inside the entries
// mapping. The same pass makes sure the answer is safe: a second such line
// (a duplicate key), the chart's name as a quoted key, a tab-indented line
// or a second top-level entries key send the document to the full parse.
// A line at column 0 ends the entries mapping; later matches belong to
// other top-level keys and are not the chart. Line starts are found 64
// bytes at a step (newlines, with AVX2 where the machine has it).
func findChartKey(doc []byte, pos, child int, chartName string) (int, scanResult) {
	k := keyFinder{doc: doc, child: child, name: chartName, at: -1, inEntries: true}
	if !k.line(pos) {
		return -1, scanUnsafe
	}
	i := pos
	name0 := chartName[0]
	for ; i+64 <= len(doc); i += 64 {
		for m := newlines(doc[i : i+64]); m != 0; m &= m - 1 {
			ls := i + bits.TrailingZeros64(m) + 1
			// Most lines are deeper than the chart keys, or items of a
			// chart's list: nothing to look at.
			if ls+child < len(doc) && doc[ls] == ' ' {
				if c := doc[ls+child]; (c == ' ' || c == '-') && c != name0 {
					continue
				}
			}
			if !k.line(ls) {
				return -1, scanUnsafe
			}
		}
	}
	for ; i < len(doc); i++ {
		if doc[i] == '\n' && !k.line(i+1) {
			return -1, scanUnsafe
		}
	}
	if k.at < 0 {
		return -1, scanNotFound
	}
	return k.at, scanFound
}

// keyFinder is findChartKey's look at one line at a time.
type keyFinder struct {
	doc       []byte
	child     int
	name      string
	at        int // start of the chart's key line, or -1
	inEntries bool
}

// line looks at the line starting at ls; false means the document is not
// safe to scan.
func (k *keyFinder) line(ls int) bool {
	doc, child := k.doc, k.child
	if ls+child >= len(doc) {
		return true
	}
	switch doc[ls] {
	case ' ':
	case '\n', '\r', '#':
		return true
	case '\t':
		return false
	default:
		k.inEntries = false
		return !bytes.HasPrefix(doc[ls:], []byte("entries:")) && !bytes.HasPrefix(doc[ls:], []byte("---")) &&
			!bytes.HasPrefix(doc[ls:], []byte("..."))
	}
	if !k.inEntries {
		return true
	}
	switch c := doc[ls+child]; {
	case c == k.name[0]:
		if !bytes.HasPrefix(doc[ls+child:], []byte(k.name)) || ls+child+len(k.name) >= len(doc) ||
			doc[ls+child+len(k.name)] != ':' || !allSpaces(doc[ls:ls+child]) {
			return true
		}
		if k.at >= 0 {
			return false // duplicate key: strict parsing rejects it
		}
		k.at = ls
	case c == '"' || c == '\'' || c == '\t':
		if allSpaces(doc[ls : ls+child]) {
			if c == '\t' || bytes.HasPrefix(doc[ls+child+1:], []byte(k.name+string(c))) {
				return false
			}
		}
	}
	return true
}

func allSpaces(b []byte) bool {
	for _, c := range b {
		if c != ' ' {
			return false
		}
	}
	return true
}

// scanKey reads a "version:" or "created:" line of item i; it returns false
// when the value is not a simple scalar on this one line.
func scanKey(e *chartEntries, i int, content, doc []byte, next, keyIndent int) bool {
	if e.cands[i].Version == complexValue {
		return true
	}
	var key string
	switch {
	case bytes.HasPrefix(content, []byte("version:")):
		key = "version"
	case bytes.HasPrefix(content, []byte("created:")):
		key = "created"
	default:
		switch content[0] {
		case '{', '[', '&', '*', '!', '?', '"', '\'', '<', '|', '>', '-':
			// flow item, anchor, alias, tag, complex or quoted key
			return false
		}
		return true
	}
	rest := content[len(key)+1:]
	if len(rest) > 0 && rest[0] != ' ' {
		return true // "versionX:" is another key
	}
	val, ok := scalar(bytes.TrimLeft(rest, " "))
	if !ok {
		return false
	}
	// A plain or quoted scalar continued on the next line is not simple.
	if nl, _ := nextLine(doc, next); next < len(doc) && !blank(nl) {
		if n, _ := indent(nl); n > keyIndent && !(n == keyIndent && nl[n] == '-') {
			return false
		}
	}
	switch key {
	case "version":
		if e.cands[i].Version != "" {
			return false // duplicate key
		}
		e.cands[i].Version = val
	case "created":
		t, err := time.Parse(time.RFC3339Nano, val)
		if err != nil {
			return false
		}
		e.cands[i].Created = t
	}
	return true
}

// scalar reads a one-line YAML scalar that decodes to a string; ok is false
// for anything else (block scalars, flow collections, aliases, tags,
// escapes, numbers, booleans, null).
func scalar(v []byte) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		j := bytes.IndexByte(v[1:], '"')
		if j < 0 || bytes.IndexByte(v[1:j+1], '\\') >= 0 || !restEmpty(v[j+2:]) {
			return "", false
		}
		return string(v[1 : j+1]), true
	case '\'':
		var b strings.Builder
		for k := 1; k < len(v); k++ {
			if v[k] != '\'' {
				b.WriteByte(v[k])
				continue
			}
			if k+1 < len(v) && v[k+1] == '\'' {
				b.WriteByte('\'')
				k++
				continue
			}
			if !restEmpty(v[k+1:]) {
				return "", false
			}
			return b.String(), true
		}
		return "", false
	case '&', '*', '!', '|', '>', '{', '[', '%', '@', '`', '?', '-', ',', '#', ':':
		return "", false
	}
	if i := bytes.Index(v, []byte(" #")); i >= 0 {
		v = v[:i]
	}
	s := strings.TrimRight(string(v), " \t")
	if strings.Contains(s, ": ") || plainNonString(s) {
		return "", false
	}
	return s, true
}

// plainNonString reports whether a plain scalar would resolve to something
// other than a string under YAML 1.1 (which Helm's YAML library follows).
func plainNonString(s string) bool {
	switch strings.ToLower(s) {
	case "", "~", "null", "true", "false", "yes", "no", "on", "off", "y", "n", ".inf", "-.inf", "+.inf", ".nan":
		return true
	}
	if _, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64); err == nil {
		return true
	}
	if _, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64); err == nil {
		return true
	}
	return false
}
