package kyamlschema_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/helmfleet/helmfleet/internal/kyamlschema"
)

// TestConcurrentFirstUse does, in a process that has not used kyaml's
// schema yet, what two kustomize runs that start together do: one asks
// in a loop whether a kind the schema does not know is namespaced (the
// namespace transformer), the other, after a sleep that orders nothing,
// needs the schema (a strategic merge patch parses it). Under go test
// -race, as .ci/run runs it, the two race unless Init parsed the schema
// first. Then both kinds of kustomize run, side by side, give their
// results.
func TestConcurrentFirstUse(t *testing.T) {
	kyamlschema.Init()
	widget := yaml.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}
	var (
		done atomic.Bool
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		for !done.Load() {
			_, found := openapi.IsNamespaceScoped(widget)
			assert.False(t, found)
		}
	})
	wg.Go(func() {
		time.Sleep(20 * time.Millisecond)
		assert.NotNil(t, openapi.SchemaForResourceType(yaml.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}))
		done.Store(true)
	})
	wg.Wait()

	patch := fs(t, `resources: [deploy.yaml]
patches:
- patch: |
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: web}
    spec: {replicas: 3}
`, "deploy.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n")
	namespace := fs(t, "namespace: apps\nresources: [widget.yaml]\n",
		"widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
	out := make([]string, 2)
	for i, in := range []filesys.FileSystem{patch, namespace} {
		wg.Go(func() {
			m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(in, ".")
			require.NoError(t, err)
			y, err := m.AsYaml()
			require.NoError(t, err)
			out[i] = string(y)
		})
	}
	wg.Wait()
	assert.Contains(t, out[0], "replicas: 3")
	assert.Contains(t, out[1], "namespace: apps")
}

func fs(t *testing.T, kustomization, name, data string) filesys.FileSystem {
	t.Helper()
	f := filesys.MakeFsInMemory()
	require.NoError(t, f.WriteFile("kustomization.yaml", []byte(kustomization)))
	require.NoError(t, f.WriteFile(name, []byte(data)))
	return f
}
