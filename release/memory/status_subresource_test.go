package memory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

var gadgetGVK = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}

// gadgetCRD serves Gadget, with the status subresource when status is set.
func gadgetCRD(status bool) *unstructured.Unstructured {
	version := map[string]any{"name": "v1", "served": true, "storage": true}
	if status {
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.com"},
		"spec": map[string]any{
			"group": "example.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Gadget", "plural": "gadgets"},
			"versions": []any{version},
		},
	}}
}

// withSpecStatus returns an object of gvk apps/x with the given spec and
// status fields (either may be nil).
func withSpecStatus(gvk schema.GroupVersionKind, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace("apps")
	u.SetName("x")
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func deploymentSpec(replicas int64) map[string]any {
	return map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"app": "x"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"app": "x"}},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "x", "image": "x:1"}}},
		},
	}
}

// entry returns the managedFields entry of manager for subresource.
func entry(t *testing.T, u *unstructured.Unstructured, manager, subresource string) *metav1.ManagedFieldsEntry {
	t.Helper()
	for _, e := range u.GetManagedFields() {
		if e.Manager == manager && e.Subresource == subresource && e.Operation == metav1.ManagedFieldsOperationApply {
			return &e
		}
	}
	return nil
}

func TestApplyStatusSubresource(t *testing.T) {
	tests := []struct {
		name  string
		gvk   schema.GroupVersionKind
		crd   *unstructured.Unstructured
		spec  func(int64) map[string]any
		field string // the spec field spec(n) sets to n
	}{
		{name: "CRD with subresources.status", gvk: gadgetGVK, crd: gadgetCRD(true),
			spec: func(n int64) map[string]any { return map[string]any{"size": n} }, field: "size"},
		{name: "built-in Deployment", gvk: deployGVK, spec: deploymentSpec, field: "replicas"},
	}
	// status is a status both kinds accept.
	status := func(reason string) map[string]any {
		return map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": reason}}}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			c := memory.New("m")
			if tt.crd != nil {
				_, err := c.Apply(ctx, tt.crd, release.ApplyOptions{FieldManager: "setup"})
				require.NoError(t, err)
			}
			ref := release.ObjectRef{GroupVersionKind: tt.gvk, Namespace: "apps", Name: "x"}
			statusOpts := release.ApplyOptions{FieldManager: "ctrl", Subresource: release.SubresourceStatus, Force: true}

			// Status to an absent object: not found, and nothing created.
			_, err := c.Apply(ctx, withSpecStatus(tt.gvk, nil, status("Ready")), statusOpts)
			var nf *release.NotFoundError
			require.ErrorAs(t, err, &nf)
			assert.Equal(t, ref, nf.Object)
			_, err = c.Get(ctx, ref)
			require.ErrorIs(t, err, release.ErrNotFound, "a status apply creates nothing")

			// Creating with a status: the status is dropped, and not owned.
			created, err := c.Apply(ctx, withSpecStatus(tt.gvk, tt.spec(2), status("Forged")), release.ApplyOptions{FieldManager: "team"})
			require.NoError(t, err)
			assert.NotContains(t, created.Object, "status", "status sent on create")
			require.NotNil(t, entry(t, created, "team", ""))
			assert.NotContains(t, string(entry(t, created, "team", "").FieldsV1.Raw), "f:status")

			// Status through the subresource: only status changes.
			stale := tt.spec(9)
			updated, err := c.Apply(ctx, withSpecStatus(tt.gvk, stale, withGen(status("Ready"))), statusOpts)
			require.NoError(t, err)
			assert.Equal(t, withGen(status("Ready")), updated.Object["status"])
			n, _, _ := unstructured.NestedInt64(updated.Object, "spec", tt.field)
			assert.Equal(t, int64(2), n, "spec sent to the status subresource is ignored")
			assert.Equal(t, int64(1), updated.GetGeneration(), "a status write does not bump the generation")
			assert.NotEqual(t, created.GetResourceVersion(), updated.GetResourceVersion())
			st := entry(t, updated, "ctrl", release.SubresourceStatus)
			require.NotNil(t, st, "managedFields entry with subresource status: %v", updated.GetManagedFields())
			assert.Contains(t, string(st.FieldsV1.Raw), `"f:status"`)
			assert.NotContains(t, string(st.FieldsV1.Raw), `"f:spec"`)
			assert.NotContains(t, string(st.FieldsV1.Raw), `"f:metadata"`)
			assert.NotNil(t, entry(t, updated, "team", ""), "the spec owner's entry stays")

			// The object again, with another status: the status stays.
			again, err := c.Apply(ctx, withSpecStatus(tt.gvk, tt.spec(3), status("Forged")), release.ApplyOptions{FieldManager: "team"})
			require.NoError(t, err)
			assert.Equal(t, withGen(status("Ready")), again.Object["status"])
			n, _, _ = unstructured.NestedInt64(again.Object, "spec", tt.field)
			assert.Equal(t, int64(3), n)
			assert.Equal(t, int64(2), again.GetGeneration())

			// A dry run through the subresource returns the result and stores nothing.
			dry, err := c.Apply(ctx, withSpecStatus(tt.gvk, nil, status("Dry")), release.ApplyOptions{FieldManager: "ctrl", Subresource: release.SubresourceStatus, DryRun: true})
			require.NoError(t, err)
			assert.Equal(t, status("Dry"), dry.Object["status"])
			got, err := c.Get(ctx, ref)
			require.NoError(t, err)
			assert.Equal(t, withGen(status("Ready")), got.Object["status"])

			// Update (a client writing the whole object) is unchanged: it
			// stores status as sent.
			got.Object["status"] = status("Updated")
			_, err = c.Update(ctx, got, "kubectl")
			require.NoError(t, err)
			got, err = c.Get(ctx, ref)
			require.NoError(t, err)
			assert.Equal(t, status("Updated"), got.Object["status"])
		})
	}
}

