package values_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// TestTargetPathWithEmptyKeyIsRefused: --set drops a value assigned under
// an empty key ("l[0]..x") and keeps only the maps and lists before it, so
// the value would vanish in silence (and those containers would have no
// origin); Compose refuses such a targetPath, from a ConfigMap or a Secret.
func TestTargetPathWithEmptyKeyIsRefused(t *testing.T) {
	for _, kind := range []values.Kind{values.KindConfigMap, values.KindSecret} {
		for _, path := range []string{"l[0]..x", "m[1]..y.z"} {
			r := valuestest.NewReader().
				ConfigMap(ns, "o", map[string]string{"v": "1"}).
				Secret(ns, "o", map[string][]byte{"v": []byte("1")})
			_, err := values.Compose(context.Background(), r, values.Request{Release: "apps/x", Namespace: ns,
				From: []values.Reference{{Kind: kind, Name: "o", ValuesKey: "v", TargetPath: path}}})
			require.ErrorIs(t, err, values.ErrTargetPath, "%s %s", kind, path)
			assert.Contains(t, err.Error(), "has an empty key, under which Helm's --set drops the value")
		}
	}
	// An escaped dot is a key, not an empty one.
	r := valuestest.NewReader().ConfigMap(ns, "o", map[string]string{"v": "1"})
	res, err := values.Compose(context.Background(), r, values.Request{Release: "apps/x", Namespace: ns,
		From: []values.Reference{{Kind: values.KindConfigMap, Name: "o", ValuesKey: "v", TargetPath: `a\.b`}}})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a.b": int64(1)}, res.Values)
}
