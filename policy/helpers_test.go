package policy

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// objects decodes a multi-document YAML stream of Kubernetes objects.
func objects(t testing.TB, stream string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split([]byte(stream), []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		m := map[string]any{}
		require.NoError(t, yaml.Unmarshal(doc, &m))
		out = append(out, &unstructured.Unstructured{Object: fromJSON(m).(map[string]any)})
	}
	return out
}

func object(t testing.TB, doc string) *unstructured.Unstructured {
	t.Helper()
	objs := objects(t, doc)
	require.Len(t, objs, 1)
	return objs[0]
}

// policySet decodes a multi-document YAML stream of policies.
func policySet(t testing.TB, stream string) Set {
	t.Helper()
	var s Set
	for _, doc := range bytes.Split([]byte(stream), []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		p, err := Decode(doc)
		require.NoError(t, err)
		require.NoError(t, s.Add(p))
	}
	return s
}

func engine(t testing.TB, stream string) *Engine {
	t.Helper()
	e, err := NewEngine(policySet(t, stream))
	require.NoError(t, err)
	return e
}

func targetsOf(op *ObjectPlacement) map[string]int64 {
	out := map[string]int64{}
	for _, t := range op.Targets {
		out[t.Cluster] = t.Replicas
	}
	return out
}

func clusterNames(names ...string) []Cluster {
	out := make([]Cluster, len(names))
	for i, n := range names {
		out[i] = Cluster{Name: n}
	}
	return out
}
