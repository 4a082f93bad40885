package values

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/strvals"
)

// helmSet applies a line with Helm's own parser, the reference behaviour.
func helmSet(data map[string]any, line string, mode setMode) error {
	switch mode {
	case setString:
		return strvals.ParseIntoString(line, data)
	case setLiteral:
		return strvals.ParseLiteralInto(line, data)
	default:
		return strvals.ParseInto(line, data)
	}
}

func baseTrees() []map[string]any {
	return []map[string]any{
		{},
		{
			"a":      map[string]any{"b": []any{int64(1), "x", map[string]any{"c": true}}},
			"n":      nil,
			"s":      "str",
			"l":      []any{[]any{int64(1), int64(2)}, []any{int64(3)}},
			"nested": map[string]any{"configuration": []any{"list", "item", "option"}},
		},
	}
}

// sameAsHelm checks that setLine and strvals agree on the outcome of a line
// over every base tree: both fail, or both succeed with equal trees.
func sameAsHelm(t *testing.T, line string, mode setMode) {
	t.Helper()
	for i, base := range baseTrees() {
		ours := copyMap(base)
		err := setLine(ours, line, mode, nil)
		if err != nil && (strings.Contains(err.Error(), "lists grow by more than") || strings.Contains(err.Error(), "nested keys and indexes")) {
			continue // helmfleet's own bounds; Helm would allocate on
		}
		theirs := copyMap(base)
		herr := helmSet(theirs, line, mode)
		if (err == nil) != (herr == nil) {
			t.Fatalf("base %d, line %q, mode %d: ours err=%v, helm err=%v", i, line, mode, err, herr)
		}
		if err == nil {
			require.Equal(t, theirs, ours, "base %d, line %q, mode %d", i, line, mode)
		}
	}
}

func TestSetLineMatchesHelm(t *testing.T) {
	lines := []string{
		// Flux's TestReplacePathValue cases.
		"outer.inner=value", "name={a,b,c}", `name=value1\,value2`, "merge.at.specific.path=true",
		"merge.at[2]=value", `nodeSelector.kubernetes\.io/role=master`,
		// Helm's documented --set forms and edge cases.
		"a=1,b=2", "a.b.c=null", "a=", "a", "a,b=1", "a.=x", ".a=x", "=x", "a[0]", "a[0].b=",
		"a[0].b=1", "a[1][2]=x", "a[-1]=x", "a[x]=y", "a[0]x=1", "a[0]=1,a[0]=2", "list[0]={a,b}",
		"a={x", "a={x}y", "a={x},b=1", "s.x=1", "s[0]=1", "n.x=1", "n[0]=1", "l[0][1]=9", "l[1].k=v",
		"a.b[5]=x", "a.b[2].c=false", "a.b[1].z=1", "nested.configuration[0]=value", "x=0", "x=01",
		"x=-5", "x=+5", "x=TRUE", "x=NuLL", "x=9223372036854775808", `x\=y=1`, `a\`, "a[0", "a[0]=",
		"a[65537]=x", "a[65536]=x", "é.ü=ß", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc.dd.ee=1",
		"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.bb.cc.dd=1", "a=b=c", "a={}", "a={,}",
	}
	for _, mode := range []setMode{setTyped, setString, setLiteral} {
		for _, line := range lines {
			t.Run(line, func(t *testing.T) { sameAsHelm(t, line, mode) })
		}
	}
}

func TestSetLineBounds(t *testing.T) {
	tests := []struct {
		name string
		line string
		want string
	}{
		{name: "list growth", line: strings.Repeat("a", 1) + strings.Repeat("[65536]", 20) + "=x", want: "lists grow by more than"},
		{name: "nesting", line: "a" + strings.Repeat("[0]", 1500) + "=x", want: "nested keys and indexes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := setLine(map[string]any{}, tt.line, setTyped, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSetLineErrorsDoNotQuoteValues(t *testing.T) {
	const canary = "CANARY-s3cr3t"
	for _, line := range []string{
		"a=x," + canary, "a=x," + canary + ".b", "a=x," + canary + "[0]z=1", "a=x," + canary + ",", "a={" + canary,
	} {
		err := setLine(map[string]any{}, line, setTyped, nil)
		require.Error(t, err, line)
		assert.NotContains(t, err.Error(), canary, line)
	}
}

func FuzzSetLine(f *testing.F) {
	for _, s := range []string{"a.b=c", "a[0].b={x,y}", `k\.x=1`, "a=1,b=2", "l[1][0]=z", "a.b[1].c=d", "=", "a[0"} {
		for m := range 3 {
			f.Add(s, uint8(m))
		}
	}
	f.Fuzz(func(t *testing.T, line string, m uint8) {
		if len(line) > 256 {
			return
		}
		sameAsHelm(t, line, setMode(m%3))
	})
}
