// Package safefile opens files under a directory an adversary may be
// changing while they are read: through an os.Root, so that no symbolic
// link (one swapped in after a check included) leads out of the
// directory, without blocking, so that a FIFO swapped in cannot hang the
// read, and checked after the open, so that what is read is the regular
// file that was opened rather than whatever the name was checked as.
package safefile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrNotRegular is returned by OpenRegular when the opened file is not a
// regular file (a directory, FIFO, device or socket).
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens name for reading within root, without blocking, and
// returns it only if what was opened is a regular file; otherwise the
// error wraps ErrNotRegular and says the file's type. The caller closes
// the file.
func OpenRegular(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w (mode %s)", ErrNotRegular, fi.Mode().Type())
	}
	return f, nil
}
