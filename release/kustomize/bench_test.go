package kustomize_test

import (
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/helmfleet/helmfleet/release/kustomize"
)

// seedDirs are the kustomizations of the seed-003 tree Flux would build.
var seedDirs = []string{"clusters/dev", "clusters/prod", "infrastructure/crds", "infrastructure/dev", "infrastructure/prod", "apps/dev", "apps/prod"}

// BenchmarkBuild builds every kustomization of the seed-003 tree: Build
// from an in-memory fs.FS (walk, copy, krusty, decode) against krusty's
// own Run over kyaml's in-memory file system holding the same tree, with
// the same options (the baseline does not decode). helmfleet-origins
// also records each object's file (Options.Origins).
//
// kustomize prints deprecation warnings to standard error, into the
// benchmark's output; run the compiled test binary with 2>/dev/null for
// clean lines.
func BenchmarkBuild(b *testing.B) {
	tree := mapFS(b, fleet)
	b.Run("helmfleet", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range seedDirs {
				if _, err := kustomize.Build(b.Context(), tree, dir, kustomize.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("helmfleet-origins", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range seedDirs {
				if _, err := kustomize.Build(b.Context(), tree, dir, kustomize.Options{Origins: true}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("krusty", func(b *testing.B) {
		mem := filesys.MakeFsInMemory()
		for p, f := range tree {
			if err := mem.WriteFile("/"+p, f.Data); err != nil {
				b.Fatal(err)
			}
		}
		k := krusty.MakeKustomizer(krustyOptions(kustomize.Options{}))
		for b.Loop() {
			for _, dir := range seedDirs {
				if _, err := k.Run(mem, "/"+dir); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
