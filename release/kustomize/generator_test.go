package kustomize_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

const deploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: base
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
`

func mapSources(fsys fs.FS) kustomize.MapSources {
	return kustomize.MapSources{"GitRepository/apps/app": {FS: fsys, Revision: "rev1"}}
}

// TestSpecTransforms: targetNamespace, namePrefix and nameSuffix replace
// the kustomization's own, patches and components are added, an image of
// the same name is changed in place, as Flux's generator does.
func TestSpecTransforms(t *testing.T) {
	fsys := fstest.MapFS{
		"app/kustomization.yaml":              file("resources: [deploy.yaml]\nnamePrefix: own-\nnamespace: own\nimages:\n- name: nginx\n  newTag: '1.26'\n"),
		"app/deploy.yaml":                     file(deploy),
		"components/extra/kustomization.yaml": file("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [cm.yaml]\n"),
		"components/extra/cm.yaml":            file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\ndata:\n  k: v\n"),
	}
	r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{Sources: mapSources(fsys)})
	require.NoError(t, err)
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.TargetNamespace = "prod"
		k.Spec.NamePrefix = "p-"
		k.Spec.NameSuffix = "-s"
		k.Spec.Images = []release.Image{{Name: "nginx", NewName: "registry/nginx"}}
		k.Spec.Patches = []release.Patch{{
			Patch:  "- op: replace\n  path: /spec/replicas\n  value: 3\n",
			Target: &release.Selector{Kind: "Deployment"},
		}}
		k.Spec.Components = []string{"../components/extra", "../components/missing"}
		k.Spec.IgnoreMissingComponents = true
	})
	res, err := r.Build(t.Context(), k)
	require.NoError(t, err)
	require.Len(t, res.Manifests, 2)
	d := res.Manifests[0]
	assert.Equal(t, "p-web-s", d.GetName(), "spec.namePrefix replaces the kustomization's")
	assert.Equal(t, "prod", d.GetNamespace())
	replicas, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas")
	assert.Equal(t, "3", fmt.Sprint(replicas))
	containers := d.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)
	assert.Equal(t, "registry/nginx:1.26", containers[0].(map[string]any)["image"], "newName set, the kustomization's tag kept")
	assert.Equal(t, "p-extra-s", res.Manifests[1].GetName())
	assert.Equal(t, "prod", res.Manifests[1].GetNamespace())

	// The source is unchanged; a missing component is an error when not ignored.
	data, err := fs.ReadFile(fsys, "app/kustomization.yaml")
	require.NoError(t, err)
	assert.NotContains(t, string(data), "prod")
	k.Spec.IgnoreMissingComponents = false
	_, err = r.Build(t.Context(), k)
	var ee *kustomize.EntryError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, "app/kustomization.yaml", ee.File)
	assert.Equal(t, "components[1]", ee.Field)
	assert.True(t, errors.Is(err, fs.ErrNotExist), "%v", err)
}

// TestGeneratedKustomization: a directory without a kustomization file
// gets one of its YAML files and of its subdirectories that have one.
func TestGeneratedKustomization(t *testing.T) {
	fsys := fstest.MapFS{
		"plain/a.yaml":                 file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"),
		"plain/nested/b.yml":           file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"),
		"plain/notes.txt":              file("not yaml"),
		"plain/sub/kustomization.yaml": file("resources: [c.yaml]\nnamePrefix: sub-\n"),
		"plain/sub/c.yaml":             file("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"),
		"empty/README.md":              file("nothing"),
	}
	r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{Sources: mapSources(fsys)})
	require.NoError(t, err)
	res, err := r.Build(t.Context(), ks("plain", func(k *release.Kustomization) { k.Spec.TargetNamespace = "apps" }))
	require.NoError(t, err)
	var names []string
	for _, m := range res.Manifests {
		names = append(names, m.GetNamespace()+"/"+m.GetName())
	}
	assert.Equal(t, []string{"apps/a", "apps/b", "apps/sub-c"}, names)

	res, err = r.Build(t.Context(), ks("empty"))
	require.NoError(t, err)
	assert.Empty(t, res.Manifests, "an empty directory builds nothing")
}

// TestSpecImages ports Test_Images of github.com/fluxcd/pkg
// kustomize/kustomize_generator_test.go (commit
// e2cfd1a2d1815a81b3e77ef750e6528282ccccd6): how spec.images merge with
// the kustomization's own images of the same name, by the image the
// Deployment ends with.
func TestSpecImages(t *testing.T) {
	const img = "ghcr.io/example/app"
	const digest = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	deployment := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  selector:\n    matchLabels:\n      app: app\n  template:\n    metadata:\n      labels:\n        app: app\n    spec:\n      containers:\n        - name: app\n          image: " + img + "\n"
	type image = release.Image
	for _, tc := range []struct {
		name     string
		existing string // images: of the kustomization file
		flux     []image
		want     string
	}{
		{"existing newTag is preserved when only newName is set", "- {name: " + img + ", newTag: v1.2.3}",
			[]image{{Name: img, NewName: "registry.example.com/app"}}, "registry.example.com/app:v1.2.3"},
		{"existing newName is preserved when only newTag is set", "- {name: " + img + ", newName: registry.example.com/app}",
			[]image{{Name: img, NewTag: "v2.0.0"}}, "registry.example.com/app:v2.0.0"},
		{"existing digest is preserved when only newName is set", "- {name: " + img + ", digest: '" + digest + "'}",
			[]image{{Name: img, NewName: "registry.example.com/app"}}, "registry.example.com/app@" + digest},
		{"existing digest is cleared when only newTag is set", "- {name: " + img + ", digest: '" + digest + "'}",
			[]image{{Name: img, NewTag: "v2.0.0"}}, img + ":v2.0.0"},
		{"existing newTag is cleared when only digest is set", "- {name: " + img + ", newTag: v1.2.3}",
			[]image{{Name: img, Digest: digest}}, img + "@" + digest},
		{"existing newName is preserved when newTag replaces digest", "- {name: " + img + ", newName: registry.example.com/app, digest: '" + digest + "'}",
			[]image{{Name: img, NewTag: "v2.0.0"}}, "registry.example.com/app:v2.0.0"},
		{"newTag and digest set together are both applied", "- {name: " + img + ", newTag: v1.2.3}",
			[]image{{Name: img, NewTag: "v2.0.0", Digest: digest}}, img + ":v2.0.0@" + digest},
		{"entry with only a name leaves the existing entry unchanged", "- {name: " + img + ", newName: registry.example.com/app, newTag: v1.2.3}",
			[]image{{Name: img}}, "registry.example.com/app:v1.2.3"},
		{"existing fields are overridden when set", "- {name: " + img + ", newName: old.example.com/app, newTag: v1.2.3}",
			[]image{{Name: img, NewName: "registry.example.com/app", NewTag: "v2.0.0"}}, "registry.example.com/app:v2.0.0"},
		{"image without existing entry is appended", "  []",
			[]image{{Name: img, NewName: "registry.example.com/app", NewTag: "v2.0.0"}}, "registry.example.com/app:v2.0.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"kustomization.yaml": file("resources: [deployment.yaml]\nimages:\n" + tc.existing + "\n"),
				"deployment.yaml":    file(deployment),
			}
			r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{Sources: mapSources(fsys)})
			require.NoError(t, err)
			res, err := r.Build(t.Context(), ks("", func(k *release.Kustomization) { k.Spec.Images = tc.flux }))
			require.NoError(t, err)
			require.Len(t, res.Manifests, 1)
			containers, _, _ := unstructured.NestedSlice(res.Manifests[0].Object, "spec", "template", "spec", "containers")
			require.Len(t, containers, 1)
			assert.Equal(t, tc.want, containers[0].(map[string]any)["image"])
		})
	}
}
