package kustomize

import (
	"io/fs"
	"os"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// BenchmarkWalkCopy is the part of Build that an adapter from fs.FS to
// kyaml's filesys.FileSystem could save: reading and checking the tree
// (which an adapter would still need, to refuse remote entries and
// symlinks out before kustomize runs) and copying it into kyaml's
// in-memory file system.
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
