package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	ctrl "sigs.k8s.io/controller-runtime"
)

func init() { ctrl.SetLogger(logr.Discard()) }

// wantStory is what the story prints, whichever hub runs it: the
// in-memory run shows exactly what the manager does on a real API server.
const wantStory = `apps/podinfo: Ready=True InstallSucceeded (revision 1, observedGeneration 1): Helm install succeeded for release apps/podinfo.v1 with chart podinfo@6.5.0
apps/frontend: Ready=False DependencyNotReady (revision -, observedGeneration 0): dependency 'apps/backend' is not ready: not found
-- the team changes ConfigMap apps/podinfo-values
apps/podinfo: Ready=True UpgradeSucceeded (revision 2, observedGeneration 1): Helm upgrade succeeded for release apps/podinfo.v2 with chart podinfo@6.5.0
-- the team adds apps/backend, which frontend depends on
apps/backend: Ready=True InstallSucceeded (revision 1, observedGeneration 1): Helm install succeeded for release apps/backend.v1 with chart podinfo@6.5.0
apps/frontend: Ready=True InstallSucceeded (revision 1, observedGeneration 1): Helm install succeeded for release apps/frontend.v1 with chart podinfo@6.5.0
`

func TestStoryInMemory(t *testing.T) {
	defer goleak.VerifyNone(t)
	h, err := newMemoryHub()
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, story(t.Context(), &out, h))
	assert.Equal(t, wantStory, out.String())
}

// TestStoryOnKubeAPIServer runs the real manager against a kube-apiserver:
// the upgrade after the ConfigMap change and the dependent's install after
// its dependency come from the manager's watches alone.
func TestStoryOnKubeAPIServer(t *testing.T) {
	assets, err := kubeAssets()
	if err != nil {
		if os.Getenv("HELMFLEET_INTEGRATION") == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	h, stop, err := startKubeHub(t.Context(), assets)
	require.NoError(t, err)
	defer stop()
	var out bytes.Buffer
	require.NoError(t, story(t.Context(), &out, h))
	assert.Equal(t, wantStory, out.String())
}

func TestDemoPicksItsHub(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Setenv("HELMFLEET_KUBE_BIN", t.TempDir()) // no binaries there
	var out bytes.Buffer
	require.NoError(t, demo(context.Background(), &out))
	first, rest, _ := strings.Cut(out.String(), "\n")
	assert.Contains(t, first, "hub: controller-runtime's fake client (in memory); no kube-apiserver: ")
	assert.Equal(t, wantStory, rest)
}
