package drift_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

// detectOne runs Detect on one pair and returns its result and the live
// object after the corrections.
func detectOne(t *testing.T, desired, live string, rules []drift.IgnoreRule, opts drift.Options) (drift.ObjectResult, *unstructured.Unstructured) {
	t.Helper()
	opts.Mode = drift.ModeEnabled
	cfg, err := drift.Compile(rules, opts)
	require.NoError(t, err)
	l := obj(t, live)
	rep, err := drift.Detect([]*unstructured.Unstructured{obj(t, desired)}, []*unstructured.Unstructured{l}, cfg)
	require.NoError(t, err)
	require.Len(t, rep.Objects, 1)
	after := applyCorrections(t, []*unstructured.Unstructured{l}, rep.Corrections())
	return rep.Objects[0], after[0]
}

func TestRationalize(t *testing.T) {
	const cm = `"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"n"`
	const dep = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}`
	tests := []struct {
		name        string
		desired     string
		live        string
		rules       []drift.IgnoreRule
		wantChanges []drift.FieldChange
		// wantAfter is a field of live after the corrections.
		wantAfter map[string]any
	}{
		{
			name:    "every key of a small map changed: one replace, keeping the keys others added",
			desired: `{` + cm + `},"data":{"a":"2","b":"1"}}`,
			live:    `{` + cm + `},"data":{"a":"1","b":"2","c":"kept"}}`,
			wantChanges: []drift.FieldChange{{Field: "data", Path: "/data", Op: "replace",
				Live: map[string]any{"a": "1", "b": "2", "c": "kept"}, Desired: map[string]any{"a": "2", "b": "1", "c": "kept"}}},
			wantAfter: map[string]any{"a": "2", "b": "1", "c": "kept"},
		},
		{
			name:        "one change in a larger map stays one change",
			desired:     `{` + cm + `},"data":{"a":"2"}}`,
			live:        `{` + cm + `},"data":{"a":"1","b":"unrelated and long enough"}}`,
			wantChanges: []drift.FieldChange{{Field: "data.a", Path: "/data/a", Op: "replace", Live: "1", Desired: "2"}},
			wantAfter:   map[string]any{"a": "2", "b": "unrelated and long enough"},
		},
		{
			name:    "a map holding an ignored path is never replaced whole",
			desired: `{` + cm + `},"data":{"a":"2","b":"1","x":"mine"}}`,
			live:    `{` + cm + `},"data":{"a":"1","b":"2","x":"theirs"}}`,
			rules:   []drift.IgnoreRule{{Paths: []string{"/data/x"}}},
			wantChanges: []drift.FieldChange{
				{Field: "data.a", Path: "/data/a", Op: "replace", Live: "1", Desired: "2"},
				{Field: "data.b", Path: "/data/b", Op: "replace", Live: "2", Desired: "1"},
			},
			wantAfter: map[string]any{"a": "2", "b": "1", "x": "theirs"},
		},
		{
			name:    "labels may be replaced, metadata never",
			desired: `{` + cm + `,"labels":{"a":"2","b":"1"},"annotations":{"c":"2","d":"1"}}}`,
			live:    `{` + cm + `,"labels":{"a":"1","b":"2"},"annotations":{"c":"1","d":"2"}}}`,
			wantChanges: []drift.FieldChange{
				{Field: "metadata.annotations", Path: "/metadata/annotations", Op: "replace",
					Live: map[string]any{"c": "1", "d": "2"}, Desired: map[string]any{"c": "2", "d": "1"}},
				{Field: "metadata.labels", Path: "/metadata/labels", Op: "replace",
					Live: map[string]any{"a": "1", "b": "2"}, Desired: map[string]any{"a": "2", "b": "1"}},
			},
		},
		{
			name:    "a list element replaced whole where shorter",
			desired: `{` + dep + `,"spec":{"template":{"spec":{"containers":[{"name":"a","image":"b","args":["1","2"]}]}}}}`,
			live:    `{` + dep + `,"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a","args":["3","4"]}]}}}}`,
			wantChanges: []drift.FieldChange{{Field: "spec.template.spec.containers[name=a]", Path: "/spec/template/spec/containers/0", Op: "replace",
				Live:    map[string]any{"name": "a", "image": "a", "args": []any{"3", "4"}},
				Desired: map[string]any{"name": "a", "image": "b", "args": []any{"1", "2"}}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, after := detectOne(t, tt.desired, tt.live, tt.rules, drift.Options{Rationalize: true})
			require.Equal(t, drift.StatusModified, res.Status)
			assert.Equal(t, tt.wantChanges, res.Changes)
			if tt.wantAfter != nil {
				assert.Equal(t, tt.wantAfter, after.Object["data"])
			}
			// Without the option, each field is its own change.
			plain, _ := detectOne(t, tt.desired, tt.live, tt.rules, drift.Options{})
			for _, c := range plain.Changes {
				assert.NotContains(t, []string{"/data", "/metadata/labels", "/spec/template/spec/containers/0"}, c.Path)
			}
		})
	}
}

func TestRationalizeMasksEverySecretValue(t *testing.T) {
	const secret = `"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"n"}`
	res, after := detectOne(t,
		`{`+secret+`,"data":{"a":"Mg==","b":"MQ==","same":"c2FtZQ=="}}`,
		`{`+secret+`,"data":{"a":"MQ==","b":"Mg==","same":"c2FtZQ=="}}`, nil, drift.Options{Rationalize: true})
	require.Len(t, res.Changes, 1)
	c := res.Changes[0]
	assert.Equal(t, "/data", c.Path)
	// Flux's maskMap leaves the new value of an unchanged key as it is.
	assert.Equal(t, map[string]any{"a": "*** (before)", "b": "*** (before)", "same": "***"}, c.Live)
	assert.Equal(t, map[string]any{"a": "*** (after)", "b": "*** (after)", "same": "***"}, c.Desired)
	assert.Equal(t, map[string]any{"a": "Mg==", "b": "MQ==", "same": "c2FtZQ=="}, after.Object["data"])
}

