package drift_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

func obj(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON([]byte(doc)))
	return u
}

func TestCompare(t *testing.T) {
	const head = `"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}`
	tests := []struct {
		name      string
		desired   string
		live      string
		rules     []drift.IgnoreRule
		wantPatch drift.Patch
		wantField []string
	}{
		{
			name:    "null and empty desired values that typed fields drop",
			desired: `{` + head + `,"spec":{"paused":false,"minReadySeconds":0,"template":{"metadata":{"creationTimestamp":null},"spec":{"nodeSelector":{},"containers":[{"name":"a","args":[]}]}}}}`,
			live:    `{` + head + `,"spec":{"template":{"metadata":{},"spec":{"containers":[{"name":"a"}]}}}}`,
		},
		{
			name:      "numbers compare by value, quantities canonically",
			desired:   `{` + head + `,"spec":{"replicas":2.0,"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":1,"memory":"1Gi"},"requests":{"cpu":"0.25"}}}]}}}}`,
			live:      `{` + head + `,"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"a","resources":{"limits":{"cpu":"1","memory":"1024Mi"},"requests":{"cpu":"300m"}}}]}}}}`,
			wantPatch: drift.Patch{{Op: "replace", Path: "/spec/template/spec/containers/0/resources/requests/cpu", Value: "0.25"}},
			wantField: []string{"spec.template.spec.containers[name=a].resources.requests.cpu"},
		},
		{
			name:      "keyed list: reordered is fine, a missing element is appended",
			desired:   `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"a","ports":[{"containerPort":80},{"containerPort":53,"protocol":"UDP"}]},{"name":"b","image":"b:1"}]}}}}`,
			live:      `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"sidecar"},{"name":"a","ports":[{"containerPort":53,"protocol":"TCP"},{"containerPort":80,"protocol":"TCP"}]}]}}}}`,
			wantPatch: drift.Patch{{Op: "add", Path: "/spec/template/spec/containers/1/ports/-", Value: map[string]any{"containerPort": int64(53), "protocol": "UDP"}}, {Op: "add", Path: "/spec/template/spec/containers/-", Value: map[string]any{"name": "b", "image": "b:1"}}},
			wantField: []string{"spec.template.spec.containers[name=a].ports[containerPort=53,protocol=UDP]", "spec.template.spec.containers[name=b]"},
		},
		{
			name:      "atomic list of other length is replaced",
			desired:   `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"a","args":["--x","--y"]}]}}}}`,
			live:      `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"a","args":["--x"]}]}}}}`,
			wantPatch: drift.Patch{{Op: "replace", Path: "/spec/template/spec/containers/0/args", Value: []any{"--x", "--y"}}},
			wantField: []string{"spec.template.spec.containers[name=a].args"},
		},
		{
			name:      "type change is replaced whole",
			desired:   `{` + head + `,"spec":{"strategy":{"type":"Recreate"}}}`,
			live:      `{` + head + `,"spec":{"strategy":"Recreate"}}`,
			wantPatch: drift.Patch{{Op: "replace", Path: "/spec/strategy", Value: map[string]any{"type": "Recreate"}}},
			wantField: []string{"spec.strategy"},
		},
		{
			name:      "labels map missing live is added",
			desired:   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","labels":{"a":"1"},"annotations":{}}}`,
			live:      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
			wantPatch: drift.Patch{{Op: "add", Path: "/metadata/labels", Value: map[string]any{"a": "1"}}},
			wantField: []string{"metadata.labels"},
		},
		{
			name:    "replacing a list leaves an ignored element field as live has it",
			desired: `{` + head + `,"spec":{"template":{"spec":{"tolerations":[{"key":"a","tolerationSeconds":30},{"key":"b"}]}}}}`,
			live:    `{` + head + `,"spec":{"template":{"spec":{"tolerations":[{"key":"a","tolerationSeconds":600}]}}}}`,
			rules:   []drift.IgnoreRule{{Paths: []string{"/spec/template/spec/tolerations/0/tolerationSeconds"}}},
			wantPatch: drift.Patch{{Op: "replace", Path: "/spec/template/spec/tolerations",
				Value: []any{map[string]any{"key": "a", "tolerationSeconds": int64(600)}, map[string]any{"key": "b"}}}},
			wantField: []string{"spec.template.spec.tolerations"},
		},
		{
			name:      "adding a map leaves ignored keys out",
			desired:   `{` + head + `,"spec":{"template":{"metadata":{"annotations":{"keep":"1","rollme":"x"}}}}}`,
			live:      `{` + head + `,"spec":{"template":{}}}`,
			rules:     []drift.IgnoreRule{{Paths: []string{"/spec/template/metadata/annotations/rollme"}}},
			wantPatch: drift.Patch{{Op: "add", Path: "/spec/template/metadata", Value: map[string]any{"annotations": map[string]any{"keep": "1"}}}},
			wantField: []string{"spec.template.metadata"},
		},
		{
			name:    "ignored pointer with an index counts in the desired list",
			desired: `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}}}`,
			live:    `{` + head + `,"spec":{"template":{"spec":{"containers":[{"name":"b","image":"b:2"},{"name":"a","image":"a:1"}]}}}}`,
			rules:   []drift.IgnoreRule{{Paths: []string{"/spec/template/spec/containers/1/image"}}},
		},
		{
			name:      "stringData compares as the stored base64 data",
			desired:   `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"a":"x","b":"y"}}`,
			live:      `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"data":{"a":"eA==","b":"eg=="}}`,
			wantPatch: drift.Patch{{Op: "replace", Path: "/data/b", Value: "***"}},
			wantField: []string{"data.b"},
		},
		{
			name:      "keys with special characters",
			desired:   `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"a/b~c":"1"}},"data":{"my key":"v"}}`,
			live:      `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","annotations":{"a/b~c":"2"}},"data":{}}`,
			wantPatch: drift.Patch{{Op: "add", Path: "/data/my key", Value: "v"}, {Op: "replace", Path: "/metadata/annotations/a~1b~0c", Value: "1"}},
			wantField: []string{`data["my key"]`, `metadata.annotations["a/b~c"]`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := drift.Compile(tt.rules, drift.Options{Mode: drift.ModeEnabled})
			require.NoError(t, err)
			desired, live := obj(t, tt.desired), obj(t, tt.live)
			res, err := drift.Compare(desired, live, cfg)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPatch, res.Patch)
			var fields []string
			for _, c := range res.Changes {
				fields = append(fields, c.Field)
			}
			assert.Equal(t, tt.wantField, fields)
			if len(tt.wantPatch) == 0 {
				assert.Equal(t, drift.StatusUnchanged, res.Status)
				return
			}
			assert.Equal(t, drift.StatusModified, res.Status)
			rep := &drift.Report{Mode: drift.ModeEnabled, Objects: []drift.ObjectResult{res}}
			patched := patchObject(t, live, rep.Corrections()[0].Patch)
			again, err := drift.Compare(desired, patched, cfg)
			require.NoError(t, err)
			assert.Equal(t, drift.StatusUnchanged, again.Status, "%v", again.Changes)
		})
	}
}

