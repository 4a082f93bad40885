package helmv4_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// On both engines a release adopts an object it renders that exists
// without Helm's ownership metadata (Helm's TakeOwnership, on as Flux
// sets it), unless spec.install.disableTakeOwnership says not to: then
// the install fails as Helm's ownership check makes it, and the object
// is left as it was.
func TestTakeOwnership(t *testing.T) {
	svc := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, Namespace: "apps", Name: "podinfo"}
	existing := func(t *testing.T) *memory.Cluster {
		t.Helper()
		c := memory.New("member")
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": svc.Name, "namespace": svc.Namespace},
			"spec":     map[string]any{"ports": []any{map[string]any{"name": "http", "port": int64(9898)}}},
		}}
		_, err := c.Apply(t.Context(), obj, release.ApplyOptions{FieldManager: "kubectl"})
		require.NoError(t, err)
		return c
	}
	owner := func(t *testing.T, c *memory.Cluster) string {
		t.Helper()
		live, err := c.Get(t.Context(), svc)
		require.NoError(t, err)
		return live.GetAnnotations()["meta.helm.sh/release-name"]
	}

	for name, engine := range map[string]reconcile.Engine{"helm-v3": reconcile.HelmV3{}, "helm-v4": helmv4.Engine{}} {
		t.Run(name, func(t *testing.T) {
			t.Run("adopted", func(t *testing.T) {
				c := existing(t)
				reconcileOK(t, reconciler(t, engine), c, podinfo())
				assert.Equal(t, "podinfo", owner(t, c))
				assert.Len(t, history(t, c, podinfo()), 1)
			})
			t.Run("disableTakeOwnership", func(t *testing.T) {
				c := existing(t)
				rel := podinfo()
				rel.Spec.Install = &release.Install{DisableTakeOwnership: true}
				_, err := reconciler(t, engine).Reconcile(t.Context(), c, rel)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "cannot be imported into the current release")
				assert.Empty(t, owner(t, c))
			})
		})
	}
}
