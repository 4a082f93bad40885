package drift_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/helmfleet/helmfleet/drift"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/golden")

// loadObjects reads a multi-document YAML fixture into unstructured
// objects, with integers as int64 as the API machinery decodes them.
func loadObjects(t testing.TB, name string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
	var out []*unstructured.Unstructured
	for {
		var doc json.RawMessage
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(doc) == 0 || string(doc) == "null" {
			continue
		}
		u := &unstructured.Unstructured{}
		require.NoError(t, u.UnmarshalJSON(doc))
		out = append(out, u)
	}
}

// byName indexes objects by "Kind/name".
func byName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		m[o.GetKind()+"/"+o.GetName()] = o
	}
	return m
}

// container returns the named container of a Deployment for mutation.
func container(t testing.TB, u *unstructured.Unstructured, name string) map[string]any {
	t.Helper()
	list, _, err := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	for i, c := range list {
		if c.(map[string]any)["name"] == name {
			// NestedSlice copies; reach the original.
			return u.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[i].(map[string]any)
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// takeOwnership records that manager changed the field at the fieldsV1
// path (as a real update does: the field leaves every other manager's set).
func takeOwnership(u *unstructured.Unstructured, manager, subresource string, path ...string) {
	md := u.Object["metadata"].(map[string]any)
	entries, _ := md["managedFields"].([]any)
	for _, e := range entries {
		set, _ := e.(map[string]any)["fieldsV1"].(map[string]any)
		for i, p := range path {
			next, ok := set[p].(map[string]any)
			if !ok {
				break
			}
			if i == len(path)-1 {
				delete(set, p)
			}
			set = next
		}
	}
	set := map[string]any{}
	root := set
	for _, p := range path {
		next := map[string]any{}
		set[p] = next
		set = next
	}
	entry := map[string]any{"manager": manager, "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": root}
	if subresource != "" {
		entry["subresource"] = subresource
	}
	md["managedFields"] = append(entries, entry)
}

// applyCorrections returns live as the cluster would hold it after the
// corrections: patches applied with an independent RFC 6902
// implementation, missing objects created.
func applyCorrections(t testing.TB, live []*unstructured.Unstructured, cs []drift.Correction) []*unstructured.Unstructured {
	t.Helper()
	out := make([]*unstructured.Unstructured, 0, len(live))
	patches := map[drift.ObjectRef]drift.Patch{}
	for _, c := range cs {
		switch c.Action {
		case drift.ActionCreate:
			out = append(out, c.Create.DeepCopy())
		case drift.ActionPatch:
			patches[drift.ObjectRef{Group: c.Object.Group, Kind: c.Object.Kind, Namespace: c.Object.Namespace, Name: c.Object.Name}] = c.Patch
		}
	}
	for _, l := range live {
		gvk := l.GroupVersionKind()
		p, ok := patches[drift.ObjectRef{Group: gvk.Group, Kind: gvk.Kind, Namespace: l.GetNamespace(), Name: l.GetName()}]
		if !ok {
			out = append(out, l)
			continue
		}
		out = append(out, patchObject(t, l, p))
	}
	return out
}

func patchObject(t testing.TB, l *unstructured.Unstructured, p drift.Patch) *unstructured.Unstructured {
	t.Helper()
	rawPatch, err := json.Marshal(p)
	require.NoError(t, err)
	decoded, err := jsonpatch.DecodePatch(rawPatch)
	require.NoError(t, err)
	doc, err := l.MarshalJSON()
	require.NoError(t, err)
	patched, err := decoded.Apply(doc)
	require.NoError(t, err, "patch %s", rawPatch)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(patched))
	return u
}

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), got)
}
