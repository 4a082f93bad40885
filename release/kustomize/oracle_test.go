package kustomize_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// fleet is a tree in Flux's recommended layout.
const fleet = "testdata/fleet"

// krustyOptions are the krusty options Build's options stand for, as the
// kustomize CLI would set them.
func krustyOptions(o kustomize.Options) *krusty.Options {
	d := kustomize.DefaultOptions()
	ko := &krusty.Options{Reorder: d.Reorder, LoadRestrictions: d.LoadRestrictions, PluginConfig: kustypes.DisabledPluginConfig()}
	if o.Reorder != "" {
		ko.Reorder = o.Reorder
	}
	if o.LoadRestrictions != kustypes.LoadRestrictionsUnknown {
		ko.LoadRestrictions = o.LoadRestrictions
	}
	return ko
}

// oracle is kustomize's own build of root/dir, from disk.
func oracle(t testing.TB, root, dir string, o kustomize.Options) resmap.ResMap {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join(root, dir))
	require.NoError(t, err)
	m, err := krusty.MakeKustomizer(krustyOptions(o)).Run(filesys.MakeFsOnDisk(), abs)
	require.NoError(t, err)
	return m
}

// decodedByHelmfleet is the specification of what Build decodes rather
// than keeps plain.
func decodedByHelmfleet(group, kind string) bool {
	switch group + " " + kind {
	case "helm.toolkit.fluxcd.io HelmRelease", "kustomize.toolkit.fluxcd.io Kustomization",
		"source.toolkit.fluxcd.io HelmRepository", "source.toolkit.fluxcd.io OCIRepository", "source.toolkit.fluxcd.io HelmChart",
		"policy.karmada.io PropagationPolicy", "policy.karmada.io ClusterPropagationPolicy",
		"policy.karmada.io OverridePolicy", "policy.karmada.io ClusterOverridePolicy":
		return true
	}
	return false
}

// assertSameAsKrusty checks that res holds exactly what krusty built:
// the same objects in the same order (Origins), the plain ones equal,
// and the others equal to what release.Load makes of krusty's output.
func assertSameAsKrusty(t *testing.T, want resmap.ResMap, res *kustomize.Result) {
	t.Helper()
	require.Len(t, res.Origins, want.Size(), "objects")
	var stream bytes.Buffer
	plain := 0
	for i, r := range want.Resources() {
		got := res.Origins[i]
		assert.Equal(t, []string{r.GetApiVersion(), r.GetKind(), r.GetNamespace(), r.GetName()},
			[]string{got.APIVersion, got.Kind, got.Namespace, got.Name}, "object %d", i)
		if decodedByHelmfleet(r.CurId().Group, r.GetKind()) {
			y, err := r.AsYAML()
			require.NoError(t, err)
			stream.WriteString("---\n")
			stream.Write(y)
			continue
		}
		obj, err := r.Map()
		require.NoError(t, err)
		if assert.Less(t, plain, len(res.Plain), "plain objects") {
			assert.Equal(t, obj, res.Plain[plain].Object, "plain object %d (%s)", plain, r.CurId())
		}
		plain++
	}
	assert.Len(t, res.Plain, plain, "plain objects")
	objs, err := release.Load(&stream)
	require.NoError(t, err)
	assert.Equal(t, objs, res.Objects)
}

// mapFS copies a directory of the disk into a MapFS.
func mapFS(t testing.TB, root string) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(root, p))
		m[p] = &fstest.MapFile{Data: data, Mode: 0o644}
		return err
	}))
	return m
}

// writeTree writes a MapFS to a temporary directory, for the oracle.
func writeTree(t testing.TB, m fstest.MapFS) string {
	t.Helper()
	root := t.TempDir()
	for p, f := range m {
		if f.Mode&fs.ModeSymlink != 0 {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
			require.NoError(t, os.Symlink(string(f.Data), filepath.Join(root, p)))
			continue
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), f.Data, 0o644))
	}
	return root
}

