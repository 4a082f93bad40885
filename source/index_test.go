package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/repo"
)

func readIndex(t *testing.T, name string) []byte { return readIndexTB(t, name) }

// TestFindChartVersionForms checks, for each document form, which path the
// resolution took (scan or full parse) and that the answer equals the full
// parse's.
func TestFindChartVersionForms(t *testing.T) {
	helmYAML := marshalIndex(t, genIndex(3, 80), false)
	helmJSON := marshalIndex(t, genIndex(3, 80), true)
	tests := []struct {
		name       string
		doc        []byte
		chart      string
		constraint string
		format     entryFormat
		want       string // selected version
		wantURL    string
		wantErr    error
	}{
		{name: "helm yaml", doc: helmYAML, chart: "chart002", constraint: "6.5.*", format: formatYAML, want: "6.5.1"},
		{name: "helm yaml latest", doc: helmYAML, chart: "nginx", constraint: "", format: formatYAML, want: "7.7.1"},
		{name: "helm json", doc: helmJSON, chart: "chart001", constraint: "~3.2", format: formatJSON, want: "3.2.1"},
		{name: "indented sequences, quoted scalars, block scalar", doc: readIndex(t, "indented.yaml"), chart: "nginx", constraint: "*", format: formatYAML, want: "1.3.0", wantURL: "nginx-1.3.0.tgz"},
		{name: "flow style falls back", doc: readIndex(t, "flow.yaml"), chart: "nginx", constraint: "1.2.x", format: formatDecoded, want: "1.2.0"},
		{name: "aliases fall back", doc: readIndex(t, "aliases.yaml"), chart: "nginx", constraint: "<1.2.0", format: formatDecoded, want: "1.1.0"},
		{name: "quoted key falls back", doc: readIndex(t, "quoted-key.yaml"), chart: "nginx", constraint: "*", format: formatDecoded, want: "1.2.0"},
		{name: "invalid entries skipped", doc: readIndex(t, "invalid-entries.yaml"), chart: "nginx", constraint: ">=0.0.1", format: formatYAML, want: "2.0.0"},
		{name: "json escapes and folded keys", doc: readIndex(t, "escaped.json"), chart: "nginx", constraint: "*", format: formatJSON, want: "1.1.0", wantURL: "b.tgz"},
		{name: "invalid json is read as yaml", doc: readIndex(t, "trailing-comma.json"), chart: "nginx", constraint: "*", format: formatDecoded, want: "1.0.0"},
		{name: "a lookalike under annotations is not the chart", doc: readIndex(t, "annotation-lookalike.yaml"), chart: "nginx", constraint: "*", wantErr: ErrChartNotFound},
		{name: "tab indentation falls back", doc: readIndex(t, "tab.yaml"), chart: "nginx", constraint: "*", wantErr: ErrInvalidIndex},
		{name: "two entries keys fall back", doc: readIndex(t, "two-entries.yaml"), chart: "nginx", constraint: "*", wantErr: ErrInvalidIndex},
		{name: "empty chart name", doc: helmYAML, chart: "", constraint: "*", wantErr: ErrChartNotFound},
		{name: "missing chart", doc: helmYAML, chart: "nope", constraint: "*", wantErr: ErrChartNotFound},
		{name: "missing chart json", doc: helmJSON, chart: "nope", constraint: "*", wantErr: ErrChartNotFound},
		{name: "no version matches", doc: helmYAML, chart: "nginx", constraint: "9.x", wantErr: ErrNoMatchingVersion},
		{name: "duplicate key is an error", doc: readIndex(t, "duplicate.yaml"), chart: "nginx", constraint: "*", wantErr: ErrInvalidIndex},
		{name: "malformed", doc: readIndex(t, "malformed.yaml"), chart: "nginx", constraint: "*", wantErr: ErrInvalidIndex},
		{name: "no apiVersion", doc: readIndex(t, "no-apiversion.yaml"), chart: "nginx", constraint: "*", wantErr: ErrInvalidIndex},
		{name: "empty", doc: []byte("\n"), chart: "nginx", constraint: "*", wantErr: ErrInvalidIndex},
		{name: "bad constraint", doc: helmYAML, chart: "nginx", constraint: ">>1", wantErr: ErrInvalidConstraint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FindChartVersion(tt.doc, tt.chart, tt.constraint)
			full, fullErr := fullParse(tt.doc, tt.chart)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				if fullErr == nil {
					_, fullErr = full.resolve(tt.constraint)
				}
				require.ErrorIs(t, fullErr, tt.wantErr, "the full parse agrees")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got.Version)
			if tt.wantURL != "" {
				assert.Equal(t, []string{tt.wantURL}, got.URLs)
			}
			e, err := parseChartEntries(tt.doc, tt.chart)
			require.NoError(t, err)
			assert.Equal(t, tt.format, e.format, "resolution path")
			require.NoError(t, fullErr)
			want, err := full.resolve(tt.constraint)
			require.NoError(t, err)
			assert.Equal(t, want, got, "same answer as the full parse")
		})
	}
}

