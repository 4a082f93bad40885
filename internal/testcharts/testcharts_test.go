package testcharts

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// TestChartsRenderWithHelm checks that every vendored chart loads and that
// Helm itself renders it with the test values for a current Kubernetes:
// the oracle the fleet tests compare against.
func TestChartsRenderWithHelm(t *testing.T) {
	for _, n := range All {
		t.Run(string(n), func(t *testing.T) {
			c, err := Load(n)
			require.NoError(t, err)
			i := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
			i.DryRun, i.ClientOnly, i.ReleaseName, i.Namespace = true, true, string(n), "apps"
			i.KubeVersion = &chartutil.KubeVersion{Version: "v1.36.0", Major: "1", Minor: "36"}
			rel, err := i.Run(c, DefaultValues(n))
			require.NoError(t, err)
			docs := releaseutil.SplitManifests(rel.Manifest)
			kinds := map[string]int{}
			for _, d := range docs {
				for _, line := range strings.Split(d, "\n") {
					if strings.HasPrefix(line, "kind: ") {
						kinds[strings.TrimPrefix(line, "kind: ")]++
						break
					}
				}
			}
			t.Logf("%s: %d objects, %d hooks, %d CRDs: %v", n, len(docs), len(rel.Hooks), len(c.CRDObjects()), kinds)
			require.NotEmpty(t, docs)
		})
	}
}
