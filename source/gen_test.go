package source

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// genIndex builds a Bitnami-shaped index: charts × versions entries of about
// 1 KB each, versions 3.0.0 … 7.7.1 (two patches per minor), written the way
// Helm writes index.yaml (sigs.k8s.io/yaml) or as JSON.
func genIndex(charts, versions int) *repo.IndexFile {
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	f := &repo.IndexFile{
		APIVersion: "v1",
		Generated:  base,
		Entries:    map[string]repo.ChartVersions{},
	}
	for c := 0; c < charts; c++ {
		name := fmt.Sprintf("chart%03d", c)
		if c == 0 {
			name = "nginx"
		}
		for v := 0; v < versions; v++ {
			ver := fmt.Sprintf("%d.%d.%d", 3+v/16, (v/2)%8, v%2)
			f.Entries[name] = append(f.Entries[name], &repo.ChartVersion{
				Metadata: &chart.Metadata{
					APIVersion:  "v2",
					Name:        name,
					Version:     ver,
					AppVersion:  fmt.Sprintf("1.%d.%d", v, c),
					Description: "NGINX Open Source is a web server that can be also used as a reverse proxy, load balancer, and HTTP cache.",
					Home:        "https://bitnami.com",
					Icon:        "https://bitnami.com/assets/stacks/" + name + "/img/" + name + "-stack-220x234.png",
					Keywords:    []string{name, "http", "web", "www", "reverse proxy"},
					Maintainers: []*chart.Maintainer{{Name: "Broadcom, Inc. All Rights Reserved.", URL: "https://github.com/bitnami/charts"}},
					Sources:     []string{"https://github.com/bitnami/charts/tree/main/bitnami/" + name},
					Annotations: map[string]string{
						"category":      "Infrastructure",
						"licenses":      "Apache-2.0",
						"images":        "- name: " + name + "\n  image: docker.io/bitnami/" + name + ":1.25.3-debian-11-r1\n",
						"tanzuCategory": "clusterUtility",
					},
					Dependencies: []*chart.Dependency{{Name: "common", Repository: "oci://registry-1.docker.io/bitnamicharts", Version: "2.x.x", Tags: []string{"bitnami-common"}}},
				},
				Created: base.Add(time.Duration(v) * time.Hour),
				Digest:  fmt.Sprintf("%064x", c*1000+v),
				URLs:    []string{"https://charts.bitnami.com/bitnami/" + name + "-" + ver + ".tgz"},
			})
		}
	}
	return f
}

func marshalIndex(t testing.TB, f *repo.IndexFile, asJSON bool) []byte {
	t.Helper()
	var (
		b   []byte
		err error
	)
	if asJSON {
		b, err = json.Marshal(f)
	} else {
		b, err = yaml.Marshal(f)
	}
	require.NoError(t, err)
	return b
}

func writeIndex(t testing.TB, dir string, f *repo.IndexFile, asJSON bool) string {
	t.Helper()
	p := filepath.Join(dir, "index.yaml")
	require.NoError(t, os.WriteFile(p, marshalIndex(t, f, asJSON), 0o600))
	return p
}

func yamlToIndex(b []byte, f *repo.IndexFile) error { return yaml.Unmarshal(b, f) }