// TestFindChartVersionMatchesHelm compares with Helm's own loader on a
// generated index, for every chart and several constraints.
func TestFindChartVersionMatchesHelm(t *testing.T) {
	for _, asJSON := range []bool{false, true} {
		p := writeIndex(t, t.TempDir(), genIndex(4, 80), asJSON)
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		f, err := repo.LoadIndexFile(p)
		require.NoError(t, err)
		for name := range f.Entries {
			for _, c := range []string{"*", "6.5.*", "~4.1", ">=3.0.0 <5", "5.2.0"} {
				want, err := f.Get(name, c)
				require.NoError(t, err)
				got, err := FindChartVersion(raw, name, c)
				require.NoError(t, err)
				assert.Equal(t, want, got, "%s %s json=%v", name, c, asJSON)
			}
		}
	}
}

func TestIndexCache(t *testing.T) {
	doc := marshalIndex(t, genIndex(3, 80), false)
	c := NewIndexCache(1)
	got, err := c.Find("d1", doc, "nginx", "6.5.*")
	require.NoError(t, err)
	assert.Equal(t, "6.5.1", got.Version)
	// A hit does not read the index again.
	got, err = c.Find("d1", nil, "nginx", "3.x")
	require.NoError(t, err)
	assert.Equal(t, "3.7.1", got.Version)
	// Callers get copies: changing one does not change the cache.
	got.Metadata.Version = "mutated"
	got, err = c.Find("d1", nil, "nginx", "3.7.1")
	require.NoError(t, err)
	assert.Equal(t, "3.7.1", got.Version)
	// Failures are not cached; the oldest entry is evicted.
	_, err = c.Find("d1", doc, "missing", "*")
	require.ErrorIs(t, err, ErrChartNotFound)
	assert.Equal(t, 1, c.Len())
	_, err = c.Find("d2", doc, "chart001", "*")
	require.NoError(t, err)
	assert.Equal(t, 1, c.Len())
	_, err = c.Find("d1", nil, "nginx", "*")
	require.ErrorIs(t, err, ErrInvalidIndex, "evicted: the nil index is read again")
}

// FuzzFindChartVersion checks that the scanner never panics and, whenever
// Helm's full parse resolves a version, resolves the same one.
func FuzzFindChartVersion(f *testing.F) {
	for _, name := range []string{"annotation-lookalike.yaml", "tab.yaml", "two-entries.yaml", "indented.yaml", "flow.yaml", "aliases.yaml", "quoted-key.yaml", "duplicate.yaml", "invalid-entries.yaml", "escaped.json", "trailing-comma.json", "malformed.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "index", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "nginx", "*")
	}
	f.Add(marshalIndex(f, genIndex(2, 4), false), "chart001", "3.x")
	f.Add(marshalIndex(f, genIndex(2, 4), true), "nginx", "")
	f.Fuzz(func(t *testing.T, doc []byte, chartName, constraint string) {
		agreesWithFullParse(t, doc, chartName, constraint)
	})
}

// agreesWithFullParse fails when Helm's full parse resolves a version and
// FindChartVersion does not resolve the same one.
func agreesWithFullParse(t *testing.T, doc []byte, chartName, constraint string) {
	got, err := FindChartVersion(doc, chartName, constraint)
	full, fullErr := fullParse(doc, chartName)
	if fullErr != nil {
		return
	}
	want, wantErr := full.resolve(constraint)
	if wantErr != nil {
		return
	}
	require.NoError(t, err, "full parse resolved %s", want.Version)
	assert.Equal(t, want.Version, got.Version)
	assert.Equal(t, want.Digest, got.Digest)
	assert.Equal(t, want.URLs, got.URLs)
}

