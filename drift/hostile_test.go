package drift_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

// canary is a Secret value that must never be printed. Quotes, backslashes and
// commas change under %q, %#v and JSON escaping, so leaks are looked for in every
// escaped form, and its core, which no escaping changes.
const (
	canaryCore = "CaNaRy7f3e"
	canary     = `pass"` + canaryCore + `\word,"x\"y`
)

// canaryForms are the ways the canary may show up in output.
func canaryForms() []string {
	jsonForm, _ := json.Marshal(canary)
	forms := []string{
		canaryCore,
		base64.StdEncoding.EncodeToString([]byte(canary)),
		strconv.Quote(canary),
		string(jsonForm),
	}
	// The base64 of the core alone, at each alignment, catches it inside longer data.
	for pad := range 3 {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("-", pad) + canaryCore))
		forms = append(forms, enc[4*((pad+2)/3):len(enc)-4])
	}
	return forms
}

// requireNoCanary fails if any output shows the canary in any form.
func requireNoCanary(t testing.TB, what, out string) {
	t.Helper()
	for _, form := range canaryForms() {
		if form == "" {
			continue
		}
		require.NotContains(t, out, form, "%s shows the Secret's data", what)
	}
}

// secretPair is a Secret whose desired data and stringData hold the canary, and its
// live copy with other values.
func secretPair() (desired, live *unstructured.Unstructured) {
	desired = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "shop"},
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(canary)), "raw": canary},
		"stringData": map[string]any{"token": canary},
	}}
	live = &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "shop"},
		"data":     map[string]any{"password": "b2xk", "raw": "b2xk", "token": "b2xk"},
	}}
	return desired, live
}

// printings renders v every way a caller might log it.
func printings(t testing.TB, v any) map[string]string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return map[string]string{
		"%v":   fmt.Sprintf("%v", v),
		"%+v":  fmt.Sprintf("%+v", v),
		"%#v":  fmt.Sprintf("%#v", v),
		"%s":   fmt.Sprintf("%s", v),
		"%d":   fmt.Sprintf("%d", v),
		"%x":   fmt.Sprintf("%x", v),
		"%q":   fmt.Sprintf("%q", v),
		"json": string(raw),
	}
}

// A report, its results and its corrections' descriptions never show a Secret's
// data, however they are printed; the corrections' patches keep the real values.
func TestSecretDataNeverPrinted(t *testing.T) {
	desired, live := secretPair()
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		live []*unstructured.Unstructured
	}{
		{name: "modified", live: []*unstructured.Unstructured{live}},
		{name: "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := drift.Detect([]*unstructured.Unstructured{desired}, tc.live, cfg)
			require.NoError(t, err)
			require.True(t, rep.Drifted())
			values := map[string]any{
				"*Report":        rep,
				"Report":         *rep,
				"ObjectResult":   rep.Objects[0],
				"*ObjectResult":  &rep.Objects[0],
				"[]ObjectResult": rep.Objects,
			}
			for name, v := range values {
				for verb, out := range printings(t, v) {
					requireNoCanary(t, name+" "+verb, out)
				}
			}
			requireNoCanary(t, "Report.String", rep.String())
			cs := rep.Corrections()
			require.Len(t, cs, 1)
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%d", "%x", "%q"} {
				requireNoCanary(t, "Correction "+verb, fmt.Sprintf(verb, cs[0]))
				requireNoCanary(t, "[]Correction "+verb, fmt.Sprintf(verb, cs))
			}
		})
	}

	// The correction still restores the real data.
	rep, err := drift.Detect([]*unstructured.Unstructured{desired}, []*unstructured.Unstructured{live}, cfg)
	require.NoError(t, err)
	raw, err := json.Marshal(rep.Corrections()[0].Patch)
	require.NoError(t, err)
	assert.Contains(t, string(raw), base64.StdEncoding.EncodeToString([]byte(canary)))
}

// A Correction printed with %#v looks like Go syntax, with Secret data masked.
func TestCorrectionGoString(t *testing.T) {
	c := drift.Correction{Object: drift.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "shop", Name: "db"},
		Action: drift.ActionPatch, Patch: drift.Patch{{Op: "replace", Path: "/data/password", Value: "c2VjcmV0"}}}
	assert.Equal(t, `drift.Correction{Object:drift.ObjectRef{Group:"", Version:"v1", Kind:"Secret", Namespace:"shop", Name:"db"}, `+
		`Action:"patch", Create:(*unstructured.Unstructured)(nil), Patch:drift.Patch{drift.Operation{Op:"replace", Path:"/data/password", Value:"***"}}}`,
		fmt.Sprintf("%#v", c))
	c.Object.Kind = "ConfigMap"
	assert.Contains(t, fmt.Sprintf("%#v", c), `Value:"c2VjcmV0"`, "only Secrets are masked")
}

