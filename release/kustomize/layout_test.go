package kustomize_test

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// plainByKind returns the plain objects of a kind.
func plainByKind(res *kustomize.Result, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range res.Plain {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

// TestFluxLayoutEnvironments builds each environment of a tree in Flux's
// recommended layout (as in Kargo's Flux guide: a base HelmRelease, dev patching a pre-release chart
// version, prod setting values) and checks the Releases a user would get.
func TestFluxLayoutEnvironments(t *testing.T) {
	fsys := os.DirFS(fleet)
	build := func(t *testing.T, dir string) *kustomize.Result {
		t.Helper()
		res, err := kustomize.Build(t.Context(), fsys, dir, kustomize.Options{})
		require.NoError(t, err)
		return res
	}
	one := func(t *testing.T, res *kustomize.Result) *release.Release {
		t.Helper()
		require.Len(t, res.Objects.Releases, 1)
		return res.Objects.Releases[0]
	}

	t.Run("infrastructure/dev: a pre-release chart version, dev values from a generated ConfigMap", func(t *testing.T) {
		res := build(t, "infrastructure/dev")
		r := one(t, res)
		assert.Equal(t, "ingress-nginx", r.Namespace)
		assert.Equal(t, ">=4.0.0-0", r.Spec.Chart.Spec.Version)
		assert.Equal(t, map[string]any{"controller": map[string]any{"service": map[string]any{"type": "LoadBalancer"}}}, r.Spec.Values)
		assert.Equal(t, "dev", r.Labels["env"], "commonLabels")
		cms := plainByKind(res, "ConfigMap")
		require.Len(t, cms, 1)
		require.Len(t, r.Spec.ValuesFrom, 1)
		assert.Equal(t, cms[0].GetName(), r.Spec.ValuesFrom[0].Name, "valuesFrom follows the generated name (configurations: nameReference)")
		assert.Regexp(t, `^ingress-nginx-values-[a-z0-9]{10}$`, cms[0].GetName())
		data, _, _ := unstructured.NestedString(cms[0].Object, "data", "values.yaml")
		assert.Equal(t, "controller:\n  replicaCount: 1\n", data)
		require.Len(t, res.Objects.HelmRepositories, 1)
		assert.Equal(t, "ingress-nginx", res.Objects.HelmRepositories[0].Namespace)
		assert.Len(t, plainByKind(res, "Secret"), 1, "secretGenerator")
		assert.Len(t, plainByKind(res, "NetworkPolicy"), 1)
		assert.Contains(t, res.Warnings, "infrastructure/dev/kustomization.yaml: Warning: 'commonLabels' is deprecated. Please use 'labels' instead. Run 'kustomize edit fix' to update your Kustomization automatically.")
		// The Namespace first: kustomize's legacy order.
		assert.Equal(t, "Namespace", res.Plain[0].GetKind())

		traced, err := kustomize.Build(t.Context(), fsys, "infrastructure/dev", kustomize.Options{Origins: true})
		require.NoError(t, err)
		files := map[string]string{}
		for _, o := range traced.Origins {
			files[o.Kind] = o.File
		}
		assert.Equal(t, map[string]string{
			"Namespace":      "infrastructure/base/ingress-nginx/namespace.yaml",
			"ConfigMap":      "infrastructure/dev/ingress-nginx/kustomization.yaml",
			"Secret":         "infrastructure/dev/ingress-nginx/kustomization.yaml",
			"HelmRelease":    "infrastructure/base/ingress-nginx/release.yaml",
			"NetworkPolicy":  "infrastructure/base/ingress-nginx/networkpolicy.yaml",
			"HelmRepository": "infrastructure/base/ingress-nginx/repository.yaml",
		}, files)
	})

	t.Run("infrastructure/prod: a stable chart version by JSON 6902, values by strategic merge and a component", func(t *testing.T) {
		res := build(t, "infrastructure/prod")
		r := one(t, res)
		assert.Equal(t, "ingress-nginx", r.Namespace)
		assert.Equal(t, "4.11.3", r.Spec.Chart.Spec.Version)
		assert.Equal(t, map[string]any{"controller": map[string]any{
			"replicaCount": float64(3),
			"service": map[string]any{
				"type":        "LoadBalancer",
				"annotations": map[string]any{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"},
			},
			"metrics": map[string]any{"enabled": true, "serviceMonitor": map[string]any{"enabled": true}},
		}}, r.Spec.Values)
		assert.Equal(t, "prod", r.Labels["env"], "labels")
		assert.Equal(t, 3, r.Spec.Upgrade.Remediation.Retries, "from the base")
		cms := plainByKind(res, "ConfigMap")
		require.Len(t, cms, 1)
		assert.Equal(t, cms[0].GetName(), r.Spec.ValuesFrom[0].Name)
		assert.Empty(t, plainByKind(res, "Secret"))
		assert.Empty(t, res.Warnings)
	})

	t.Run("apps: a HelmRelease that dependsOn the infrastructure", func(t *testing.T) {
		for _, env := range []struct {
			dir      string
			replicas float64
			policies int
		}{{"apps/dev", 1, 0}, {"apps/prod", 3, 1}} {
			res := build(t, env.dir)
			r := one(t, res)
			assert.Equal(t, "podinfo", r.Namespace, env.dir)
			assert.Equal(t, "6.x", r.Spec.Chart.Spec.Version, env.dir)
			assert.Equal(t, []release.DependencyReference{{Name: "ingress-nginx", Namespace: "ingress-nginx"}}, r.Spec.DependsOn, env.dir)
			assert.Equal(t, env.replicas, r.Spec.Values["replicaCount"], env.dir)
			assert.Len(t, res.Objects.Policies.Propagation, env.policies, env.dir)
		}
	})

	t.Run("infrastructure/crds: a CRD is a plain object", func(t *testing.T) {
		res, err := kustomize.Build(t.Context(), fsys, "infrastructure/crds", kustomize.Options{Origins: true})
		require.NoError(t, err)
		assert.Empty(t, res.Objects.Releases)
		require.Len(t, res.Plain, 1)
		assert.Equal(t, "CustomResourceDefinition", res.Plain[0].GetKind())
		assert.Equal(t, []kustomize.Origin{{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Name: "backups.example.com", File: "infrastructure/crds/backups.example.com.yaml"}}, res.Origins)
	})

	t.Run("clusters/dev: Flux Kustomizations are decoded, not followed", func(t *testing.T) {
		res := build(t, "clusters/dev")
		assert.Empty(t, plainByKind(res, "Kustomization"))
		ks := res.Objects.Kustomizations
		require.Len(t, ks, 3)
		var paths []string
		for _, k := range ks {
			paths = append(paths, k.Spec.Path)
			assert.Equal(t, "flux-system", k.Spec.SourceRef.Namespace, "defaulted by release.Load")
		}
		assert.ElementsMatch(t, []string{"./infrastructure/crds", "./infrastructure/dev", "./apps/dev"}, paths)
		assert.Equal(t, []string{"clusters/dev/apps.yaml", "clusters/dev/infrastructure-crds.yaml", "clusters/dev/infrastructure.yaml", "clusters/dev/kustomization.yaml"}, res.Files)
	})
}

// TestBuildConcurrent: builds running at once (kustomize keeps some state
// process-wide) give what each gives alone.
func TestBuildConcurrent(t *testing.T) {
	fsys := mapFS(t, fleet)
	dirs := []string{"infrastructure/dev", "infrastructure/prod", "apps/dev", "apps/prod"}
	want := make([]*kustomize.Result, len(dirs))
	for i, d := range dirs {
		res, err := kustomize.Build(t.Context(), fsys, d, kustomize.Options{})
		require.NoError(t, err)
		want[i] = res
	}
	got := make([]*kustomize.Result, 4*len(dirs))
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			got[i], errs[i] = kustomize.Build(t.Context(), fsys, dirs[i%len(dirs)], kustomize.Options{})
		})
	}
	wg.Wait()
	for i := range got {
		require.NoError(t, errs[i])
		assert.Equal(t, want[i%len(dirs)], got[i], dirs[i%len(dirs)])
	}
}
