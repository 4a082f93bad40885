package memory

import (
	"os"
	"regexp"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKubeVersionOf(t *testing.T) {
	mod := func(path, version string) *debug.Module { return &debug.Module{Path: path, Version: version} }
	tests := []struct {
		name string
		deps []*debug.Module
		want string
	}{
		{name: "client-go", deps: []*debug.Module{mod("k8s.io/apimachinery", "v0.35.1"), mod("k8s.io/client-go", "v0.36.2")}, want: "v1.36.0"},
		{name: "apimachinery without client-go", deps: []*debug.Module{mod("k8s.io/apimachinery", "v0.35.1")}, want: "v1.35.0"},
		{name: "pre-release", deps: []*debug.Module{mod("k8s.io/client-go", "v0.37.0-alpha.1")}, want: "v1.37.0"},
		{name: "replaced", deps: []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.36.2", Replace: &debug.Module{Path: "example.com/client-go", Version: "v0.34.0"}}}, want: "v1.34.0"},
		{name: "pseudo-version of no release", deps: []*debug.Module{mod("k8s.io/client-go", "v0.0.0-20260101000000-abcdefabcdef")}, want: fallbackKubeVersion},
		{name: "devel", deps: []*debug.Module{mod("k8s.io/client-go", "(devel)")}, want: fallbackKubeVersion},
		{name: "none", deps: nil, want: fallbackKubeVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, kubeVersionOf(tt.deps))
		})
	}
}

// The fallback (what test binaries, which carry no module information,
// run) names the minor of the k8s.io/client-go in go.mod, so it moves
// with the libraries.
func TestFallbackKubeVersionFollowsGoMod(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go v0\.(\d+)\.`).FindSubmatch(gomod)
	require.NotNil(t, m, "k8s.io/client-go in go.mod")
	assert.Equal(t, "v1."+string(m[1])+".0", fallbackKubeVersion)
	assert.Equal(t, "v1."+string(m[1])+".0", DefaultKubeVersion(), "a test binary gets the fallback")
}
