package kustomize

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
)

// TreeDigest stands for the revision Flux would report for a tree it
// did not get from Git: "sha256:" and the first 12 hex digits of a
// digest of every file of fsys (path, length and bytes), in path order.
// Two trees with the same files have the same digest; any change to a
// file's path or content changes it. Callers use it as a Source's
// Revision (a Git source's is "branch@sha1:…").
func TreeDigest(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("tree digest: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:12], nil
}
