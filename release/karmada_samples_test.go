package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKarmadaSamplesLoadAsKubectlTakesThem loads Karmada's own policy
// documents (testdata/karmada-samples: samples/, artifacts/example/,
// examples/ and the policy blocks of two scheduling proposals, under
// Karmada's LICENSE beside them), none of which writes a namespace, with
// the default-namespace option. Every document loads, or is refused for
// the reason listed here: 16 of 20 load.
func TestKarmadaSamplesLoadAsKubectlTakesThem(t *testing.T) {
	refused := map[string][]string{ // file → the reasons, one per refused document, in order
		// The proposal's own example puts workloadAffinity under spec,
		// not spec.placement, and has no resourceSelectors.
		"docs_proposals_scheduling_anti-affinity-scheduling-support.yaml": {"spec.workloadAffinity: unknown field"},
		"docs_proposals_scheduling_multi-scheduling-group_overflow-affinities.yaml": {
			"", // the API the proposal settled on: loads
			// Alternatives the proposal considered and rejected: not fields of Karmada's API.
			"spec.placement.clusterAffinity.supplements: unknown field",
			"spec.placement.affinityStrategy: unknown field",
			"spec.placement.preferredClusterAffinities: unknown field",
		},
	}
	files, err := filepath.Glob("testdata/karmada-samples/*.yaml")
	require.NoError(t, err)
	require.Len(t, files, 17)
	var documents, loaded int
	for _, f := range files {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var docs []string
			for _, d := range strings.Split("\n"+string(data), "\n---\n") {
				if strings.Contains(d, "kind:") {
					docs = append(docs, d)
				}
			}
			want := refused[name]
			if want != nil {
				require.Len(t, want, len(docs), "one reason per document")
			}
			for i, d := range docs {
				documents++
				objs, err := Load(strings.NewReader(d), WithDefaultNamespace("karmada-samples"))
				if want == nil || want[i] == "" {
					require.NoError(t, err, "document %d", i+1)
					loaded++
				} else {
					require.Error(t, err, "document %d", i+1)
					assert.Contains(t, err.Error(), want[i], "document %d", i+1)
					assert.NotContains(t, err.Error(), "metadata.namespace")
					continue
				}
				p := objs.Policies
				for i := range p.Propagation {
					assert.NotEmpty(t, p.Propagation[i].Namespace)
				}
				for i := range p.Override {
					assert.NotEmpty(t, p.Override[i].Namespace)
				}
				for i := range p.ClusterPropagation {
					assert.Empty(t, p.ClusterPropagation[i].Namespace)
				}
				for i := range p.ClusterOverride {
					assert.Empty(t, p.ClusterOverride[i].Namespace)
				}
			}
		})
	}
	t.Logf("%d documents, %d loaded", documents, loaded)
	assert.Equal(t, 20, documents)
	assert.Equal(t, 16, loaded)
}
