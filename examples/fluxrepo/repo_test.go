package main

import (
	"context"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

func embeddedRepo(t *testing.T) fs.FS {
	t.Helper()
	repo, err := fs.Sub(embedded, "repo")
	require.NoError(t, err)
	return repo
}

// TestRepositoryLayout checks the embedded repository is what the
// example says: each clusters/<env> holds the three Flux Kustomizations,
// each depending on the one it needs, pointing at the env's directories.
func TestRepositoryLayout(t *testing.T) {
	for _, env := range []string{"dev", "prod"} {
		t.Run(env, func(t *testing.T) {
			res, err := kustomize.Build(context.Background(), embeddedRepo(t), "clusters/"+env, kustomize.Options{})
			require.NoError(t, err)
			assert.Empty(t, res.Plain, "clusters/%s holds Flux Kustomizations only", env)
			got := map[string]string{}
			for _, k := range res.Objects.Kustomizations {
				assert.Equal(t, "flux-system", k.Namespace)
				assert.Equal(t, kustomize.SourceKey(k.Spec.SourceRef), gitRepository)
				line := k.Spec.Path
				for _, d := range k.Spec.DependsOn {
					line += " after " + d.Name
				}
				got[k.Name] = line
			}
			assert.Equal(t, map[string]string{
				"infrastructure-crds": "./infrastructure/crds",
				"infrastructure":      "./infrastructure/" + env + " after infrastructure-crds",
				"apps":                "./apps/" + env + " after infrastructure",
			}, got)
		})
	}
}

// buildAll builds every Kustomization of clusters/<env> as Flux would on
// member m, its postBuild variables read from m's own ConfigMaps.
func buildAll(t *testing.T, m member) map[string]*kustomize.Result {
	t.Helper()
	ctx := context.Background()
	repo := embeddedRepo(t)
	c := memory.New(m.name)
	require.NoError(t, clusterResourceSets(ctx, c, m))
	rec, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{
		Sources:   kustomize.MapSources{gitRepository: {FS: repo, Revision: "main@sha256:test"}},
		Variables: release.NewObjectValues(c),
	})
	require.NoError(t, err)
	top, err := kustomize.Build(ctx, repo, "clusters/"+m.env, kustomize.Options{})
	require.NoError(t, err)
	out := map[string]*kustomize.Result{}
	for _, k := range top.Objects.Kustomizations {
		res, err := rec.Build(ctx, k)
		require.NoError(t, err, "Kustomization %s", k.Name)
		out[k.Name] = res
	}
	return out
}

// TestEnvironments checks what each environment's Kustomizations build
// on one of its members: the CRDs alone first, cert-manager patched to a
// pre-release chart on dev and to the stable line with its own values on
// prod, depending on the CRD Kustomization across kinds, and podinfo
// with the member's own variables substituted.
func TestEnvironments(t *testing.T) {
	for _, tc := range []struct {
		member          member
		version, chosen string
		replicas        any
		podinfoReplicas float64
		podinfoMessage  string
	}{
		{member: members[0], version: ">=1.16.0-0", chosen: "1.16.0-beta.1", replicas: float64(1), podinfoReplicas: 1, podinfoMessage: "dev: dev-1"},
		{member: members[2], version: "1.15.x", chosen: "1.15.3", replicas: float64(2), podinfoReplicas: 3, podinfoMessage: "prod-1"},
	} {
		t.Run(tc.member.name, func(t *testing.T) {
			built := buildAll(t, tc.member)

			crds := built["infrastructure-crds"]
			assert.Empty(t, crds.Objects.Releases)
			var names []string
			for _, u := range crds.Plain {
				assert.Equal(t, "CustomResourceDefinition", u.GetKind())
				names = append(names, u.GetName())
			}
			assert.Equal(t, []string{"certificates.cert-manager.io", "clusterissuers.cert-manager.io"}, names)

			infra := built["infrastructure"]
			require.Len(t, infra.Objects.Releases, 1)
			cm := infra.Objects.Releases[0]
			assert.Equal(t, "kube-system/cert-manager", cm.Namespace+"/"+cm.Name)
			assert.Equal(t, tc.version, cm.Spec.Chart.Spec.Version)
			assert.Equal(t, []release.DependencyReference{{Kind: release.KustomizationKind, Name: "infrastructure-crds", Namespace: "flux-system"}}, cm.Spec.DependsOn)
			assert.Equal(t, "member", cm.Annotations["fleet.helmfleet.io/values-from"])
			vals := cm.Spec.Values
			assert.Equal(t, tc.replicas, vals["replicaCount"])
			require.Len(t, infra.Objects.HelmRepositories, 1)
			assert.Equal(t, "https://charts.jetstack.io", infra.Objects.HelmRepositories[0].Spec.URL)

			ch, err := charts().GetChart(context.Background(), cm)
			require.NoError(t, err)
			assert.Equal(t, tc.chosen, ch.Chart.Metadata.Version, "the version %q selects", tc.version)

			apps := built["apps"]
			require.Len(t, apps.Objects.Releases, 1)
			podinfo := apps.Objects.Releases[0]
			assert.Equal(t, "apps/podinfo", podinfo.Namespace+"/"+podinfo.Name)
			vals = podinfo.Spec.Values
			assert.Equal(t, tc.podinfoReplicas, vals["replicaCount"])
			assert.Equal(t, "podinfo."+tc.member.domain, vals["ingress"].(map[string]any)["host"])
			assert.Equal(t, tc.podinfoMessage, vals["ui"].(map[string]any)["message"])
			var cert []string
			for _, u := range apps.Plain {
				if u.GetKind() == "Certificate" {
					cert = append(cert, u.GetNamespace()+"/"+u.GetName())
				}
			}
			assert.Equal(t, []string{"apps/podinfo"}, cert)
		})
	}
}
