package fleet_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release/fleet"
)

// A field of a source a Repository's Kustomization produces that
// helmfleet does not act on (the HelmRepository's secretRef) is in the
// plan of each release whose chart comes from it, on every member; a
// release of another source has no such warning.
func TestRepositoryProducedSourceFieldsAreWarned(t *testing.T) {
	ctx := context.Background()
	tree := exampleRepo()
	y := string(tree["apps/base/podinfo/release.yaml"].Data)
	y = strings.Replace(y, `spec: {interval: 24h, url: "https://stefanprodan.github.io/podinfo"}`,
		`spec: {interval: 24h, url: "https://stefanprodan.github.io/podinfo", secretRef: {name: podinfo-auth}}`, 1)
	require.Contains(t, y, "podinfo-auth")
	tree["apps/base/podinfo/release.yaml"].Data = []byte(y)
	f, _ := repoFleet(t, &fleet.Repository{Root: tree, Revision: "main@sha1:1", Charts: &localCharts{asked: map[string]bool{}}})

	plan, err := f.Plan(ctx, decodeInputs(t, bootstrapPolicies))
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	want := "HelmRepository podinfo/podinfo: spec.secretRef (podinfo-auth) is not read: credentials, CA and proxy come from the resolver's options, the same for every source"
	for _, m := range []string{"staging", "production"} {
		p, ok := plan.Item(fleet.Key{Cluster: m, Namespace: "podinfo", Name: "podinfo"})
		require.True(t, ok, m)
		assert.Contains(t, p.Warnings, want, m)
		other, ok := plan.Item(fleet.Key{Cluster: m, Namespace: "ingress-nginx", Name: "ingress-nginx"})
		require.True(t, ok, m)
		assert.NotContains(t, other.Warnings, want, m)
	}
}