func TestFieldManagerApplyRemoves(t *testing.T) {
	const dep = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"`
	containers := `"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a"},{"name":"b","image":"b"},{"name":"c","image":"c","env":[{"name":"X","value":"1"}]},{"name":"d","image":"d"}]}}}`
	fields := func(names ...string) map[string]any {
		set := map[string]any{}
		for _, n := range names {
			set[`k:{"name":"`+n+`"}`] = map[string]any{".": map[string]any{}, "f:name": map[string]any{}, "f:image": map[string]any{}}
		}
		return map[string]any{"f:spec": map[string]any{"f:template": map[string]any{"f:spec": map[string]any{"f:containers": set}}}}
	}
	entry := func(manager, op string, set map[string]any) map[string]any {
		return map[string]any{"manager": manager, "operation": op, "fieldsType": "FieldsV1", "fieldsV1": set}
	}
	desired := `{` + dep + `},"spec":{"template":{"spec":{"containers":[{"name":"c","image":"c"},{"name":"a","image":"a"}]}}}}`
	tests := []struct {
		name    string
		entries []any
		want    []string // paths of the changes
		after   []any    // names of the containers left
	}{
		{
			name:    "elements the field manager alone applied go, highest index first",
			entries: []any{entry("helm-controller", "Apply", fields("a", "b", "c", "d"))},
			want:    []string{"/spec/template/spec/containers/1", "/spec/template/spec/containers/3"},
			after:   []any{"a", "c"},
		},
		{
			name:    "fields the field manager owns by Update (Helm's create) stay",
			entries: []any{entry("helm-controller", "Update", fields("a", "b", "c", "d"))},
		},
		{
			name:    "an element another manager also owns stays",
			entries: []any{entry("helm-controller", "Apply", fields("a", "b", "c", "d")), entry("kubectl-edit", "Update", fields("d"))},
			want:    []string{"/spec/template/spec/containers/1"},
			after:   []any{"a", "c", "d"},
		},
		{
			name:    "another manager's Apply is not the field manager's",
			entries: []any{entry("other", "Apply", fields("a", "b", "c", "d"))},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := obj(t, `{`+dep+`},`+containers+`}`)
			require.NoError(t, unstructured.SetNestedSlice(l.Object, tt.entries, "metadata", "managedFields"))
			raw, err := l.MarshalJSON()
			require.NoError(t, err)
			res, after := detectOne(t, desired, string(raw), nil, drift.Options{FieldManager: "helm-controller"})
			var paths []string
			for _, c := range res.Changes {
				assert.Equal(t, "remove", c.Op)
				paths = append(paths, c.Path)
			}
			assert.Equal(t, tt.want, paths)
			if tt.after == nil {
				assert.Equal(t, drift.StatusUnchanged, res.Status)
				return
			}
			got, _, err := unstructured.NestedSlice(after.Object, "spec", "template", "spec", "containers")
			require.NoError(t, err)
			var names []any
			for _, c := range got {
				names = append(names, c.(map[string]any)["name"])
			}
			assert.Equal(t, tt.after, names)
		})
	}
}
