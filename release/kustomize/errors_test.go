package kustomize_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release/kustomize"
)

// tree makes a MapFS of file contents.
func tree(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for p, c := range files {
		m[p] = &fstest.MapFile{Data: []byte(c), Mode: 0o644}
	}
	return m
}

const helmRelease = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app
  namespace: apps
spec:
  interval: 5m
  chart:
    spec:
      chart: app
      sourceRef:
        kind: HelmRepository
        name: app
`

func kustomization(body string) string {
	return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body
}

// TestBuildEntryErrors: input that Build refuses before kustomize runs,
// each error naming the kustomization file and the entry.
func TestBuildEntryErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		dir   string
		opts  kustomize.Options
		file  string // kustomization file named
		field string // and its entry
		value string
		is    error
	}{
		{
			name: "missing resource file",
			files: map[string]string{
				"infrastructure/dev/kustomization.yaml": kustomization("resources:\n  - a.yaml\n  - b.yaml\n  - ../missing\n"),
				"infrastructure/dev/a.yaml":             helmRelease,
				"infrastructure/dev/b.yaml":             strings.ReplaceAll(helmRelease, "name: app\n  namespace", "name: b\n  namespace"),
			},
			dir: "infrastructure/dev", file: "infrastructure/dev/kustomization.yaml", field: "resources[2]", value: "../missing", is: fs.ErrNotExist,
		},
		{
			name: "missing base in a base",
			files: map[string]string{
				"overlay/kustomization.yaml": kustomization("resources:\n  - ../base\n"),
				"base/kustomization.yaml":    kustomization("bases:\n  - ../nowhere\n"),
			},
			dir: "overlay", file: "base/kustomization.yaml", field: "bases[0]", value: "../nowhere", is: fs.ErrNotExist,
		},
		{
			name:  "missing patch file",
			files: map[string]string{"k/kustomization.yaml": kustomization("resources: [r.yaml]\npatches:\n  - path: p.yaml\n"), "k/r.yaml": helmRelease},
			dir:   "k", file: "k/kustomization.yaml", field: "patches[0].path", value: "p.yaml", is: fs.ErrNotExist,
		},
		{
			name:  "directory without kustomization",
			files: map[string]string{"k/kustomization.yaml": kustomization("resources: [../empty]\n"), "empty/readme.md": "x"},
			dir:   "k", file: "k/kustomization.yaml", field: "resources[0]", value: "../empty", is: kustomize.ErrNoKustomization,
		},
		{
			name:  "path leaves the file system",
			files: map[string]string{"k/kustomization.yaml": kustomization("resources: [../../etc]\n")},
			dir:   "k", file: "k/kustomization.yaml", field: "resources[0]", value: "../../etc", is: kustomize.ErrOutsideFS,
		},
		{
			name:  "absolute path",
			files: map[string]string{"k/kustomization.yaml": kustomization("resources: [/etc/passwd]\n")},
			dir:   "k", file: "k/kustomization.yaml", field: "resources[0]", value: "/etc/passwd", is: kustomize.ErrOutsideFS,
		},
		{
			name: "patch file outside the kustomization's root",
			files: map[string]string{
				"k/kustomization.yaml": kustomization("resources: [r.yaml]\npatches:\n  - path: ../shared/p.yaml\n"),
				"k/r.yaml":             helmRelease, "shared/p.yaml": helmRelease,
			},
			dir: "k", file: "k/kustomization.yaml", field: "patches[0].path", value: "../shared/p.yaml", is: kustomize.ErrOutsideRoot,
		},
		{
			name: "Secret generator file outside the root",
			files: map[string]string{
				"k/kustomization.yaml": kustomization("secretGenerator:\n  - name: s\n    files:\n      - key=../secret.txt\n"),
				"secret.txt":           "hunter2",
			},
			dir: "k", file: "k/kustomization.yaml", field: "secretGenerator[0].files[0]", value: "key=../secret.txt", is: kustomize.ErrOutsideRoot,
		},
		{
			name:  "helmCharts",
			files: map[string]string{"k/kustomization.yaml": kustomization("helmCharts:\n  - name: podinfo\n    repo: https://stefanprodan.github.io/podinfo\n")},
			dir:   "k", file: "k/kustomization.yaml", field: "helmCharts", is: kustomize.ErrUnsupported,
		},
		{
			name: "HelmChartInflationGenerator as a generator file",
			files: map[string]string{
				"k/kustomization.yaml": kustomization("generators: [helm.yaml]\n"),
				"k/helm.yaml":          "apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: x\nchartName: x\n",
			},
			dir: "k", file: "k/kustomization.yaml", field: "generators[0]", value: "helm.yaml", is: kustomize.ErrUnsupported,
		},
		{
			name: "exec KRM function as an inline transformer",
			files: map[string]string{"k/kustomization.yaml": kustomization(`transformers:
  - |
    apiVersion: example.com/v1
    kind: Run
    metadata:
      name: x
      annotations:
        config.kubernetes.io/function: |
          exec:
            path: /bin/sh