// Elements of keyed lists are named by their key in Field; inside a Secret's data
// (which the API server would not even accept as a list) they are named by index, as
// the key is data too.
func TestSecretFieldHidesKeyedListLabels(t *testing.T) {
	mk := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "shop"},
			"data": map[string]any{"k": map[string]any{"containers": []any{map[string]any{"name": name, "image": name}}}},
		}}
	}
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	rep, err := drift.Detect([]*unstructured.Unstructured{mk(canary)}, []*unstructured.Unstructured{mk("other")}, cfg)
	require.NoError(t, err)
	require.Len(t, rep.Objects[0].Changes, 1)
	assert.Equal(t, `data.k.containers[0]`, rep.Objects[0].Changes[0].Field)
	requireNoCanary(t, "report", rep.String())
}

// Keyed lists longer than MaxKeyedListLength and values nested deeper than MaxDepth
// are refused with a *LimitError naming the object and the path.
func TestDetectLimits(t *testing.T) {
	deployment := func(containers []any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "shop"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}},
		}}
	}
	containers := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"name": "c" + strconv.Itoa(i)}
		}
		return out
	}
	// nest returns a value n maps deep: {"a":{"a":…{"a":"x"}}}.
	nest := func(n int) any {
		var v any = "x"
		for range n {
			v = map[string]any{"a": v}
		}
		return v
	}
	withField := func(u *unstructured.Unstructured, v any) *unstructured.Unstructured {
		u = u.DeepCopy()
		u.Object["spec"].(map[string]any)["deep"] = v
		return u
	}
	deepPath := func(n int) string { return "/spec/deep" + strings.Repeat("/a", n) }
	small := deployment(containers(2))
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	tests := []struct {
		name          string
		desired, live *unstructured.Unstructured
		want          drift.LimitError
	}{
		{
			name: "long desired list", desired: deployment(containers(drift.MaxKeyedListLength + 1)), live: small,
			want: drift.LimitError{Side: "desired", Index: 1, Path: "/spec/template/spec/containers",
				Limit: drift.LimitKeyedList, Max: drift.MaxKeyedListLength, Actual: drift.MaxKeyedListLength + 1},
		},
		{
			name: "long live list", desired: small, live: deployment(containers(drift.MaxKeyedListLength + 2)),
			want: drift.LimitError{Side: "live", Index: 0, Path: "/spec/template/spec/containers",
				Limit: drift.LimitKeyedList, Max: drift.MaxKeyedListLength, Actual: drift.MaxKeyedListLength + 2},
		},
		{
			// spec/deep is 2 levels down; the value at depth MaxDepth+1 is refused.
			name: "deep desired, compared", desired: withField(small, nest(drift.MaxDepth)), live: withField(small, nest(drift.MaxDepth)),
			want: drift.LimitError{Side: "desired", Index: 1, Path: deepPath(drift.MaxDepth - 1),
				Limit: drift.LimitDepth, Max: drift.MaxDepth, Actual: drift.MaxDepth + 1},
		},
		{
			name: "deep desired, added", desired: withField(small, nest(drift.MaxDepth)), live: small,
			want: drift.LimitError{Side: "desired", Index: 1, Path: deepPath(drift.MaxDepth - 1),
				Limit: drift.LimitDepth, Max: drift.MaxDepth, Actual: drift.MaxDepth + 1},
		},
		{
			name: "deep live value in a change", desired: withField(small, "flat"), live: withField(small, nest(drift.MaxDepth)),
			want: drift.LimitError{Side: "live", Index: 0, Path: deepPath(drift.MaxDepth - 1),
				Limit: drift.LimitDepth, Max: drift.MaxDepth, Actual: drift.MaxDepth + 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": "a", "namespace": "shop"}}}
			// The object at fault is desired[1] and live[0].
			_, err := drift.Detect([]*unstructured.Unstructured{other, tt.desired}, []*unstructured.Unstructured{tt.live, other}, cfg)
			require.Error(t, err)
			assert.ErrorIs(t, err, drift.ErrTooLarge)
			var le *drift.LimitError
			require.ErrorAs(t, err, &le)
			want := tt.want
			want.Object = drift.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
			assert.Equal(t, want, *le)
			assert.Contains(t, err.Error(), want.Side+"["+strconv.Itoa(want.Index)+"] object Deployment.apps/shop/web: ")
			assert.Less(t, len(err.Error()), 400, "a deep path is shortened: %s", err)

			_, err = drift.Compare(tt.desired, tt.live, cfg)
			require.ErrorAs(t, err, &le)
			assert.Equal(t, -1, le.Index)
		})
	}
	// At the limits, all is well.
	ok := withField(deployment(containers(drift.MaxKeyedListLength)), nest(drift.MaxDepth-2))
	_, err = drift.Compare(ok, ok, cfg)
	require.NoError(t, err)
}

