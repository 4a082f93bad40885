package kustomize

import (
	"io/fs"
	"os"
	"reflect"
)

// Dir is a kustomization tree on disk, for Build and the Reconciler's
// Sources. Every look-up and read goes through an os.Root at the
// directory, so a symbolic link, even one swapped in while Build reads
// the tree, cannot lead out of it; Build opens each file without
// blocking and reads it only if what it opened is a regular file, so a
// FIFO or device swapped in is refused rather than read or waited on.
// Close it when no Build uses it any more.
type Dir struct {
	root *os.Root
	fsys fs.FS // root.FS()
}

var (
	_ fs.StatFS     = (*Dir)(nil)
	_ fs.ReadLinkFS = (*Dir)(nil)
	_ fs.ReadDirFS  = (*Dir)(nil)
)

// DirFS opens the directory dir as a Dir.
func DirFS(dir string) (*Dir, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &Dir{root: root, fsys: root.FS()}, nil
}

// Open opens name, as (*os.Root).FS does.
func (d *Dir) Open(name string) (fs.File, error) { return d.fsys.Open(name) }

// Stat returns what name is, following links within the directory.
func (d *Dir) Stat(name string) (fs.FileInfo, error) { return fs.Stat(d.fsys, name) }

// Lstat returns what name is, not following a link.
func (d *Dir) Lstat(name string) (fs.FileInfo, error) { return fs.Lstat(d.fsys, name) }

// ReadLink returns the target of the link name.
func (d *Dir) ReadLink(name string) (string, error) { return fs.ReadLink(d.fsys, name) }

// ReadDir lists the directory name, sorted by file name.
func (d *Dir) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(d.fsys, name) }

// Close closes the directory.
func (d *Dir) Close() error { return d.root.Close() }

// rootOf returns the os.Root Build reads fsys through, and the fs.FS to
// look entries up in: a Dir's own, or, for an os.DirFS, a root opened at
// its directory (closed by done), so that callers passing os.DirFS get
// the same guarantee as with a Dir. Any other fs.FS is read by name
// (root nil).
func rootOf(fsys fs.FS) (root *os.Root, look fs.FS, done func(), err error) {
	if d, ok := fsys.(*Dir); ok {
		return d.root, d.fsys, func() {}, nil
	}
	// os.DirFS's type is unexported: a string holding the directory.
	if v := reflect.ValueOf(fsys); v.IsValid() && v.Kind() == reflect.String && v.Type().PkgPath() == "os" && v.Type().Name() == "dirFS" {
		r, err := os.OpenRoot(v.String())
		if err != nil {
			return nil, nil, nil, err
		}
		return r, r.FS(), func() { r.Close() }, nil
	}
	return nil, fsys, func() {}, nil
}
