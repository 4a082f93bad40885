package source_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/repo"

	"github.com/helmfleet/helmfleet/source"
)

// serveRepository packages two versions of a chart with Helm and serves
// them with an index, like `helm repo index` would.
func serveRepository() (*httptest.Server, func()) {
	dir, err := os.MkdirTemp("", "repo")
	if err != nil {
		panic(err)
	}
	for _, v := range []string{"6.4.0", "6.5.2"} {
		c := &chart.Chart{
			Metadata: &chart.Metadata{APIVersion: "v2", Name: "podinfo", Version: v},
			Raw:      []*chart.File{{Name: "values.yaml", Data: []byte("replicaCount: 1\n")}},
			Files:    []*chart.File{{Name: "values-prod.yaml", Data: []byte("replicaCount: 3\n")}},
		}
		if _, err := chartutil.Save(c, dir); err != nil {
			panic(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		panic(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o600); err != nil {
		panic(err)
	}
	return srv, func() { srv.Close(); os.RemoveAll(dir) }
}

func Example() {
	srv, done := serveRepository()
	defer done()

	resolver := source.Composite{
		HTTP:  source.NewHTTPResolver(srv.Client(), source.HTTPOptions{}),
		Local: source.NewLocalResolver(0),
	}
	repository := &source.HelmRepository{Spec: source.HelmRepositorySpec{URL: srv.URL}}

	c, err := resolver.Resolve(context.Background(), source.Ref{
		Chart:          "podinfo",
		Version:        "6.x",
		ValuesFiles:    []string{"values.yaml", "values-prod.yaml"},
		HelmRepository: repository,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Chart.Name(), c.Version, strings.HasPrefix(c.Digest, "sha256:"))
	for _, f := range c.ValuesFiles {
		fmt.Printf("%s: %s", f.Name, f.Data)
	}

	_, err = resolver.Resolve(context.Background(), source.Ref{
		Chart: "podinfo", Version: "7.x", HelmRepository: repository,
	})
	var serr *source.Error
	fmt.Println(errors.Is(err, source.ErrNoMatchingVersion), errors.As(err, &serr) && serr.Chart == "podinfo")
	// Output:
	// podinfo 6.5.2 true
	// values.yaml: replicaCount: 1
	// values-prod.yaml: replicaCount: 3
	// true true
}

func ExampleSelectVersion() {
	versions := []source.Candidate{
		{Version: "1.9.0"}, {Version: "2.0.0-rc.1"}, {Version: "v1.10.1"}, {Version: "latest"},
	}
	for _, constraint := range []string{"*", "~1.9", ">=2.0.0-0", "latest", "3.x"} {
		i, err := source.SelectVersion(constraint, versions)
		if err != nil {
			fmt.Printf("%-10s %v\n", constraint, err)
			continue
		}
		fmt.Printf("%-10s %s\n", constraint, versions[i].Version)
	}
	// Output:
	// *          v1.10.1
	// ~1.9       1.9.0
	// >=2.0.0-0  2.0.0-rc.1
	// latest     latest
	// 3.x        no chart version matches: "3.x"
}

func ExampleFindChartVersion() {
	index := []byte(`apiVersion: v1
entries:
  nginx:
  - apiVersion: v2
    name: nginx
    version: 15.1.0
    digest: 8a0c…
    urls:
    - nginx-15.1.0.tgz
  - apiVersion: v2
    name: nginx
    version: 15.0.2
    urls:
    - nginx-15.0.2.tgz
`)
	cv, err := source.FindChartVersion(index, "nginx", "15.0.x")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cv.Version, cv.URLs)
	// Output:
	// 15.0.2 [nginx-15.0.2.tgz]
}
