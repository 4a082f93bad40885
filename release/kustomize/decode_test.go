package kustomize_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// TestBuildObjectErrors: objects kustomize built but helmfleet cannot take
// are reported with the file they came from, the object and the field,
// as release.Load reports them; the objects that are fine come back
// beside the error.
func TestBuildObjectErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		files   map[string]string
		problem kustomize.Problem
	}{
		{
			name: "HelmRelease fails validation after a patch",
			files: map[string]string{
				"base/kustomization.yaml": kustomization("resources: [release.yaml]\n"),
				"base/release.yaml":       helmRelease,
				"dev/kustomization.yaml":  kustomization("resources: [../base]\npatches:\n  - path: version.yaml\n"),
				"dev/version.yaml":        "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: apps\nspec:\n  chart:\n    spec:\n      version: '>=4.0.0-0 <'\n",
			},
			problem: kustomize.Problem{Origin: "base/release.yaml", Kind: "HelmRelease", Namespace: "apps", Name: "app"},
		},
		{
			name: "unknown field (strict decoding)",
			files: map[string]string{
				"dev/kustomization.yaml": kustomization("resources: [release.yaml]\n"),
				"dev/release.yaml":       strings.Replace(helmRelease, "  interval: 5m\n", "  interval: 5m\n  intervall: 5m\n", 1),
			},
			problem: kustomize.Problem{Origin: "dev/release.yaml", Kind: "HelmRelease", Namespace: "apps", Name: "app"},
		},
		{
			name: "invalid duration set by the overlay's namespace-wide patch",
			files: map[string]string{
				"dev/kustomization.yaml": kustomization("resources: [release.yaml]\npatches:\n  - target: {kind: HelmRelease}\n    patch: |\n      - op: replace\n        path: /spec/interval\n        value: 10x\n"),
				"dev/release.yaml":       helmRelease,
			},
			problem: kustomize.Problem{Origin: "dev/release.yaml", Kind: "HelmRelease", Namespace: "apps", Name: "app"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := kustomize.Build(t.Context(), tree(tc.files), "dev", kustomize.Options{})
			var de *kustomize.DecodeError
			require.ErrorAs(t, err, &de, "%v", err)
			require.Len(t, de.Problems, 1, "%v", err)
			p := de.Problems[0]
			assert.Equal(t, tc.problem.Origin, p.Origin)
			assert.Equal(t, tc.problem.Kind, p.Kind)
			assert.Equal(t, tc.problem.Namespace, p.Namespace)
			assert.Equal(t, tc.problem.Name, p.Name)
			assert.NotEmpty(t, p.Path)
			assert.True(t, strings.HasPrefix(err.Error(), tc.problem.Origin+": HelmRelease apps/app: "+p.Path+": "), "%v", err)
			require.NotNil(t, res, "the objects come back beside the error")
		})
	}
	t.Run("paths", func(t *testing.T) {
		_, err := kustomize.Build(t.Context(), tree(map[string]string{
			"dev/kustomization.yaml": kustomization("resources: [release.yaml]\n"),
			"dev/release.yaml":       strings.Replace(helmRelease, "  interval: 5m\n", "  interval: 5m\n  intervall: 5m\n", 1),
		}), "dev", kustomize.Options{})
		assert.EqualError(t, err, `dev/release.yaml: HelmRelease apps/app: spec.intervall: unknown field, did you mean "interval"? (value: 5m)`)
	})
}

// TestBuildPatchTargetMissing: a strategic-merge patch of an object the
// tree does not have is kustomize's error, naming the object.
func TestBuildPatchTargetMissing(t *testing.T) {
	fsys := tree(map[string]string{
		"dev/kustomization.yaml": kustomization("resources: [release.yaml]\npatches:\n  - path: patch.yaml\n"),
		"dev/release.yaml":       helmRelease,
		"dev/patch.yaml":         "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: ingress-nginx\nspec:\n  suspend: true\n",
	})
	_, err := kustomize.Build(t.Context(), fsys, "dev", kustomize.Options{})
	var be *kustomize.BuildError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, "dev", be.Dir)
	assert.Contains(t, err.Error(), `no resource matches strategic merge patch "HelmRelease.v2.helm.toolkit.fluxcd.io/ingress-nginx.[noNs]"`)
}

// TestBuildMasksSecretGenerators: kustomize quotes the nodes it fails on,
// here a generated Secret's data; Build withholds kustomize's message
// when the tree holds Secret data.
func TestBuildMasksSecretGenerators(t *testing.T) {
	const (
		literal = "hunter2-literal-secret"
		file    = "-----BEGIN KEY-----\nMIIEvQIBADANBg\n-----END KEY-----\n"
		env     = "TOKEN=ghp_envfile-token-value\n"
	)
	fsys := tree(map[string]string{
		"dev/kustomization.yaml": kustomization(`secretGenerator:
  - name: s
    literals: [password=` + literal + `]
    files: [key.pem]
    envs: [token.env]
replacements:
  - source: {kind: Secret, name: s, fieldPath: data.password}
    targets:
      - select: {kind: Secret}
        fieldPaths: [data.password.x, data.key\.pem.x, data.TOKEN.x]
`),
		"dev/key.pem":   file,
		"dev/token.env": env,
	})
	_, err := kustomize.Build(t.Context(), fsys, "dev", kustomize.Options{})
	require.ErrorIs(t, err, release.ErrWithheld)
	assert.Equal(t, "kustomization dev: kustomize build failed: the error text is withheld because it may contain Secret values", err.Error())
	for _, secret := range []string{literal, "MIIEvQIBADANBg", "ghp_envfile-token-value", file, env} {
		assert.NotContains(t, err.Error(), secret)
		assert.NotContains(t, err.Error(), base64.StdEncoding.EncodeToString([]byte(secret)))
	}
}