// withGen adds observedGeneration 1 to status.
func withGen(status map[string]any) map[string]any {
	status["observedGeneration"] = int64(1)
	return status
}

func TestApplyWithoutStatusSubresource(t *testing.T) {
	ctx := context.Background()
	c := memory.New("m")
	_, err := c.Apply(ctx, gadgetCRD(false), release.ApplyOptions{FieldManager: "setup"})
	require.NoError(t, err)

	// A kind without the status subresource stores status as applied.
	obj := withSpecStatus(gadgetGVK, map[string]any{"size": int64(1)}, map[string]any{"phase": "Ready"})
	got, err := c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "team"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"phase": "Ready"}, got.Object["status"])

	// and has no status subresource to write to.
	_, err = c.Apply(ctx, obj, release.ApplyOptions{FieldManager: "team", Subresource: release.SubresourceStatus})
	require.Error(t, err)
	assert.ErrorContains(t, err, "Gadget example.com/v1 has no status subresource")
	assert.NotErrorIs(t, err, release.ErrNotFound)

	cm := withSpecStatus(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, nil, nil)
	_, err = c.Apply(ctx, cm, release.ApplyOptions{FieldManager: "team"})
	require.NoError(t, err)
	_, err = c.Apply(ctx, cm, release.ApplyOptions{FieldManager: "team", Subresource: release.SubresourceStatus})
	assert.ErrorContains(t, err, "ConfigMap v1 has no status subresource")
}

func TestApplyUnknownSubresource(t *testing.T) {
	c := memory.New("m")
	_, err := c.Apply(context.Background(), withSpecStatus(deployGVK, deploymentSpec(1), nil), release.ApplyOptions{FieldManager: "team", Subresource: "scale"})
	require.Error(t, err)
	assert.ErrorContains(t, err, `subresource "scale"`)
	assert.Empty(t, c.Objects(), "nothing stored")
}

// Whether a custom kind has the status subresource is each cluster's own
// fact, even when clusters share their Schemas.
func TestStatusSubresourcePerClusterWithSharedSchemas(t *testing.T) {
	ctx := context.Background()
	shared := memory.NewSchemas()
	with := memory.New("with", memory.WithSchemas(shared))
	without := memory.New("without", memory.WithSchemas(shared))
	for c, crd := range map[*memory.Cluster]*unstructured.Unstructured{with: gadgetCRD(true), without: gadgetCRD(false)} {
		_, err := c.Apply(ctx, crd, release.ApplyOptions{FieldManager: "setup"})
		require.NoError(t, err)
	}
	obj := withSpecStatus(gadgetGVK, map[string]any{"size": int64(1)}, map[string]any{"phase": "Ready"})
	got, err := with.Apply(ctx, obj, release.ApplyOptions{FieldManager: "team"})
	require.NoError(t, err)
	assert.NotContains(t, got.Object, "status")
	got, err = without.Apply(ctx, obj, release.ApplyOptions{FieldManager: "team"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"phase": "Ready"}, got.Object["status"])
}
