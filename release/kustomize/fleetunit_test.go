package kustomize_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release/kustomize"
)

// TestFleetUnitKinds: what a fleet runs as units (HelmReleases,
// Kustomizations, policies) and every Flux source kind (the fleet maps
// sources itself and runs no source-controller) are excluded; the
// objects of a `flux bootstrap` repository's gotk-components.yaml (the
// Flux controllers and their CRDs) and everything else are applied.
func TestFleetUnitKinds(t *testing.T) {
	for _, tc := range []struct {
		apiVersion, kind string
		unit             bool
	}{
		{"helm.toolkit.fluxcd.io/v2", "HelmRelease", true},
		{"kustomize.toolkit.fluxcd.io/v1", "Kustomization", true},
		{"policy.karmada.io/v1alpha1", "PropagationPolicy", true},
		{"policy.karmada.io/v1alpha1", "ClusterOverridePolicy", true},
		{"source.toolkit.fluxcd.io/v1", "GitRepository", true},
		{"source.toolkit.fluxcd.io/v1", "Bucket", true},
		{"source.toolkit.fluxcd.io/v1beta2", "OCIRepository", true},
		{"source.toolkit.fluxcd.io/v1", "HelmRepository", true},
		{"source.toolkit.fluxcd.io/v1", "HelmChart", true},
		{"source.toolkit.fluxcd.io/v1", "ExternalArtifact", true},
		// Not Flux sources, though named alike.
		{"source.toolkit.fluxcd.io/v1", "GitRepositoryList", false},
		{"example.com/v1", "GitRepository", false},
		{"kustomize.config.k8s.io/v1beta1", "Kustomization", false},
		// gotk-components.yaml: applied as plain objects.
		{"v1", "Namespace", false},
		{"apiextensions.k8s.io/v1", "CustomResourceDefinition", false},
		{"apps/v1", "Deployment", false},
		{"rbac.authorization.k8s.io/v1", "ClusterRoleBinding", false},
		{"networking.k8s.io/v1", "NetworkPolicy", false},
	} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(tc.apiVersion)
		u.SetKind(tc.kind)
		assert.Equal(t, tc.unit, kustomize.FleetUnit(u), "%s %s", tc.apiVersion, tc.kind)
	}
}