func TestBuildMatchesKrusty(t *testing.T) {
	dirs := []string{"clusters/dev", "clusters/prod", "infrastructure/crds", "infrastructure/dev", "infrastructure/prod", "apps/dev", "apps/prod"}
	options := []struct {
		name string
		opts kustomize.Options
	}{
		{"defaults", kustomize.Options{}},
		{"reorder none", kustomize.Options{Reorder: krusty.ReorderOptionNone}},
		{"load anywhere", kustomize.Options{LoadRestrictions: kustypes.LoadRestrictionsNone}},
		{"origins", kustomize.Options{Origins: true}},
	}
	filesystems := []struct {
		name string
		fsys fs.FS
	}{
		{"DirFS", os.DirFS(fleet)},
		{"MapFS", mapFS(t, fleet)},
	}
	for _, o := range options {
		for _, dir := range dirs {
			want := oracle(t, fleet, dir, o.opts)
			for _, f := range filesystems {
				t.Run(o.name+"/"+dir+"/"+f.name, func(t *testing.T) {
					res, err := kustomize.Build(t.Context(), f.fsys, dir, o.opts)
					require.NoError(t, err)
					assertSameAsKrusty(t, want, res)
				})
			}
		}
	}
}

// TestBuildMatchesKrustySmallTrees: trees that need an option or a field
// the fleet does not use, each against krusty on disk.
func TestBuildMatchesKrustySmallTrees(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		dir   string
		opts  kustomize.Options
	}{
		{
			name: "patch from outside the root with LoadRestrictionsNone (as Flux builds)",
			files: map[string]string{
				"dev/kustomization.yaml":  kustomization("resources: [../base]\npatches:\n  - path: ../shared/suspend.yaml\n"),
				"base/kustomization.yaml": kustomization("resources: [release.yaml]\n"),
				"base/release.yaml":       helmRelease,
				"shared/suspend.yaml":     "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: apps\nspec:\n  suspend: true\n",
			},
			dir: "dev", opts: kustomize.Options{LoadRestrictions: kustypes.LoadRestrictionsNone},
		},
		{
			name: "the kustomization's own originAnnotations are kept",
			files: map[string]string{
				"dev/kustomization.yaml":  kustomization("resources: [../base]\nbuildMetadata: [originAnnotations]\nnamePrefix: dev-\n"),
				"base/kustomization.yaml": kustomization("resources: [release.yaml]\nconfigMapGenerator:\n  - name: values\n    literals: [a=b]\n"),
				"base/release.yaml":       helmRelease,
			},
			dir: "dev", opts: kustomize.Options{Origins: true},
		},
		{
			name: "the deprecated patch fields: patchesStrategicMerge (file and inline), patchesJson6902 (file and inline)",
			files: map[string]string{
				"dev/kustomization.yaml": kustomization(`resources: [release.yaml]
patchesStrategicMerge:
  - suspend.yaml
  - |
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: app
      namespace: apps
    spec:
      timeout: 10m
patchesJson6902:
  - target: {group: helm.toolkit.fluxcd.io, version: v2, kind: HelmRelease, name: app, namespace: apps}
    path: version.yaml
  - target: {group: helm.toolkit.fluxcd.io, version: v2, kind: HelmRelease, name: app, namespace: apps}
    patch: '[{"op": "add", "path": "/spec/maxHistory", "value": 3}]'
`),
				"dev/release.yaml": helmRelease,
				"dev/suspend.yaml": "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\n  namespace: apps\nspec:\n  suspend: true\n",
				"dev/version.yaml": "- op: add\n  path: /spec/chart/spec/version\n  value: 1.2.3\n",
			},
			dir: "dev",
		},
		{
			name: "components, replacements, images, replicas, sortOptions, generatorOptions",
			files: map[string]string{
				"dev/kustomization.yaml": kustomization(`resources: [deploy.yaml, release.yaml]
components: [../comp]
images:
  - name: nginx
    newTag: "1.27"
replicas:
  - name: web
    count: 2
generatorOptions:
  disableNameSuffixHash: true
configMapGenerator:
  - name: env
    envs: [env.txt]
replacements:
  - path: replacement.yaml
sortOptions:
  order: fifo
`),
				"dev/deploy.yaml":         "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: nginx\n",
				"dev/release.yaml":        helmRelease,
				"dev/env.txt":             "REGION=eu-west-1\n",
				"dev/replacement.yaml":    "source: {kind: ConfigMap, name: env, fieldPath: data.REGION}\ntargets:\n  - select: {kind: HelmRelease}\n    fieldPaths: [spec.values.region]\n    options: {create: true}\n",
				"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonAnnotations:\n  team: platform\n",
			},
			dir: "dev",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := tree(tc.files)
			root := writeTree(t, fsys)
			want := oracle(t, root, tc.dir, tc.opts)
			res, err := kustomize.Build(t.Context(), fsys, tc.dir, tc.opts)
			require.NoError(t, err)
			assertSameAsKrusty(t, want, res)
		})
	}
}
