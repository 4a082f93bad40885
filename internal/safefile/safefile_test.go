//go:build unix

package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenRegular(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("secret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "file"), []byte("data"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "out")))
	require.NoError(t, os.Symlink("file", filepath.Join(dir, "in")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	tests := []struct {
		name       string
		file       string
		notRegular bool // else: any error
		ok         bool
	}{
		{name: "regular file", file: "file", ok: true},
		{name: "link inside", file: "in", ok: true},
		{name: "link outside", file: "out"},
		{name: "directory", file: "sub", notRegular: true},
		{name: "fifo does not block", file: "fifo", notRegular: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := OpenRegular(root, tt.file)
			if tt.ok {
				require.NoError(t, err)
				f.Close()
				return
			}
			require.Error(t, err)
			assert.Equal(t, tt.notRegular, errors.Is(err, ErrNotRegular))
		})
	}
}
