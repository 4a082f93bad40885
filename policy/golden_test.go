package policy

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// podinfoFleet: three production members (member3 in China, behind a mirror,
// tainted for dedicated web workloads) and a dev cluster the policy skips.
func podinfoFleet() []Cluster {
	return []Cluster{
		{Name: "member1", Labels: map[string]string{"env": "prod"}, Provider: "aws", Region: "us-east", Zones: []string{"us-east-1a"}, AvailableReplicas: 20},
		{Name: "member2", Labels: map[string]string{"env": "prod"}, Provider: "gcp", Region: "eu-west", Zones: []string{"europe-west1-b"}, AvailableReplicas: 20},
		{Name: "member3", Labels: map[string]string{"env": "prod"}, Provider: "alicloud", Region: "cn-north", Zones: []string{"cn-north-1a"}, AvailableReplicas: 20,
			Taints: []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "dev", Labels: map[string]string{"env": "dev"}, Provider: "kind", Region: "local", AvailableReplicas: 5},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "podinfo", "golden", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), string(got), "golden file %s differs; run go test ./policy -run Golden -update", path)
}

func TestGoldenPodinfo(t *testing.T) {
	objs, err := os.ReadFile("testdata/podinfo/objects.yaml")
	require.NoError(t, err)
	pols, err := os.ReadFile("testdata/podinfo/policies.yaml")
	require.NoError(t, err)
	e := engine(t, string(pols))
	p, err := e.Place(objects(t, string(objs)), podinfoFleet())
	require.NoError(t, err)

	var summary strings.Builder
	summary.WriteString(p.Table())
	summary.WriteString("\nwarnings:\n")
	for _, w := range p.Warnings {
		fmt.Fprintf(&summary, "- %s\n", w)
	}
	golden(t, "placement.txt", []byte(summary.String()))

	for _, co := range e.Materialize(p) {
		var b strings.Builder
		for _, err := range co.Errors {
			fmt.Fprintf(&b, "# error: %v\n", err)
		}
		for i, o := range co.Objects {
			if i > 0 || len(co.Errors) > 0 {
				b.WriteString("---\n")
			}
			y, err := yaml.Marshal(o.Object)
			require.NoError(t, err)
			b.Write(y)
		}
		golden(t, co.Cluster+".yaml", []byte(b.String()))
	}

	x, err := e.Explain(p, ObjectKey{"apps/v1", "Deployment", "apps", "podinfo"}, "member3")
	require.NoError(t, err)
	golden(t, "explain-deployment-member3.txt", []byte(x.String()))
}
