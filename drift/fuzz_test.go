package drift_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

// fuzzObject turns arbitrary JSON into an object of the given kind, or nil
// when the text is not a JSON object.
func fuzzObject(doc []byte, kind string) *unstructured.Unstructured {
	var m map[string]any
	if json.Unmarshal(doc, &m) != nil || m == nil {
		return nil
	}
	md, ok := m["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
	}
	md["name"] = "x"
	md["namespace"] = "ns"
	m["metadata"] = md
	m["apiVersion"] = "v1"
	m["kind"] = kind
	raw, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	if u.UnmarshalJSON(raw) != nil {
		return nil
	}
	return u
}

// FuzzDetect: for any pair of objects and any valid ignore pointer, Detect
// does not fail, and the correction it plans, applied by an independent
// RFC 6902 implementation, leaves nothing to correct.
func FuzzDetect(f *testing.F) {
	f.Add([]byte(`{"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"a","image":"a:1","ports":[{"containerPort":80}]}]}}}}`),
		[]byte(`{"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"b"},{"name":"a","image":"a:2"}]}}},"status":{"x":1}}`),
		"/spec/replicas", uint8(0))
	f.Add([]byte(`{"metadata":{"labels":{"a":"1","b":"2"}},"data":{"k":"v","e":""}}`),
		[]byte(`{"metadata":{"labels":{"a":"2","c":"3"},"managedFields":[{"manager":"m","fieldsV1":{"f:data":{"f:k":{}}}}]},"data":{"k":"w"}}`),
		"/metadata/labels/b", uint8(1))
	f.Add([]byte(`{"stringData":{"p":"secret"},"data":{"q":"cQ=="}}`), []byte(`{"data":{"p":"eA=="}}`), "", uint8(2))
	f.Add([]byte(`{"spec":{"args":["a","b"],"tolerations":[{"key":"k","value":"1"}]}}`), []byte(`{"spec":{"args":"a","tolerations":[{"key":"k"},{"key":"j"}]}}`),
		"/spec/tolerations/0/value", uint8(3))
	f.Add([]byte(`{"data":{"a":"2","b":"1"},"spec":{"template":{"spec":{"containers":[{"name":"a","image":"b"}]}}}}`),
		[]byte(`{"metadata":{"managedFields":[{"manager":"m","operation":"Apply","fieldsV1":{"f:data":{"f:c":{}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"x\"}":{}}}}}}}]},"data":{"a":"1","b":"2","c":"3"},"spec":{"template":{"spec":{"containers":[{"name":"x"},{"name":"a","image":"a"},{"name":"y"}]}}}}`),
		"/data/b", uint8(24))
	kinds := []string{"Deployment", "ConfigMap", "Secret", "Service"}
	f.Fuzz(func(t *testing.T, desiredDoc, liveDoc []byte, pointer string, mode uint8) {
		kind := kinds[int(mode)%len(kinds)]
		desired := fuzzObject(desiredDoc, kind)
		live := fuzzObject(liveDoc, kind)
		if desired == nil || live == nil {
			return
		}
		var rules []drift.IgnoreRule
		if _, err := drift.ParsePointer(pointer); err == nil && pointer != "" {
			rules = append(rules, drift.IgnoreRule{Paths: []string{pointer}})
		}
		opts := drift.Options{Mode: drift.ModeEnabled}
		if mode&4 != 0 {
			opts.Managers = []drift.ManagerRule{{Managers: []string{"m"}}}
		}
		if mode&8 != 0 {
			opts.Rationalize = true
		}
		if mode&16 != 0 {
			opts.FieldManager = "m"
		}
		cfg, err := drift.Compile(rules, opts)
		require.NoError(t, err)
		rep, err := drift.Detect([]*unstructured.Unstructured{desired}, []*unstructured.Unstructured{live}, cfg)
		require.NoError(t, err)
		_ = rep.String()
		if kind == "Secret" {
			for _, o := range rep.Objects {
				for _, c := range append(append([]drift.FieldChange(nil), o.Changes...), o.Ignored...) {
					if secretPath(c.Path) {
						requireMasked(t, c.Live)
						requireMasked(t, c.Desired)
					}
				}
				for _, op := range o.Patch {
					if secretPath(op.Path) {
						requireMasked(t, op.Value)
					}
				}
			}
		}
		cs := rep.Corrections()
		if len(cs) == 0 {
			require.False(t, rep.Drifted())
			return
		}
		require.Len(t, cs, 1)
		require.Equal(t, drift.ActionPatch, cs[0].Action)
		_ = cs[0].String()
		patched := patchObject(t, live, cs[0].Patch)
		again, err := drift.Compare(desired, patched, cfg)
		require.NoError(t, err)
		require.Equal(t, drift.StatusUnchanged, again.Status, "changes after correction: %+v\npatch: %+v", again.Changes, cs[0].Patch)
	})
}

// requireMasked fails unless v is nil, a mask, or a map of masks.
func requireMasked(t *testing.T, v any) {
	t.Helper()
	masked := func(x any) bool {
		s, ok := x.(string)
		return ok && strings.HasPrefix(s, "***")
	}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		for k, e := range x {
			require.True(t, masked(e), "value of %q not masked: %v", k, e)
		}
	default:
		require.True(t, masked(x), "value not masked: %v", x)
	}
}

func secretPath(p string) bool {
	for _, root := range []string{"/data", "/stringData"} {
		if p == root || strings.HasPrefix(p, root+"/") {
			return true
		}
	}
	return false
}
