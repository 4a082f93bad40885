package source

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

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"

	"github.com/helmfleet/helmfleet/internal/safefile"
)

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// loadDir loads a chart directory as Helm's loader.LoadDir does (the
// .helmignore rules and Helm's default ones, files in lexical order, a
// UTF-8 byte order mark dropped), with the checks Flux's secure loader
// makes and Helm's lacks:
//
//   - a symbolic link is followed only when its target, every link on the
//     way resolved, lies inside the chart directory (itself resolved);
//     a link that leaves it, cannot be resolved, or leads to a directory
//     that contains the link (a cycle), is an error naming the link. Links
//     inside the directory stay allowed: charts share templates and files
//     that way, and they cannot reach anything the directory does not
//     already hold;
//   - a device, FIFO, socket or other non-regular file is an error naming
//     it (Helm refuses them too, but reads through a link first);
//   - at most MaxChartEntries entries (files and directories, as often as
//     links make the walk visit them) are visited and limit bytes read,
//     the entries and bytes of the subchart archives among the files
//     (charts/*.tgz, which Helm's loader expands) counted in.
//
// Files that .helmignore excludes are neither checked nor read.
//
// Every directory is listed and every file opened through an os.Root at
// the chart directory, so a file swapped for a link between the checks
// and the read cannot make it read anything outside the directory.
func loadDir(dir string, limit int64) (*chart.Chart, error) {
	return loadDirHooked(dir, limit, nil)
}

// loadDirHooked is loadDir, calling beforeOpen (when not nil) with each
// file's path in the chart after its checks and before it is opened.
func loadDirHooked(dir string, limit int64, beforeOpen func(rel string)) (*chart.Chart, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChartNotFound, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChartNotFound, err)
	}
	fsroot, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrChartNotFound, err)
	}
	defer fsroot.Close()
	w := &dirWalker{root: root, fs: fsroot, beforeOpen: beforeOpen, limit: limit, name: filepath.Base(root), rules: ignore.Empty()}
	if data, ok, err := w.readIgnoreFile(); err != nil {
		return nil, err
	} else if ok {
		rules, err := ignore.Parse(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalidArchive, ignore.HelmIgnore, err)
		}
		w.rules = rules
	}
	w.rules.AddDefaults()
	if err := w.walk(root, "", []string{root}); err != nil {
		return nil, err
	}
	// Helm's loader expands the subchart archives among the files (what
	// they expand to counts against the same caps) and the aliases of the
	// YAML files it parses.
	b := &budget{chart: w.name, limit: w.limit, size: w.size, entries: w.entries}
	if err := b.checkFiles(w.files); err != nil {
		return nil, err
	}
	c, err := loader.LoadFiles(w.files)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidArchive, err)
	}
	return c, nil
}

type dirWalker struct {
	root       string   // resolved
	fs         *os.Root // at root: every listing and read goes through it
	beforeOpen func(rel string)
	name       string // for LimitError
	limit      int64
	rules      *ignore.Rules
	files      []*loader.BufferedFile
	size       int64
	entries    int // files and directories visited
}

// readIgnoreFile reads .helmignore with the same checks as any file.
func (w *dirWalker) readIgnoreFile() ([]byte, bool, error) {
	full := filepath.Join(w.root, ignore.HelmIgnore)
	fi, err := w.fs.Lstat(ignore.HelmIgnore)
	if err != nil {
		return nil, false, nil // no .helmignore
	}
	target, fi, err := w.resolve(ignore.HelmIgnore, full, fi)
	if err != nil {
		return nil, false, err
	}
	data, err := w.read(ignore.HelmIgnore, target, fi)
	return data, err == nil, err
}

// resolve follows full when it is a link, refusing one that leaves the
// root; it returns the path to read and its information.
func (w *dirWalker) resolve(rel, full string, fi fs.FileInfo) (string, fs.FileInfo, error) {
	if fi.Mode()&fs.ModeSymlink == 0 {
		return full, fi, nil
	}
	target, err := filepath.EvalSymlinks(full)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s is a link that cannot be resolved: %v", ErrInvalidArchive, rel, err)
	}
	if !within(w.root, target) {
		return "", nil, fmt.Errorf("%w: %s is a link to %s, outside the chart directory", ErrInvalidArchive, rel, target)
	}
	tfi, err := os.Stat(target)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s: %v", ErrInvalidArchive, rel, err)
	}
	return target, tfi, nil
}

// within reports whether p is root or lies under it; both are resolved.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// inRoot returns the path of full (a resolved path within w.root) relative
// to w.root, for w.fs.
func (w *dirWalker) inRoot(full string) string {
	rel, err := filepath.Rel(w.root, full)
	if err != nil {
		return full // not within: w.fs refuses it
	}
	return rel
}

// walk reads the directory real (resolved), known in the chart as rel;
// ancestors are the resolved directories on the way from the root.
func (w *dirWalker) walk(real, rel string, ancestors []string) error {
	d, err := w.fs.Open(w.inRoot(real))
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidArchive, rel, err)
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidArchive, rel, err)
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, de := range entries {
		name := path.Join(rel, de.Name())
		full := filepath.Join(real, de.Name())
		fi, err := w.fs.Lstat(w.inRoot(full))
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidArchive, name, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			// Helm matches the ignore rules against the link's target.
			if t, err := os.Stat(full); err == nil && w.rules.Ignore(name, t) {
				continue
			}
		}
		target, fi, err := w.resolve(name, full, fi)
		if err != nil {
			return err
		}
		if w.rules.Ignore(name, fi) {
			continue
		}
		// Directories count too: links may make the walk visit one
		// directory many times.
		if w.entries++; w.entries > MaxChartEntries {
			return &LimitError{Chart: w.name, What: LimitEntries, Limit: MaxChartEntries}
		}
		if fi.IsDir() {
			for _, a := range ancestors {
				if a == target {
					return fmt.Errorf("%w: %s is a link to %s, which contains it (a cycle)", ErrInvalidArchive, name, target)
				}
			}
			if err := w.walk(target, name, append(ancestors, target)); err != nil {
				return err
			}
			continue
		}
		data, err := w.read(name, target, fi)
		if err != nil {
			return err
		}
		w.files = append(w.files, &loader.BufferedFile{Name: name, Data: bytes.TrimPrefix(data, utf8BOM)})
	}
	return nil
}

// read reads one regular file within the caps.
func (w *dirWalker) read(name, target string, fi fs.FileInfo) ([]byte, error) {
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file (mode %s)", ErrInvalidArchive, name, fi.Mode().Type())
	}
	if w.size+fi.Size() > w.limit {
		return nil, &LimitError{Chart: w.name, What: LimitSize, Limit: w.limit}
	}
	if w.beforeOpen != nil {
		w.beforeOpen(name)
	}
	// Through the root, a link swapped in since the checks cannot lead
	// out of it; without blocking, a FIFO swapped in is found by the
	// check of what was opened.
	f, err := safefile.OpenRegular(w.fs, w.inRoot(target))
	if errors.Is(err, safefile.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %s changed while it was read: it is no longer a regular file", ErrInvalidArchive, name)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidArchive, name, err)
	}
	defer f.Close()
	data, err := readCapped(f, w.limit-w.size)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, &LimitError{Chart: w.name, What: LimitSize, Limit: w.limit}
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalidArchive, name, err)
	}
	w.size += int64(len(data))
	return data, nil
}