// Where several places exceed a limit, the error names the first path, whatever the
// order of map iteration.
func TestLimitErrorIsDeterministic(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{},
	}}
	for _, k := range []string{"q", "b", "x", "c", "m"} {
		var v any = "x"
		for range drift.MaxDepth {
			v = []any{v}
		}
		u.Object["spec"].(map[string]any)[k] = v
	}
	live := u.DeepCopy()
	live.Object["spec"] = map[string]any{}
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	for range 20 {
		_, err := drift.Compare(u, live, cfg)
		var le *drift.LimitError
		require.ErrorAs(t, err, &le)
		require.Equal(t, "/spec/b"+strings.Repeat("/0", drift.MaxDepth-1), le.Path)
	}
	assert.True(t, errors.Is(err, drift.ErrTooLarge) || err == nil)
}

// withCanary replaces every string under a Secret's data and stringData with the
// canary, and adds data keys holding it, base64-encoded as the API stores it.
func withCanary(u *unstructured.Unstructured, keys []string) {
	var replace func(v any) any
	replace = func(v any) any {
		switch x := v.(type) {
		case string:
			return canary
		case map[string]any:
			for k, e := range x {
				x[k] = replace(e)
			}
		case []any:
			for i, e := range x {
				x[i] = replace(e)
			}
		}
		return v
	}
	for _, f := range []string{"data", "stringData"} {
		if v, ok := u.Object[f]; ok {
			u.Object[f] = replace(v)
		}
	}
	if len(keys) == 0 {
		return
	}
	data, ok := u.Object["data"].(map[string]any)
	if !ok {
		data = map[string]any{}
		u.Object["data"] = data
	}
	for _, k := range keys {
		data[k] = base64.StdEncoding.EncodeToString([]byte(canary))
	}
}

