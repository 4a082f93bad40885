package reconcile

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"helm.sh/helm/v3/pkg/chart"
)

func TestParseTemplateLocation(t *testing.T) {
	known := func(name string) bool {
		return name == "app/templates/cm.yaml" || name == "app/charts/db/templates/a:b.yaml"
	}
	cases := []struct {
		name string
		msg  string
		want templateLocation
		ok   bool
	}{
		{name: "fail", msg: "execution error at (app/templates/cm.yaml:12:7): s3cret", want: templateLocation{File: "app/templates/cm.yaml", Line: 12}, ok: true},
		{name: "text/template exec", msg: `template: app/templates/cm.yaml:3:11: executing "app/templates/cm.yaml" at <tpl>: error`, want: templateLocation{File: "app/templates/cm.yaml", Line: 3}, ok: true},
		{name: "parse error", msg: "parse error at (app/templates/cm.yaml:9): unexpected EOF", want: templateLocation{File: "app/templates/cm.yaml", Line: 9}, ok: true},
		{name: "YAML", msg: "YAML parse error on app/templates/cm.yaml: error converting YAML to JSON: yaml: unknown anchor 's3' referenced", want: templateLocation{File: "app/templates/cm.yaml"}, ok: true},
		{name: "wrapped by Helm", msg: "unable to build kubernetes objects: YAML parse error on app/templates/cm.yaml: x", want: templateLocation{File: "app/templates/cm.yaml"}, ok: true},
		{name: "a colon in the file name", msg: "execution error at (app/charts/db/templates/a:b.yaml:4:2): x", want: templateLocation{File: "app/charts/db/templates/a:b.yaml", Line: 4}, ok: true},
		{name: "the first marker counts", msg: "template: app/templates/cm.yaml:3:1: executing: execution error at (app/charts/db/templates/a:b.yaml:4:2): x", want: templateLocation{File: "app/templates/cm.yaml", Line: 3}, ok: true},
		{name: "an unknown file is Secret text", msg: "execution error at (s3cret:1:2): x", ok: false},
		{name: "a Secret value shaped as a location after the real one", msg: "YAML parse error on app/templates/cm.yaml: template: s3cret:1:1: ", want: templateLocation{File: "app/templates/cm.yaml"}, ok: true},
		{name: "no line", msg: "execution error at (app/templates/cm.yaml): x", ok: false},
		{name: "a signed line", msg: "execution error at (app/templates/cm.yaml:+3): x", ok: false},
		{name: "a zero line", msg: "execution error at (app/templates/cm.yaml:0:1): x", ok: false},
		{name: "unterminated", msg: "execution error at (app/templates/cm.yaml:3:1", ok: false},
		{name: "no marker", msg: "connection refused", ok: false},
		{name: "empty", msg: "", ok: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseTemplateLocation(tc.msg, known)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTemplateLocationString(t *testing.T) {
	assert.Equal(t, "template a/templates/x.yaml line 3", templateLocation{File: "a/templates/x.yaml", Line: 3}.String())
	assert.Equal(t, "template a/templates/x.yaml", templateLocation{File: "a/templates/x.yaml"}.String())
}

// The names Helm's engine gives the templates of a chart and its
// subcharts.
func TestChartFiles(t *testing.T) {
	db := &chart.Chart{Metadata: &chart.Metadata{Name: "db"}, Templates: []*chart.File{{Name: "templates/s.yaml"}}}
	app := &chart.Chart{Metadata: &chart.Metadata{Name: "app"}, Templates: []*chart.File{{Name: "templates/cm.yaml"}}}
	app.AddDependency(db)
	known := chartFiles(app)
	assert.True(t, known("app/templates/cm.yaml"))
	assert.True(t, known("app/charts/db/templates/s.yaml"))
	assert.False(t, known("db/templates/s.yaml"))
}

// Whatever the message, a location is either absent or names a known
// file and a positive line (or none, for YAML errors), and a file the
// message does not hold is never made up.
func FuzzParseTemplateLocation(f *testing.F) {
	for _, s := range []string{
		"execution error at (app/templates/cm.yaml:12:7): x",
		`template: app/templates/cm.yaml:3:11: executing "x"`,
		"parse error at (app/templates/cm.yaml:9): x",
		"YAML parse error on app/templates/cm.yaml: x",
		"template: :1:1: ",
		"execution error at (:::",
	} {
		f.Add(s)
	}
	known := func(name string) bool { return strings.HasPrefix(name, "app/") }
	f.Fuzz(func(t *testing.T, msg string) {
		loc, ok := parseTemplateLocation(msg, known)
		if !ok {
			if loc != (templateLocation{}) {
				t.Fatalf("no location, but %+v", loc)
			}
			return
		}
		if !known(loc.File) || !strings.Contains(msg, loc.File) || loc.Line < 0 {
			t.Fatalf("location %+v of %q", loc, msg)
		}
	})
}
