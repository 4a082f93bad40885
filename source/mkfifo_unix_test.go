//go:build unix

package source

import (
	"syscall"
	"testing"
)

// mkfifo makes a named pipe at p.
func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
}