// The correction patch carries the real Secret values: applied to the
// live Secret it restores exactly the data the chart rendered, while the
// report only ever shows masks.
func TestSecretPatchRestoresRealData(t *testing.T) {
	desired := loadObjects(t, "podinfo-desired.yaml")
	live := loadObjects(t, "podinfo-live.yaml")
	secret := byName(live)["Secret/podinfo-auth"]
	want := secret.DeepCopy()
	secret.Object["data"] = map[string]any{"password": "aGFja2Vk", "extra": "eA=="}

	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	rep, err := drift.Detect(desired, live, cfg)
	require.NoError(t, err)
	o := find(t, rep, "Secret", "podinfo-auth")
	for _, op := range o.Patch {
		assert.Contains(t, []any{"***", "*** (after)"}, op.Value)
	}
	// Rendering the report twice must not change the correction.
	_ = rep.String()
	_ = rep.String()
	cs := rep.Corrections()
	require.Len(t, cs, 1)
	_ = cs[0].String()

	restored := patchObject(t, secret, cs[0].Patch)
	data, _, err := unstructured.NestedStringMap(restored.Object, "data")
	require.NoError(t, err)
	wantData, _, err := unstructured.NestedStringMap(want.Object, "data")
	require.NoError(t, err)
	assert.Equal(t, wantData["password"], data["password"])
	assert.Equal(t, wantData["token"], data["token"])
	assert.Equal(t, "eA==", data["extra"], "keys others added stay")
}