// FuzzFindChartVersionEdits inserts fuzzed text into a valid index at a
// fuzzed line, so that the inputs stay close to real indexes and reach the
// scanner's structural checks; the answer must match the full parse.
func FuzzFindChartVersionEdits(f *testing.F) {
	f.Add(uint8(3), "    version: 9.9.9", "nginx", "*")
	f.Add(uint8(2), "  nginx:", "nginx", "*")
	f.Add(uint8(12), "entries:", "redis", "")
	f.Add(uint8(7), "    created: \"2030-01-01T00:00:00Z\"", "nginx", "1.x")
	f.Add(uint8(5), "  - &a", "nginx", "*")
	base := strings.Split(string(readIndexTB(f, "indented.yaml")), "\n")
	f.Fuzz(func(t *testing.T, at uint8, insert, chartName, constraint string) {
		lines := append([]string(nil), base...)
		i := int(at) % (len(lines) + 1)
		lines = append(lines[:i], append([]string{insert}, lines[i:]...)...)
		agreesWithFullParse(t, []byte(strings.Join(lines, "\n")), chartName, constraint)
	})
}

// TestJSONIndexDuplicateKeys: a JSON index with a key twice in one object
// is refused, naming the key, rather than read as Helm's json.Unmarshal
// reads it (the last one wins); whether the scan or the full parse reads
// it, and whether it is in memory or streamed.
func TestJSONIndexDuplicateKeys(t *testing.T) {
	entry := func(v string) string {
		return `{"apiVersion": "v2", "name": "nginx", "version": "` + v + `", "urls": ["nginx-` + v + `.tgz"]}`
	}
	tests := []struct {
		name, doc, path string
		scanOnly        bool // the full parse compares keys exactly
	}{
		{name: "entries twice", doc: `{"apiVersion": "v1", "entries": {"nginx": [` + entry("1.0.0") + `]}, "entries": {"nginx": [` + entry("6.6.6") + `]}}`, path: "entries"},
		{name: "entries twice, folded", doc: `{"apiVersion": "v1", "entries": {"nginx": [` + entry("1.0.0") + `]}, "Entries": {"nginx": [` + entry("6.6.6") + `]}}`, path: "Entries", scanOnly: true},
		{name: "apiVersion twice", doc: `{"apiVersion": "v1", "apiVersion": "v2", "entries": {"nginx": [` + entry("1.0.0") + `]}}`, path: "apiVersion"},
		{name: "chart twice", doc: `{"apiVersion": "v1", "entries": {"nginx": [` + entry("1.0.0") + `], "nginx": [` + entry("6.6.6") + `]}}`, path: "entries.nginx"},
		{name: "version twice in an entry", doc: `{"apiVersion": "v1", "entries": {"nginx": [{"apiVersion": "v2", "name": "nginx", "version": "1.0.0", "version": "6.6.6", "urls": ["a.tgz"]}]}}`, path: "entries.nginx[0].version"},
		{name: "urls twice in an entry", doc: `{"apiVersion": "v1", "entries": {"nginx": [{"apiVersion": "v2", "name": "nginx", "version": "1.0.0", "urls": ["a.tgz"], "urls": ["https://evil/a.tgz"]}]}}`, path: "entries.nginx[0]: duplicate key urls"},
		{name: "deep duplicate, full parse", doc: `{"apiVersion": "v1", "entries": {"nginx": [{"apiVersion": "v2", "name": "nginx", "version": "1.0.0", "urls": ["a.tgz"], "annotations": {"a": "1", "a": "2"}}]}}`, path: "entries.nginx[0]: duplicate key annotations.a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FindChartVersion([]byte(tt.doc), "nginx", "*")
			require.ErrorIs(t, err, ErrInvalidIndex)
			assert.Contains(t, err.Error(), "duplicate key")
			assert.Contains(t, err.Error(), tt.path)
			if !tt.scanOnly {
				_, err = fullParse([]byte(tt.doc), "nginx")
				require.ErrorIs(t, err, ErrInvalidIndex, "full parse")
			}
		})
	}
}