`)},
			dir: "k", file: "k/kustomization.yaml", field: "transformers[0]", is: kustomize.ErrUnsupported,
		},
		{
			name:  "openapi",
			files: map[string]string{"k/kustomization.yaml": kustomization("openapi:\n  path: schema.json\n"), "k/schema.json": "{}"},
			dir:   "k", file: "k/kustomization.yaml", field: "openapi", is: kustomize.ErrUnsupported,
		},
		{
			name:  "not a kustomization",
			files: map[string]string{"k/kustomization.yaml": kustomization("resourcez: [a.yaml]\n")},
			dir:   "k", file: "k/kustomization.yaml",
		},
		{
			name:  "two kustomization files",
			files: map[string]string{"k/kustomization.yaml": kustomization(""), "k/kustomization.yml": kustomization(""), "top/kustomization.yaml": kustomization("resources: [../k]\n")},
			dir:   "top", file: "top/kustomization.yaml", field: "resources[0]", value: "../k",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := kustomize.Build(t.Context(), tree(tc.files), tc.dir, tc.opts)
			require.Error(t, err)
			assert.Nil(t, res)
			var ee *kustomize.EntryError
			require.ErrorAs(t, err, &ee, "%v", err)
			assert.Equal(t, tc.file, ee.File, "%v", err)
			assert.Equal(t, tc.field, ee.Field, "%v", err)
			assert.Equal(t, tc.value, ee.Value, "%v", err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			prefix := tc.file + ": " + tc.field
			assert.True(t, strings.HasPrefix(err.Error(), prefix), "%q starts with %q", err, prefix)
			if tc.is == fs.ErrNotExist {
				assert.Equal(t, fmt.Sprintf("%s: %s %q: file does not exist", tc.file, tc.field, tc.value), err.Error())
			}
		})
	}
}

// TestBuildRefusesRemote: every form of remote base or file kustomize
// would fetch (git over https, ssh, SCP-like, github.com shorthand,
// file://, go-getter's git::, plain https files) is refused, in every
// field that takes a path, and nothing is fetched.
func TestBuildRefusesRemote(t *testing.T) {
	remotes := []string{
		"https://github.com/fluxcd/flux2-kustomize-helm-example//infrastructure/controllers?ref=main",
		"github.com/fluxcd/flux2-kustomize-helm-example/infrastructure/controllers?ref=v1.0.0",
		"git@github.com:fluxcd/flux2-kustomize-helm-example.git/infrastructure",
		"ssh://git@example.com/org/repo.git//base",
		"file:///tmp/repo.git//base",
		"git::https://example.com/org/repo//base",
		"https://raw.githubusercontent.com/org/repo/main/release.yaml",
		"HTTP://example.com/release.yaml",
	}
	fields := []struct{ body, field string }{
		{"resources:\n  - %q\n", "resources[0]"},
		{"bases:\n  - %q\n", "bases[0]"},
		{"components:\n  - %q\n", "components[0]"},
		{"patches:\n  - path: %q\n", "patches[0].path"},
		{"configMapGenerator:\n  - name: v\n    files:\n      - %q\n", "configMapGenerator[0].files[0]"},
		{"secretGenerator:\n  - name: v\n    envs:\n      - %q\n", "secretGenerator[0].envs[0]"},
		{"crds:\n  - %q\n", "crds[0]"},
	}
	for _, f := range fields {
		for _, r := range remotes {
			t.Run(f.field+"/"+r, func(t *testing.T) {
				fsys := tree(map[string]string{"k/kustomization.yaml": kustomization(fmt.Sprintf(f.body, r))})
				_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
				require.ErrorIs(t, err, kustomize.ErrRemote)
				var ee *kustomize.EntryError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, "k/kustomization.yaml", ee.File)
				assert.Equal(t, f.field, ee.Field)
				assert.Equal(t, r, ee.Value)
			})
		}
	}
}

// TestBuildHostileInput: links out of the file system, huge files, cycles
// and exponential inclusion end in typed errors, before kustomize runs.
func TestBuildHostileInput(t *testing.T) {
	link := func(target string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
	}
	t.Run("symlink to a file outside", func(t *testing.T) {
		fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [r.yaml]\n")})
		fsys["k/r.yaml"] = link("../../outside.yaml")
		_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
		var se *kustomize.SymlinkError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "k/r.yaml", se.Path)
		assert.ErrorIs(t, err, kustomize.ErrOutsideFS)
		assert.Contains(t, err.Error(), `k/kustomization.yaml: resources[0] "r.yaml": symlink k/r.yaml -> ../../outside.yaml`)
	})
	t.Run("symlinked directory to an absolute path", func(t *testing.T) {
		fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [base/r.yaml]\n")})
		fsys["k/base"] = link("/etc")
		_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
		assert.ErrorIs(t, err, kustomize.ErrOutsideFS)
	})
	t.Run("symlink on the disk that leaves the root", func(t *testing.T) {
		root := t.TempDir()
		outside := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.yaml"), []byte(helmRelease), 0o600))
		require.NoError(t, os.MkdirAll(filepath.Join(root, "k"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "k", "kustomization.yaml"), []byte(kustomization("resources: [r.yaml]\n")), 0o644))
		require.NoError(t, os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(root, "k", "r.yaml")))
		_, err := kustomize.Build(t.Context(), os.DirFS(root), "k", kustomize.Options{})
		assert.ErrorIs(t, err, kustomize.ErrOutsideFS)
	})
	t.Run("symlink inside the file system is followed", func(t *testing.T) {
		fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [r.yaml]\n"), "shared/r.yaml": helmRelease})
		fsys["k/r.yaml"] = link("../shared/r.yaml")
		res, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
		require.NoError(t, err)
		assert.Len(t, res.Objects.Releases, 1)
	})
	t.Run("loop of symlinks", func(t *testing.T) {
		fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [a]\n")})
		fsys["k/a"], fsys["k/b"] = link("b"), link("a")
		_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
		var se *kustomize.SymlinkError
		require.ErrorAs(t, err, &se)
		assert.Contains(t, se.Reason, "more than 40 links")
	})
	t.Run("huge file", func(t *testing.T) {
		fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [big.yaml]\n"), "k/big.yaml": helmRelease + "#" + strings.Repeat("x", 4096)})
		_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{MaxFileBytes: 4096})
		var le *kustomize.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "file size", le.What)
		assert.Equal(t, int64(4096), le.Limit)
		assert.ErrorIs(t, err, kustomize.ErrLimit)
		assert.Contains(t, err.Error(), `k/kustomization.yaml: resources[0] "big.yaml": file size 4097 exceeds the limit of 4096`)
	})
	t.Run("total size", func(t *testing.T) {
		files := map[string]string{}
		var res []string
		for i := range 5 {
			name := fmt.Sprintf("r%d.yaml", i)
			files["k/"+name] = strings.ReplaceAll(helmRelease, "name: app\n  namespace", fmt.Sprintf("name: app%d\n  namespace", i))
			res = append(res, name)
		}
		files["k/kustomization.yaml"] = kustomization("resources: [" + strings.Join(res, ", ") + "]\n")
		_, err := kustomize.Build(t.Context(), tree(files), "k", kustomize.Options{MaxTotalBytes: 1000})
		var le *kustomize.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "total size", le.What)
	})
	t.Run("too many files", func(t *testing.T) {
		fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [a.yaml, b.yaml]\n"), "k/a.yaml": helmRelease, "k/b.yaml": helmRelease})
		_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{MaxFiles: 2})
		var le *kustomize.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "files", le.What)
		var ee *kustomize.EntryError
		require.ErrorAs(t, err, &ee)
		assert.Equal(t, "resources[1]", ee.Field)
	})
	t.Run("cycle of bases", func(t *testing.T) {
		fsys := tree(map[string]string{
			"a/kustomization.yaml": kustomization("resources: [../b]\n"),
			"b/kustomization.yaml": kustomization("resources: [../c]\n"),
			"c/kustomization.yaml": kustomization("resources: [../a]\n"),
		})
		_, err := kustomize.Build(t.Context(), fsys, "a", kustomize.Options{})
		var ce *kustomize.CycleError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, []string{"a", "b", "c", "a"}, ce.Cycle)
		assert.EqualError(t, err, `c/kustomization.yaml: resources[0] "../a": cycle of kustomizations: a -> b -> c -> a`)
	})
	t.Run("exponential inclusion", func(t *testing.T) {
		// Each level includes the next twice (via two components): 2^20
		// kustomizations from 21 files.
		files := map[string]string{}
		for i := range 20 {
			files[fmt.Sprintf("l%d/kustomization.yaml", i)] = kustomization(fmt.Sprintf("resources: [../l%d, ../l%d/../l%d]\n", i+1, i+1, i+1))
		}
		files["l20/kustomization.yaml"] = kustomization("")
		_, err := kustomize.Build(t.Context(), tree(files), "l0", kustomize.Options{})
		var le *kustomize.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "kustomizations", le.What)
		assert.Equal(t, int64(1000), le.Limit)
	})
	t.Run("depth", func(t *testing.T) {
		files := map[string]string{}
		for i := range 10 {
			files[fmt.Sprintf("l%d/kustomization.yaml", i)] = kustomization(fmt.Sprintf("resources: [../l%d]\n", i+1))
		}
		files["l10/kustomization.yaml"] = kustomization("")
		_, err := kustomize.Build(t.Context(), tree(files), "l0", kustomize.Options{MaxDepth: 5})
		var le *kustomize.LimitError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, "depth", le.What)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := kustomize.Build(ctx, os.DirFS(fleet), "infrastructure/dev", kustomize.Options{})
		assert.ErrorIs(t, err, context.Canceled)
	})
	t.Run("dir outside the file system", func(t *testing.T) {
		_, err := kustomize.Build(t.Context(), os.DirFS(fleet), "../fleet", kustomize.Options{})
		assert.ErrorIs(t, err, kustomize.ErrOutsideFS)
	})
}

// TestBuildLocalLookalikes: local paths that only resemble remote ones
// are read from the file system, and names kyaml's in-memory file system
// would refuse build too.
func TestBuildLocalLookalikes(t *testing.T) {
	for _, dir := range []string{"github.com-mirror", "app@v1", "git", "values prod", "überall", "c+d"} {
		t.Run(dir, func(t *testing.T) {
			fsys := tree(map[string]string{
				"k/kustomization.yaml":      kustomization("resources: [../" + dir + "]\n"),
				dir + "/kustomization.yaml": kustomization("resources: [r.yaml]\n"),
				dir + "/r.yaml":             helmRelease,
			})
			res, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
			require.NoError(t, err)
			assert.Len(t, res.Objects.Releases, 1)
		})
	}
}

// TestBuildAliasBomb: YAML whose aliases expand far past what is written,
// in any document of a file, is refused before kustomize, which would
// expand it without limit, runs: a "billion laughs" (9^10 strings in
// 1 KB), and a list aliased many times, which go-yaml's own guard lets
// through, in the second document of a file.
func TestBuildAliasBomb(t *testing.T) {
	var laughs strings.Builder
	laughs.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\na0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d,*a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	var wide strings.Builder
	wide.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: wide\ndata:\n  big: &big\n")
	for i := range 2000 {
		fmt.Fprintf(&wide, "  - v%d\n", i)
	}
	for i := range 500 {
		fmt.Fprintf(&wide, "  c%d: *big\n", i)
	}
	tests := []struct {
		name, file, want string
	}{
		{name: "billion laughs", file: laughs.String(), want: "document 1: YAML aliases expand the document past 10480 nodes (120 written; the budget is 4 × written + 10000): refused"},
		{name: "wide alias in the second document", file: wide.String(), want: "document 2: YAML aliases expand the document past "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := tree(map[string]string{"k/kustomization.yaml": kustomization("resources: [bomb.yaml]\n"), "k/bomb.yaml": tt.file})
			_, err := kustomize.Build(t.Context(), fsys, "k", kustomize.Options{})
			var le *kustomize.LimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, "YAML aliases", le.What)
			assert.Contains(t, err.Error(), `k/kustomization.yaml: resources[0] "bomb.yaml": YAML aliases: k/bomb.yaml: `+tt.want)
		})
	}
}
