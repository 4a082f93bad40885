package kustomize_test

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release/kustomize"
)

func TestTreeDigest(t *testing.T) {
	tree := fstest.MapFS{"a/kustomization.yaml": {Data: []byte("resources: [x.yaml]\n")}, "a/x.yaml": {Data: []byte("kind: ConfigMap\n")}}
	d, err := kustomize.TreeDigest(tree)
	require.NoError(t, err)
	assert.Regexp(t, `^sha256:[0-9a-f]{12}$`, d)
	again, err := kustomize.TreeDigest(fstest.MapFS{"a/x.yaml": tree["a/x.yaml"], "a/kustomization.yaml": tree["a/kustomization.yaml"]})
	require.NoError(t, err)
	assert.Equal(t, d, again, "the same files give the same digest")
	for name, other := range map[string]fstest.MapFS{
		"content": {"a/kustomization.yaml": tree["a/kustomization.yaml"], "a/x.yaml": {Data: []byte("kind: Secret\n")}},
		"path":    {"a/kustomization.yaml": tree["a/kustomization.yaml"], "b/x.yaml": tree["a/x.yaml"]},
	} {
		od, err := kustomize.TreeDigest(other)
		require.NoError(t, err)
		assert.NotEqual(t, d, od, name)
	}
}
