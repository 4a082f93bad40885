package cli

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitTree writes the tree of ref (its directory sub, when not empty) of
// the Git repository at repo into a new directory under tmp, with git
// archive, and returns the directory.
func gitTree(ctx context.Context, repo, ref, sub, tmp string) (string, error) {
	// A ref is read by git as an option when it starts with "-"
	// (--output, --remote): no ref does.
	if ref == "" || strings.HasPrefix(ref, "-") {
		return "", fmt.Errorf("git ref %q: not a ref (empty, or starting with \"-\")", ref)
	}
	treeish := ref
	if sub != "" {
		treeish = ref + ":" + strings.Trim(filepath.ToSlash(sub), "/")
	}
	var out, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", treeish)
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git archive %s in %s: %v: %s", treeish, repo, err, strings.TrimSpace(stderr.String()))
	}
	dir, err := os.MkdirTemp(tmp, "tree-")
	if err != nil {
		return "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer root.Close()
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir, nil
		}
		if err != nil {
			return "", fmt.Errorf("git archive %s: %w", treeish, err)
		}
		name := filepath.FromSlash(strings.TrimSuffix(h.Name, "/"))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := root.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return "", err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return "", err
			}
			if err := root.WriteFile(name, data, 0o644); err != nil {
				return "", fmt.Errorf("git archive %s: %s: %w", treeish, h.Name, err)
			}
		}
	}
}
