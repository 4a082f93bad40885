//go:build ignore

// testcharts rebuilds the charts of internal/testcharts/testdata that come
// from prometheus-community/helm-charts: kube-prometheus-stack with its
// subcharts (crds, kube-state-metrics, prometheus-node-exporter,
// prometheus-windows-exporter) under charts/, as `helm dependency build`
// and `helm package` would leave them, but without grafana (a dependency
// from another repository); and kube-state-metrics and
// prometheus-node-exporter on their own.
//
// Each chart is read from the repository at one commit (git archive),
// loaded with Helm's loader (which honours .helmignore), saved with Helm's
// chartutil.Save, and the archive is then written again deterministically:
// entries sorted by name, the commit's time as every mtime, owner 0, no
// gzip name or time. The same commit gives the same bytes.
//
//	go run hack/testcharts.go -repo /work/.mirror/prometheus-community+helm-charts/repo \
//	    -commit cf408a290aec -out internal/testcharts/testdata
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
)

// dropped lists the dependencies of kube-prometheus-stack we do not vendor.
var dropped = map[string]bool{"grafana": true}

func main() {
	repo := flag.String("repo", "", "git directory of prometheus-community/helm-charts")
	commit := flag.String("commit", "cf408a290aec", "commit to read the charts at")
	out := flag.String("out", "internal/testcharts/testdata", "directory to write the .tgz files to")
	flag.Parse()
	if *repo == "" {
		log.Fatal("testcharts: -repo is required")
	}
	if err := run(*repo, *commit, *out); err != nil {
		log.Fatal(err)
	}
}

func run(repo, commit, out string) error {
	tmp, err := os.MkdirTemp("", "testcharts")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	when, err := git(repo, "log", "-1", "--format=%ct", commit)
	if err != nil {
		return err
	}
	var sec int64
	if _, err := fmt.Sscan(string(when), &sec); err != nil {
		return fmt.Errorf("commit time %q: %w", when, err)
	}
	mtime := time.Unix(sec, 0).UTC()

	names := []string{"kube-prometheus-stack", "kube-state-metrics", "prometheus-node-exporter", "prometheus-windows-exporter"}
	args := []string{"archive", "--format=tar", commit}
	for _, n := range names {
		args = append(args, "charts/"+n)
	}
	tarball, err := git(repo, args...)
	if err != nil {
		return err
	}
	if err := untar(bytes.NewReader(tarball), tmp); err != nil {
		return err
	}
	charts := map[string]*chart.Chart{}
	for _, n := range names {
		c, err := loader.LoadDir(filepath.Join(tmp, "charts", n))
		if err != nil {
			return fmt.Errorf("load %s: %w", n, err)
		}
		charts[n] = c
	}

	kps := charts["kube-prometheus-stack"]
	var deps []*chart.Dependency
	for _, d := range kps.Metadata.Dependencies {
		if !dropped[d.Name] {
			deps = append(deps, d)
		}
	}
	kps.Metadata.Dependencies = deps
	for _, d := range deps {
		if d.Repository == "" {
			continue // crds, in the chart's own charts/ directory
		}
		sub, ok := charts[d.Name]
		if !ok {
			return fmt.Errorf("kube-prometheus-stack: dependency %s not read", d.Name)
		}
		kps.AddDependency(sub)
	}

	for _, n := range names[:3] {
		if err := save(charts[n], tmp, out, mtime); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// save packages c with Helm and writes the archive to out deterministically.
func save(c *chart.Chart, tmp, out string, mtime time.Time) error {
	dir := filepath.Join(tmp, "packaged")
	path, err := chartutil.Save(c, dir)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	norm, err := normalize(data, mtime)
	if err != nil {
		return err
	}
	dst := filepath.Join(out, filepath.Base(path))
	if err := os.WriteFile(dst, norm, 0o644); err != nil {
		return err
	}
	check, err := loader.Load(dst)
	if err != nil {
		return fmt.Errorf("reload %s: %w", dst, err)
	}
	var subs []string
	for _, d := range check.Dependencies() {
		subs = append(subs, d.Name()+"-"+d.Metadata.Version)
	}
	log.Printf("%s: %d bytes, %d templates, subcharts %v", dst, len(norm), len(check.Templates), subs)
	return nil
}

// normalize rewrites a gzipped tar with its entries sorted by name, mtime
// set to mtime, owner 0 and mode 0644.
func normalize(data []byte, mtime time.Time) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	type entry struct {
		name string
		data []byte
	}
	var entries []entry
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%s: not a regular file", h.Name)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		entries = append(entries, entry{h.Name, b})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].name < entries[j].name })

	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     e.name,
			Mode:     0o644,
			Size:     int64(len(e.data)),
			ModTime:  mtime,
			Format:   tar.FormatPAX,
		}
		if len(e.name) < 100 {
			h.Format = tar.FormatUSTAR
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func git(repo string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return b, nil
}

// untar extracts the regular files and directories of a tar into dir.
func untar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return fmt.Errorf("%s: outside the archive", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			b, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				return err
			}
		}
	}
}
