package reconcile

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/values"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

func TestSecretMask(t *testing.T) {
	reader := valuestest.NewReader().Secret("apps", "db", map[string][]byte{"values.yaml": []byte("db: {password: hunter2-long, port: 15432, user: admin-user}\n")})
	res, err := values.Compose(context.Background(), reader, values.Request{Release: "apps/app", Namespace: "apps",
		From: []values.Reference{{Kind: values.KindSecret, Name: "db"}}})
	require.NoError(t, err)
	m := newSecretMask(res)
	require.NotNil(t, m)

	o := &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "data": map[string]any{
		"url":          "postgres://admin-user:hunter2-long@db:15432/app",
		"hunter2-long": "as a key",
		"port":         int64(15432),
		"old":          "rotated-away",
		"plain":        "stays",
	}}}
	paths := map[string]bool{}
	got := m.object(o, paths, map[string]bool{"\x00data\x00old": true})
	data := got.Object["data"].(map[string]any)
	text := fmt.Sprint(data)
	for _, s := range []string{"hunter2", "admin-user", "15432", "rotated-away"} {
		assert.NotContains(t, text, s)
	}
	assert.Equal(t, "stays", data["plain"])
	assert.True(t, paths["\x00data\x00url"] && paths["\x00data\x00port"], "masked places are reported: %v", paths)
	assert.Contains(t, fmt.Sprint(o.Object), "hunter2-long", "the object itself is not changed")

	for _, form := range []string{"HUNTER2-LONG", "aHVudGVyMi1sb25n"} {
		masked := m.text("x " + form + " y")
		assert.Equal(t, "x "+maskedText("hunter2-long")+" y", masked, "the form %s is masked by the value's digest", form)
	}
	var none *secretMask
	assert.Equal(t, "hunter2-long", none.text("hunter2-long"), "no Secret values, nothing masked")
}
