package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// vetted is the file system kustomize builds from: a read-only
// filesys.FileSystem over exactly the files the walk read and checked,
// each at "/" + its path in the fs.FS. Writes fail. Unlike kyaml's
// in-memory file system, it takes any name an fs.FS may hold (kyaml's
// refuses all but [a-zA-Z0-9-_.:], so "app@v1" or "values prod.yaml"
// would not build).
type vetted struct {
	files map[string][]byte   // by path in the fs.FS
	dirs  map[string][]string // directory ("." the root): its entries' names, sorted
}

var _ filesys.FileSystem = (*vetted)(nil)

func newVetted(files map[string][]byte) *vetted {
	v := &vetted{files: files, dirs: map[string][]string{".": nil}}
	for p := range files {
		for child := p; ; {
			dir := path.Dir(child)
			v.dirs[dir] = append(v.dirs[dir], path.Base(child))
			if dir == "." {
				break
			}
			child = dir
		}
	}
	for d, names := range v.dirs {
		slices.Sort(names)
		v.dirs[d] = slices.Compact(names)
	}
	return v
}

// rel turns kustomize's path (absolute from "/", or relative to it) into
// a path of the fs.FS.
func rel(p string) string {
	p = path.Clean("/" + filepath.ToSlash(p))
	if p == "/" {
		return "."
	}
	return p[1:]
}

func abs(p string) string {
	if p == "." {
		return "/"
	}
	return "/" + p
}

func errReadOnly(op, p string) error {
	return &fs.PathError{Op: op, Path: p, Err: errors.New("the file system of a kustomize.Build is read-only")}
}

func notExist(op, p string) error { return &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist} }

// Create fails: the file system is read-only.
func (v *vetted) Create(p string) (filesys.File, error) { return nil, errReadOnly("create", p) }

// Mkdir fails: the file system is read-only.
func (v *vetted) Mkdir(p string) error { return errReadOnly("mkdir", p) }

// MkdirAll fails: the file system is read-only.
func (v *vetted) MkdirAll(p string) error { return errReadOnly("mkdir", p) }

// RemoveAll fails: the file system is read-only.
func (v *vetted) RemoveAll(p string) error { return errReadOnly("remove", p) }

// WriteFile fails: the file system is read-only.
func (v *vetted) WriteFile(p string, _ []byte) error { return errReadOnly("write", p) }

// Open opens a file for reading.
func (v *vetted) Open(p string) (filesys.File, error) {
	r := rel(p)
	data, ok := v.files[r]
	if !ok {
		if _, dir := v.dirs[r]; dir {
			return &file{info: info{name: path.Base(abs(r)), dir: true}}, nil
		}
		return nil, notExist("open", p)
	}
	return &file{Reader: bytes.NewReader(data), info: info{name: path.Base(r), size: int64(len(data))}}, nil
}

// IsDir reports whether p is a directory.
func (v *vetted) IsDir(p string) bool {
	_, ok := v.dirs[rel(p)]
	return ok
}

// ReadDir lists the names in directory p, sorted.
func (v *vetted) ReadDir(p string) ([]string, error) {
	names, ok := v.dirs[rel(p)]
	if !ok {
		return nil, notExist("readdir", p)
	}
	return slices.Clone(names), nil
}

// CleanedAbs splits p into its directory and, for a file, its name.
func (v *vetted) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	r := rel(p)
	if _, ok := v.dirs[r]; ok {
		return filesys.ConfirmedDir(abs(r)), "", nil
	}
	if _, ok := v.files[r]; ok {
		return filesys.ConfirmedDir(abs(path.Dir(r))), path.Base(r), nil
	}
	return "", "", notExist("stat", p)
}

// Exists reports whether p is a file or a directory.
func (v *vetted) Exists(p string) bool {
	r := rel(p)
	_, file := v.files[r]
	_, dir := v.dirs[r]
	return file || dir
}

// Glob returns the files and directories matching pattern, sorted.
func (v *vetted) Glob(pattern string) ([]string, error) {
	pattern = filepath.ToSlash(pattern)
	if _, err := path.Match(pattern, ""); err != nil {
		return nil, err
	}
	var out []string
	match := func(r string) {
		name := abs(r)
		if !strings.HasPrefix(pattern, "/") {
			name = r
		}
		if ok, _ := path.Match(pattern, name); ok {
			out = append(out, name)
		}
	}
	for r := range v.files {
		match(r)
	}
	for r := range v.dirs {
		match(r)
	}
	slices.Sort(out)
	return out, nil
}

// ReadFile returns a copy of a file's content.
func (v *vetted) ReadFile(p string) ([]byte, error) {
	data, ok := v.files[rel(p)]
	if !ok {
		return nil, notExist("read", p)
	}
	return bytes.Clone(data), nil
}

// Walk walks the tree at p in lexical order, as filepath.Walk does.
func (v *vetted) Walk(p string, fn filepath.WalkFunc) error {
	r := rel(p)
	var walk func(r string) error
	walk = func(r string) error {
		if data, ok := v.files[r]; ok {
			return fn(abs(r), info{name: path.Base(r), size: int64(len(data))}, nil)
		}
		names, ok := v.dirs[r]
		if !ok {
			return fn(abs(r), nil, notExist("lstat", abs(r)))
		}
		if err := fn(abs(r), info{name: path.Base(abs(r)), dir: true}, nil); err != nil {
			if errors.Is(err, filepath.SkipDir) {
				return nil
			}
			return err
		}
		for _, n := range names {
			if err := walk(path.Join(r, n)); err != nil && !errors.Is(err, filepath.SkipDir) {
				return err
			}
		}
		return nil
	}
	err := walk(r)
	if errors.Is(err, filepath.SkipDir) || errors.Is(err, filepath.SkipAll) {
		return nil
	}
	return err
}

// file is an open file of a vetted file system.
type file struct {
	*bytes.Reader
	info info
}

func (f *file) Read(b []byte) (int, error) {
	if f.Reader == nil {
		return 0, fmt.Errorf("read %s: is a directory", f.info.name)
	}
	return f.Reader.Read(b)
}

func (f *file) Write([]byte) (int, error)  { return 0, errReadOnly("write", f.info.name) }
func (f *file) Close() error               { return nil }
func (f *file) Stat() (os.FileInfo, error) { return f.info, nil }

// info describes a file or directory of a vetted file system.
type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string { return i.name }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }
