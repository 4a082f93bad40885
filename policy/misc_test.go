package policy

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestTaintEffects(t *testing.T) {
	taint := func(effect corev1.TaintEffect) []corev1.Taint {
		return []corev1.Taint{{Key: "k", Value: "v", Effect: effect}}
	}
	clusters := []Cluster{{Name: "noexec", Taints: taint(corev1.TaintEffectNoExecute)}, {Name: "nosched", Taints: taint(corev1.TaintEffectNoSchedule)},
		{Name: "prefer", Taints: taint(corev1.TaintEffectPreferNoSchedule)}, {Name: "clean"}}
	tests := []struct {
		name, tolerations string
		want              []string
	}{
		{"no tolerations: NoExecute and NoSchedule filter", "[]", []string{"clean", "prefer"}},
		{"Exists on the key tolerates every effect", "[{key: k, operator: Exists}]", []string{"clean", "noexec", "nosched", "prefer"}},
		{"an effect-specific toleration", "[{key: k, operator: Equal, value: v, effect: NoExecute}]", []string{"clean", "noexec", "prefer"}},
		{"empty key with Exists tolerates everything", "[{operator: Exists}]", []string{"clean", "noexec", "nosched", "prefer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, placement("clusterTolerations: "+tt.tolerations))
			p, err := e.Place(objects(t, deployment(1, "")), clusters)
			require.NoError(t, err)
			var got []string
			for _, tg := range p.Objects[0].Targets {
				got = append(got, tg.Cluster)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDeprecatedOverrideForm(t *testing.T) {
	e := engine(t, `apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: old}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  targetCluster: {clusterNames: [a]}
  overriders:
    labelsOverrider: [{operator: add, value: {old: form}}]
`)
	out, applied, err := e.Override(object(t, podinfoDeployment), Cluster{Name: "a"})
	require.NoError(t, err)
	assert.Equal(t, "form", out.GetLabels()["old"])
	require.Len(t, applied, 1)
	assert.Equal(t, 0, applied[0].Rule)
	_, applied, err = e.Override(object(t, podinfoDeployment), Cluster{Name: "b"})
	require.NoError(t, err)
	assert.Empty(t, applied)
}

func TestSetAdd(t *testing.T) {
	var s Set
	require.NoError(t, s.Add(PropagationPolicy{}))
	require.NoError(t, s.Add(&ClusterOverridePolicy{}))
	assert.Len(t, s.Propagation, 1)
	assert.Len(t, s.ClusterOverride, 1)
	assert.ErrorContains(t, s.Add("nope"), "not a policy type")
}

// An Engine is immutable: many goroutines may place and override at once.
func TestEngineConcurrentUse(t *testing.T) {
	w := generate(400, 80, 10)
	e, err := NewEngine(w.set)
	require.NoError(t, err)
	want, _ := e.Place(w.objs, w.clusters)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			got, _ := e.Place(w.objs, w.clusters)
			assert.Equal(t, view(want), view(got))
			e.Materialize(got)
		})
	}
	wg.Wait()
}

func TestParsePointer(t *testing.T) {
	got, err := parsePointer("/metadata/labels/app.kubernetes.io~1name/~0x")
	require.NoError(t, err)
	assert.Equal(t, []string{"metadata", "labels", "app.kubernetes.io/name", "~x"}, got)
	for _, bad := range []string{"", "a/b", "/a~", "/a~2"} {
		_, err := parsePointer(bad)
		assert.Error(t, err, bad)
	}
}

func FuzzParsePointer(f *testing.F) {
	for _, s := range []string{"/a/b", "/a~1b/~0", "/", "//", "/0/-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		tokens, err := parsePointer(p)
		if err != nil {
			return
		}
		esc := make([]string, len(tokens))
		for i, tk := range tokens {
			esc[i] = escapeToken(tk)
		}
		require.Equal(t, p, "/"+strings.Join(esc, "/"))
	})
}

func TestJSON(t *testing.T) {
	var j JSON
	require.NoError(t, j.UnmarshalJSON([]byte(`{"a":[1,2.5,"x"]}`)))
	v, err := j.Value()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": []any{int64(1), 2.5, "x"}}, v)
	b, err := j.MarshalJSON()
	require.NoError(t, err)
	assert.Equal(t, `{"a":[1,2.5,"x"]}`, string(b))
	require.NoError(t, j.UnmarshalJSON([]byte("null")))
	v, err = j.Value()
	require.NoError(t, err)
	assert.Nil(t, v)
	b, _ = j.MarshalJSON()
	assert.Equal(t, "null", string(b))
	assert.Error(t, j.UnmarshalJSON([]byte("{")))
}
