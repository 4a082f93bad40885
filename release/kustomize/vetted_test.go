package kustomize

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func TestVettedFileSystem(t *testing.T) {
	v := newVetted(map[string][]byte{
		"a/kustomization.yaml": []byte("resources: [r.yaml]\n"),
		"a/r.yaml":             []byte("kind: X\n"),
		"a/b/app@v1.yaml":      []byte("kind: Y\n"),
		"top.yaml":             []byte("kind: Z\n"),
	})

	t.Run("read-only", func(t *testing.T) {
		for name, err := range map[string]error{
			"WriteFile": v.WriteFile("/a/new.yaml", nil),
			"Mkdir":     v.Mkdir("/c"),
			"MkdirAll":  v.MkdirAll("/c/d"),
			"RemoveAll": v.RemoveAll("/a"),
		} {
			assert.ErrorContains(t, err, "read-only", name)
		}
		_, err := v.Create("/a/new.yaml")
		assert.ErrorContains(t, err, "read-only")
		f, err := v.Open("/a/r.yaml")
		require.NoError(t, err)
		_, err = f.Write([]byte("x"))
		assert.ErrorContains(t, err, "read-only")
		data, err := io.ReadAll(f)
		require.NoError(t, err)
		assert.Equal(t, "kind: X\n", string(data))
		assert.Equal(t, []byte("kind: X\n"), mustRead(t, v, "/a/r.yaml"), "unchanged")
	})

	t.Run("paths", func(t *testing.T) {
		assert.True(t, v.IsDir("/"))
		assert.True(t, v.IsDir("/a/b"))
		assert.False(t, v.IsDir("/a/r.yaml"))
		assert.True(t, v.Exists("/a/b/app@v1.yaml"))
		assert.True(t, v.Exists("a/b"), "relative to the root")
		assert.False(t, v.Exists("/a/missing.yaml"))
		names, err := v.ReadDir("/a")
		require.NoError(t, err)
		assert.Equal(t, []string{"b", "kustomization.yaml", "r.yaml"}, names)
		names, err = v.ReadDir("/")
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "top.yaml"}, names)
		d, f, err := v.CleanedAbs("/a/b/../r.yaml")
		require.NoError(t, err)
		assert.Equal(t, filesys.ConfirmedDir("/a"), d)
		assert.Equal(t, "r.yaml", f)
		d, f, err = v.CleanedAbs("/a/b")
		require.NoError(t, err)
		assert.Equal(t, filesys.ConfirmedDir("/a/b"), d)
		assert.Empty(t, f)
		_, _, err = v.CleanedAbs("/nope")
		assert.ErrorIs(t, err, fs.ErrNotExist)
		_, err = v.ReadFile("/nope")
		assert.ErrorIs(t, err, fs.ErrNotExist)
		globbed, err := v.Glob("/a/*.yaml")
		require.NoError(t, err)
		assert.Equal(t, []string{"/a/kustomization.yaml", "/a/r.yaml"}, globbed)
	})

	t.Run("walk", func(t *testing.T) {
		var seen []string
		require.NoError(t, v.Walk("/a", func(p string, info os.FileInfo, err error) error {
			require.NoError(t, err)
			seen = append(seen, p)
			if info.IsDir() && filepath.Base(p) == "b" {
				return filepath.SkipDir
			}
			return nil
		}))
		assert.Equal(t, []string{"/a", "/a/b", "/a/kustomization.yaml", "/a/r.yaml"}, seen)
	})
}

func mustRead(t *testing.T, v *vetted, p string) []byte {
	t.Helper()
	data, err := v.ReadFile(p)
	require.NoError(t, err)
	return data
}
