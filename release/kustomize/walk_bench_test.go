package kustomize

import (
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// BenchmarkWalkCopy measures what Build does before kustomize runs:
// reading and checking the tree (walk), then either copying the files into
// kyaml's in-memory file system (copy, the alternative) or indexing them
// as the read-only vetted file system Build uses (vetted).
func BenchmarkWalkCopy(b *testing.B) {
	dirs := []string{"clusters/dev", "clusters/prod", "infrastructure/crds", "infrastructure/dev", "infrastructure/prod", "apps/dev", "apps/prod"}
	fsys := os.DirFS("testdata/fleet")
	// Into memory first, as BenchmarkBuild has it.
	mfs := fstest.MapFS{}
	if err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		mfs[p] = &fstest.MapFile{Data: data}
		return err
	}); err != nil {
		b.Fatal(err)
	}
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range dirs {
				w := newWalker(b.Context(), mfs, DefaultOptions())
				if _, err := w.kustomization(dir); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("walk+vetted", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range dirs {
				w := newWalker(b.Context(), mfs, DefaultOptions())
				if _, err := w.kustomization(dir); err != nil {
					b.Fatal(err)
				}
				_ = newVetted(w.files)
			}
		}
	})
	b.Run("walk+copy", func(b *testing.B) {
		for b.Loop() {
			for _, dir := range dirs {
				w := newWalker(b.Context(), mfs, DefaultOptions())
				if _, err := w.kustomization(dir); err != nil {
					b.Fatal(err)
				}
				mem := filesys.MakeFsInMemory()
				for p, data := range w.files {
					if err := mem.WriteFile("/"+p, data); err != nil {
						b.Fatal(err)
					}
				}
			}
		}
	})
}
