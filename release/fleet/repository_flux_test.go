package fleet_test

import (
	"context"
	"io/fs"
	"os"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/source"
)

// anyCharts serves the test chart for every chart reference and records
// the source each was resolved from.
type anyCharts struct {
	mu   sync.Mutex
	from []string
}

func (a *anyCharts) Resolve(_ context.Context, ref source.Ref) (*source.Chart, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case ref.OCIRepository != nil:
		a.from = append(a.from, "OCIRepository "+ref.OCIRepository.Spec.URL)
	case ref.HelmRepository != nil:
		a.from = append(a.from, "HelmRepository "+ref.HelmRepository.Spec.URL)
	}
	return &source.Chart{Chart: testchart.MustLoad("6.5.0")}, nil
}

func (a *anyCharts) sources() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, s := range a.from {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// TestRepositoryFluxExample runs fluxcd/flux2-kustomize-helm-example
// (testdata, Apache-2.0, its LICENSE kept beside it) in its Flux 2.7
// layout through Config.Repository: the ArtifactGenerator of
// clusters/<env>/artifacts.yaml is refused until its ExternalArtifacts
// are registered, then every release finds its chart through the
// HelmRepository or OCIRepository a Kustomization produced on its member.
func TestRepositoryFluxExample(t *testing.T) {
	ctx := context.Background()
	tree := os.DirFS("testdata/flux2-kustomize-helm-example")
	in := decodeInputs(t, bootstrapPolicies)

	t.Run("without its artifacts", func(t *testing.T) {
		f, _ := repoFleet(t, &fleet.Repository{Root: tree, Charts: &anyCharts{}})
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		kp, ok := plan.Kustomization(fleet.Key{Cluster: "staging", Namespace: "flux-system", Name: "flux-system", Kind: fleet.KindKustomization})
		require.True(t, ok)
		var ue *fleet.UnservedArtifactError
		require.ErrorAs(t, kp.Err, &ue, plan.Table())
		assert.Equal(t, "flux-system/flux-system", ue.Generator)
		assert.Contains(t, kp.Err.Error(), "ExternalArtifact/flux-system/infrastructure")
		assert.Contains(t, kp.Err.Error(), "ExternalArtifact/flux-system/apps")
	})

	t.Run("with its artifacts", func(t *testing.T) {
		sub := func(dir string) fs.FS {
			s, err := fs.Sub(tree, dir)
			require.NoError(t, err)
			return s
		}
		charts := &anyCharts{}
		f, _ := repoFleet(t, &fleet.Repository{Root: tree, Revision: "main@sha1:4f1a5b1", Charts: charts, Sources: kustomize.MapSources{
			"ExternalArtifact/flux-system/infrastructure": {FS: sub("infrastructure"), Revision: "latest@sha256:1"},
			"ExternalArtifact/flux-system/apps":           {FS: sub("apps"), Revision: "latest@sha256:2"},
		}})
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		for _, m := range []string{"staging", "production"} {
			for _, k := range []fleet.Key{
				{Cluster: m, Namespace: "cert-manager", Name: "cert-manager"},
				{Cluster: m, Namespace: "envoy-gateway-system", Name: "envoy-gateway"},
				{Cluster: m, Namespace: "podinfo", Name: "podinfo"},
			} {
				p, ok := plan.Item(k)
				require.True(t, ok, "%s planned\n%s", k, plan.Table())
				assert.NoError(t, p.Err, "%s", k)
			}
		}
		require.Empty(t, plan.Errors, plan.Table())
		assert.Equal(t, []string{
			"HelmRepository https://stefanprodan.github.io/podinfo",
			"OCIRepository oci://docker.io/envoyproxy/gateway-helm",
			"OCIRepository oci://quay.io/jetstack/charts/cert-manager",
		}, charts.sources())
	})
}