func TestCompareErrors(t *testing.T) {
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	dep := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`
	tests := []struct {
		name     string
		desired  *unstructured.Unstructured
		live     *unstructured.Unstructured
		sentinel error
		want     string
	}{
		{name: "kinds differ", desired: obj(t, dep), live: obj(t, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"web","namespace":"shop"}}`),
			sentinel: drift.ErrKindMismatch,
			want:     `live object StatefulSet.apps/shop/web: kind "StatefulSet": desired and live objects differ in identity: desired is Deployment.apps/shop/web`},
		{name: "groups differ", desired: obj(t, dep), live: obj(t, `{"apiVersion":"extensions/v1beta1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`),
			sentinel: drift.ErrKindMismatch},
		{name: "names differ", desired: obj(t, dep), live: obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"api","namespace":"shop"}}`),
			sentinel: drift.ErrKindMismatch},
		{name: "no kind", desired: &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "x"}}}, sentinel: drift.ErrInvalidObject,
			want: `desired object /x: kind "": invalid object`},
		{name: "no name", desired: obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"shop"}}`), sentinel: drift.ErrInvalidObject,
			want: `desired object ConfigMap/shop/: metadata.name "": invalid object`},
		{name: "nil desired", sentinel: drift.ErrInvalidObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := drift.Compare(tt.desired, tt.live, cfg)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.sentinel), err.Error())
			var oe *drift.ObjectError
			require.ErrorAs(t, err, &oe)
			if tt.want != "" {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
	_, err = drift.Compare(obj(t, dep), nil, nil)
	assert.ErrorIs(t, err, drift.ErrNoConfig)
}

func TestDetectErrors(t *testing.T) {
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	cm := func(name string) *unstructured.Unstructured {
		return obj(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"shop"}}`)
	}
	tests := []struct {
		name          string
		desired, live []*unstructured.Unstructured
		sentinel      error
		want          string
	}{
		{name: "duplicate desired", desired: []*unstructured.Unstructured{cm("a"), cm("b"), cm("a")}, sentinel: drift.ErrDuplicateObject,
			want: `desired[2] object ConfigMap/shop/a: metadata.name "a": duplicate object`},
		{name: "duplicate live", live: []*unstructured.Unstructured{cm("a"), cm("a")}, sentinel: drift.ErrDuplicateObject},
		{name: "live without kind", live: []*unstructured.Unstructured{cm("a"), {Object: map[string]any{"apiVersion": "v1", "metadata": map[string]any{"name": "a"}}}},
			sentinel: drift.ErrInvalidObject, want: `live[1] object /a: kind "": invalid object`},
		{name: "desired without apiVersion", desired: []*unstructured.Unstructured{{Object: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"name": "a"}}}},
			sentinel: drift.ErrInvalidObject},
		{name: "nil desired", desired: []*unstructured.Unstructured{nil}, sentinel: drift.ErrInvalidObject,
			want: `desired[0] object /: object "nil": invalid object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := drift.Detect(tt.desired, tt.live, cfg)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tt.sentinel), err.Error())
			if tt.want != "" {
				assert.EqualError(t, err, tt.want)
			}
		})
	}
	_, err = drift.Detect(nil, nil, nil)
	assert.ErrorIs(t, err, drift.ErrNoConfig)
}