// FuzzSecretCanary: whatever the two Secrets hold and whatever the rules, the
// canary in their data appears in no output: not in the report's String, nor
// printed with any verb or marshalled, nor in the corrections' descriptions, nor in
// an error.
func FuzzSecretCanary(f *testing.F) {
	f.Add([]byte(`{"data":{"a":"x","b":"y"},"stringData":{"c":"z"}}`), []byte(`{"data":{"a":"q"}}`), "a,b,new", "", uint8(0))
	f.Add([]byte(`{"data":{"k":{"containers":[{"name":"n","image":"i"}]}}}`), []byte(`{"data":{"k":{"containers":[{"name":"m"}]}}}`), "", "/data/k", uint8(1))
	f.Add([]byte(`{"data":"flat","stringData":{"p":"s","q":1}}`), []byte(`{"data":["x"],"metadata":{"managedFields":[{"manager":"m","fieldsV1":{"f:data":{}}}]}}`), "z", "/stringData/p", uint8(2))
	f.Add([]byte(`{"data":{"env":[{"name":"a","value":"b"},{"name":"c"}]},"type":"Opaque"}`), []byte(`{"data":{"env":[{"name":"c"},{"name":"a","value":"d"}]}}`), `"quoted",back\slash`, "/data/env/0", uint8(3))
	f.Add([]byte(`{"data":{}}`), []byte(`{}`), "x,,y", "", uint8(4))
	f.Fuzz(func(t *testing.T, desiredDoc, liveDoc []byte, keys, pointer string, mode uint8) {
		if strings.Contains(string(desiredDoc)+string(liveDoc)+keys+pointer, canaryCore) {
			return
		}
		desired := fuzzObject(desiredDoc, "Secret")
		live := fuzzObject(liveDoc, "Secret")
		if desired == nil || live == nil {
			return
		}
		var keyList []string
		if keys != "" {
			keyList = strings.Split(keys, ",")
		}
		withCanary(desired, keyList)
		withCanary(live, keyList[:len(keyList)/2])
		var rules []drift.IgnoreRule
		if _, err := drift.ParsePointer(pointer); err == nil && pointer != "" {
			rules = append(rules, drift.IgnoreRule{Paths: []string{pointer}})
		}
		opts := drift.Options{Mode: drift.ModeEnabled}
		if mode&1 != 0 {
			opts.Managers = []drift.ManagerRule{{Managers: []string{"m"}}}
		}
		cfg, err := drift.Compile(rules, opts)
		require.NoError(t, err)
		var liveList []*unstructured.Unstructured
		if mode&2 == 0 {
			liveList = []*unstructured.Unstructured{live}
		}
		rep, err := drift.Detect([]*unstructured.Unstructured{desired}, liveList, cfg)
		if err != nil {
			requireNoCanary(t, "error", err.Error())
			requireNoCanary(t, "error %+v", fmt.Sprintf("%+v", err))
			return
		}
		requireNoCanary(t, "Report.String", rep.String())
		for name, v := range map[string]any{"*Report": rep, "Report": *rep, "[]ObjectResult": rep.Objects} {
			for verb, out := range printings(t, v) {
				requireNoCanary(t, name+" "+verb, out)
			}
		}
		for _, c := range rep.Corrections() {
			for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
				requireNoCanary(t, "Correction "+verb, fmt.Sprintf(verb, c))
			}
		}
		if mode&4 != 0 {
			res, err := drift.Compare(desired, live, cfg)
			require.NoError(t, err)
			for verb, out := range printings(t, res) {
				requireNoCanary(t, "Compare "+verb, out)
			}
		}
	})
}

// FuzzCompile: any ignore rule, manager rule and extra selector either compiles, and
// then serves Detect, or is refused with a *RuleError naming the rule and the field
// that holds the bad value.
func FuzzCompile(f *testing.F) {
	f.Add("/spec/replicas", "Deployment", "web-.*", "app=web", "", "manager", "enabled")
	f.Add("", "", "", "", "tier in (a,b)", "", "warn")
	f.Add("/a~2", "(", "[", "a==b==c", "!x", "m", "")
	f.Add("/data/x\n/metadata/labels/a~1b", "Secret|ConfigMap", "(?i)DB", "app notin (x)", "owner", "kubectl,", "disabled")
	f.Add("no-slash", "K", "n", "=", ",", ",", "bogus")
	f.Fuzz(func(t *testing.T, paths, kind, name, labels, annotations, managers, mode string) {
		sel := &drift.Selector{Kind: kind, Name: name, LabelSelector: labels, AnnotationSelector: annotations}
		rules := []drift.IgnoreRule{{Paths: strings.Split(paths, "\n"), Target: sel}}
		opts := drift.Options{Mode: drift.Mode(mode), Extra: &drift.Selector{LabelSelector: labels}}
		if managers != "" {
			opts.Managers = []drift.ManagerRule{{Managers: strings.Split(managers, ","), Target: sel}}
		}
		cfg, err := drift.Compile(rules, opts)
		if err != nil {
			var re *drift.RuleError
			require.ErrorAs(t, err, &re)
			require.NotEmpty(t, re.Rule)
			require.NotEmpty(t, re.Field)
			require.True(t, errors.Is(err, drift.ErrInvalidPointer) || errors.Is(err, drift.ErrInvalidSelector) ||
				errors.Is(err, drift.ErrInvalidRule), "unknown error kind: %v", err)
			return
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apps/v1", "kind": "Deployment",
			"metadata": map[string]any{"name": "web-1", "namespace": "shop",
				"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"owner": "a"}},
			"spec": map[string]any{"replicas": int64(2)},
		}}
		live := obj.DeepCopy()
		live.Object["spec"].(map[string]any)["replicas"] = int64(3)
		rep, err := drift.Detect([]*unstructured.Unstructured{obj}, []*unstructured.Unstructured{live}, cfg)
		require.NoError(t, err)
		_ = rep.String()
		if cfg.Mode() != drift.ModeDisabled {
			require.Len(t, rep.Rules, len(rules)+len(opts.Managers))
		}
	})
}
