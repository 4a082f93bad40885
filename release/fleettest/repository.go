package fleettest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/helmfleet/helmfleet/internal/ocitest"
	"github.com/helmfleet/helmfleet/source"
)

// HelmRepository is a Helm chart repository served over HTTP by an
// httptest server: index.yaml and one .tgz per chart, as `helm repo
// index` writes them. Close it when done.
type HelmRepository struct {
	// URL is the repository's URL, for spec.url of a HelmRepository.
	URL    string
	server *httptest.Server
	dir    string
}

// NewHelmRepository packages the charts and serves them.
func NewHelmRepository(charts ...*chart.Chart) (*HelmRepository, error) {
	dir, err := os.MkdirTemp("", "fleettest-repo")
	if err != nil {
		return nil, fmt.Errorf("fleettest: %w", err)
	}
	for _, ch := range charts {
		if _, err := chartutil.Save(ch, dir); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("fleettest: package chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	r := &HelmRepository{URL: srv.URL, server: srv, dir: dir}
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err == nil {
		err = idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o600)
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("fleettest: index: %w", err)
	}
	return r, nil
}

// Client returns an HTTP client for the repository.
func (r *HelmRepository) Client() *http.Client { return r.server.Client() }

// Object returns a HelmRepository namespace/name pointing at the
// repository.
func (r *HelmRepository) Object(namespace, name string) *source.HelmRepository {
	hr := &source.HelmRepository{Spec: source.HelmRepositorySpec{URL: r.URL}}
	hr.Namespace, hr.Name = namespace, name
	return hr
}

// Close stops the server and removes the packaged charts.
func (r *HelmRepository) Close() {
	r.server.Close()
	os.RemoveAll(r.dir)
}

// OCIRegistry is an OCI registry (the distribution registry with
// in-memory storage) served over plain HTTP by an httptest server, with
// charts pushed as `helm push` does, under charts/<name>:<version>. Close
// it when done.
type OCIRegistry struct {
	// Host is the registry's host:port.
	Host   string
	server *httptest.Server
}

// NewOCIRegistry starts the registry and pushes the charts.
func NewOCIRegistry(ctx context.Context, charts ...*chart.Chart) (*OCIRegistry, error) {
	srv := httptest.NewServer(ocitest.Handler(""))
	r := &OCIRegistry{Host: strings.TrimPrefix(srv.URL, "http://"), server: srv}
	if err := r.Push(ctx, charts...); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// URL is the URL of chart name, for spec.url of an OCIRepository
// ("oci://host:port/charts/name"); a HelmRepository of type oci has the
// URL "oci://host:port/charts".
func (r *OCIRegistry) URL(name string) string { return "oci://" + r.Host + "/charts/" + name }

// Push pushes more charts.
func (r *OCIRegistry) Push(ctx context.Context, charts ...*chart.Chart) error {
	if len(charts) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "fleettest-oci")
	if err != nil {
		return fmt.Errorf("fleettest: %w", err)
	}
	defer os.RemoveAll(dir)
	c, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(dir, "config.json")))
	if err != nil {
		return fmt.Errorf("fleettest: %w", err)
	}
	for _, ch := range charts {
		if err := ctx.Err(); err != nil {
			return err
		}
		p, err := chartutil.Save(ch, dir)
		if err == nil {
			var data []byte
			if data, err = os.ReadFile(p); err == nil {
				_, err = c.Push(data, fmt.Sprintf("%s/charts/%s:%s", r.Host, ch.Name(), ch.Metadata.Version))
			}
		}
		if err != nil {
			return fmt.Errorf("fleettest: push chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
		}
	}
	return nil
}

// Close stops the registry.
func (r *OCIRegistry) Close() { r.server.Close() }