// Targets are anchored regexes and selectors, matched on the desired object.
func TestSelectorTargets(t *testing.T) {
	dep := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-1","namespace":"shop","labels":{"app":"web","tier":"front"},"annotations":{"owner":"team-a"}},"spec":{"replicas":1}}`)
	tests := []struct {
		name   string
		target drift.Selector
		match  bool
	}{
		{name: "kind", target: drift.Selector{Kind: "Deployment"}, match: true},
		{name: "kind prefix does not match", target: drift.Selector{Kind: "Deploy"}, match: false},
		{name: "kind alternation", target: drift.Selector{Kind: "StatefulSet|Deployment"}, match: true},
		{name: "group", target: drift.Selector{Group: "apps"}, match: true},
		{name: "core group does not match apps", target: drift.Selector{Group: "^$|core"}, match: false},
		{name: "version", target: drift.Selector{Version: "v1"}, match: true},
		{name: "name regex", target: drift.Selector{Name: "web-[0-9]+"}, match: true},
		{name: "name regex anchored", target: drift.Selector{Name: "web"}, match: false},
		{name: "namespace", target: drift.Selector{Namespace: "shop"}, match: true},
		{name: "other namespace", target: drift.Selector{Namespace: "kube-system"}, match: false},
		{name: "label selector", target: drift.Selector{LabelSelector: "app=web,tier in (front)"}, match: true},
		{name: "label selector mismatch", target: drift.Selector{LabelSelector: "app=api"}, match: false},
		{name: "annotation selector", target: drift.Selector{AnnotationSelector: "owner=team-a"}, match: true},
		{name: "annotation selector mismatch", target: drift.Selector{AnnotationSelector: "owner!=team-a"}, match: false},
		{name: "all fields", target: drift.Selector{Group: "apps", Version: "v1", Kind: "Deployment", Name: "web-.*", Namespace: "shop", LabelSelector: "app", AnnotationSelector: "owner"}, match: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			cfg, err := drift.Compile([]drift.IgnoreRule{{Paths: []string{""}, Target: &target}}, drift.Options{Mode: drift.ModeWarn})
			require.NoError(t, err)
			rep, err := drift.Detect([]*unstructured.Unstructured{dep}, nil, cfg)
			require.NoError(t, err)
			want := drift.StatusMissing
			if tt.match {
				want = drift.StatusExcluded
			}
			assert.Equal(t, want, rep.Objects[0].Status)
			assert.Equal(t, tt.match, len(rep.Unmatched()) == 0)
		})
	}
}

// Owners are found through every kind of fieldsV1 list element key.
func TestChangeManagers(t *testing.T) {
	cfg, err := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	require.NoError(t, err)
	desired := obj(t, `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t"},
		"spec":{"set":["a","c"],"rules":[{"verbs":["get"]}],"containers":[{"name":"app","image":"app:1"}],"plain":"x","gone":"y"}}`)
	live := obj(t, `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t","managedFields":[
		{"manager":"setter","operation":"Update","fieldsV1":{"f:spec":{"f:set":{"v:\"b\"":{}}}}},
		{"manager":"indexer","operation":"Update","fieldsV1":{"f:spec":{"f:rules":{"i:0":{"f:verbs":{}}}}}},
		{"manager":"keyed","operation":"Apply","fieldsV1":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}},
		{"manager":"plain-a","operation":"Update","fieldsV1":{"f:spec":{"f:plain":{}}}},
		{"manager":"plain-b","operation":"Apply","fieldsV1":{"f:spec":{"f:plain":{}}}},
		{"manager":"no-fields","operation":"Update"}]},
		"spec":{"set":["a","b"],"rules":[{"verbs":["list"]}],"containers":[{"name":"app","image":"app:2"}],"plain":"z"}}`)
	res, err := drift.Compare(desired, live, cfg)
	require.NoError(t, err)
	got := map[string][]string{}
	for _, c := range res.Changes {
		got[c.Field] = c.Managers
	}
	assert.Equal(t, map[string][]string{
		"spec.set[1]":                     {"setter"},
		"spec.rules[0].verbs[0]":          {"indexer"},
		"spec.containers[name=app].image": {"keyed"},
		"spec.plain":                      {"plain-a", "plain-b"},
		"spec.gone":                       nil,
	}, got)
}
