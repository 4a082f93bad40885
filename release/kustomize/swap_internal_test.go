//go:build unix

package kustomize

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// swapTree writes a kustomization with one resource, cm.yaml, and
// returns its directory and a file outside it.
func swapTree(t *testing.T) (dir, outside string) {
	t.Helper()
	outside = filepath.Join(t.TempDir(), "secret.yaml")
	require.NoError(t, os.WriteFile(outside, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stolen\ndata:\n  host: secret-host\n"), 0o600))
	dir = t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n- cm.yaml\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n"), 0o600))
	return dir, outside
}

// TestBuildSwappedFile: a file swapped, after the walk checked it and
// before it is opened, for a link to outside the tree or for a FIFO is
// neither followed nor waited on, whether the tree is a Dir or an
// os.DirFS.
func TestBuildSwappedFile(t *testing.T) {
	swaps := []struct {
		name string
		swap func(t *testing.T, p, outside string)
		want string
	}{
		{name: "link to outside", swap: func(t *testing.T, p, outside string) {
			require.NoError(t, os.Symlink(outside, p))
		}, want: "cm.yaml"},
		{name: "fifo", swap: func(t *testing.T, p, _ string) {
			require.NoError(t, syscall.Mkfifo(p, 0o600))
		}, want: "cm.yaml changed while it was read: it is no longer a regular file"},
	}
	kinds := []struct {
		name string
		open func(t *testing.T, dir string) fs.FS
	}{
		{name: "DirFS", open: func(t *testing.T, dir string) fs.FS {
			d, err := DirFS(dir)
			require.NoError(t, err)
			t.Cleanup(func() { d.Close() })
			return d
		}},
		{name: "os.DirFS", open: func(_ *testing.T, dir string) fs.FS { return os.DirFS(dir) }},
	}
	for _, k := range kinds {
		for _, sw := range swaps {
			t.Run(k.name+"/"+sw.name, func(t *testing.T) {
				dir, outside := swapTree(t)
				target := filepath.Join(dir, "cm.yaml")
				swapped := false
				h := hooks{prepare: func(w *walker, _ string) error {
					w.beforeOpen = func(p string) {
						if p == "cm.yaml" && !swapped {
							swapped = true
							require.NoError(t, os.Remove(target))
							sw.swap(t, target, outside)
						}
					}
					return nil
				}}
				res, err := build(t.Context(), k.open(t, dir), ".", Options{}, h)
				require.True(t, swapped, "the hook ran")
				if err == nil {
					for _, o := range res.Plain {
						assert.NotEqual(t, "stolen", o.GetName(), "read through the swapped link")
					}
				}
				require.Error(t, err)
				var ee *EntryError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, "kustomization.yaml", ee.File)
				assert.Equal(t, "resources[0]", ee.Field)
				assert.Contains(t, err.Error(), sw.want)
			})
		}
	}
}

// TestBuildNotRegularFile: a FIFO or device among the files of the tree
// is refused, not read (a FIFO would block the walk).
func TestBuildNotRegularFile(t *testing.T) {
	dir, _ := swapTree(t)
	target := filepath.Join(dir, "cm.yaml")
	require.NoError(t, os.Remove(target))
	require.NoError(t, syscall.Mkfifo(target, 0o600))
	mapfs := fstest.MapFS{
		"kustomization.yaml": {Data: []byte("resources:\n- cm.yaml\n")},
		"cm.yaml":            {Mode: fs.ModeDevice},
	}
	tests := []struct {
		name string
		fsys fs.FS
	}{
		{name: "fifo on disk", fsys: os.DirFS(dir)},
		{name: "device in a MapFS", fsys: mapfs},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(t.Context(), tt.fsys, ".", Options{})
			require.ErrorIs(t, err, ErrNotRegular)
			var ee *EntryError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, "resources[0]", ee.Field)
			assert.Equal(t, "cm.yaml", ee.Value)
		})
	}
}
