package memory

import (
	"fmt"
	"runtime/debug"

	"github.com/Masterminds/semver/v3"
)

// fallbackKubeVersion is the default Kubernetes version when the binary
// carries no module information (test binaries carry none): the minor of
// the k8s.io libraries in go.mod. A test checks it against go.mod.
const fallbackKubeVersion = "v1.36.0"

// DefaultKubeVersion returns the Kubernetes version an in-memory cluster
// runs unless WithKubeVersion says otherwise: v1.<minor>.0, where minor is
// that of the k8s.io/client-go (else k8s.io/apimachinery) the binary is
// built with, as those libraries speak that release's API. The patch is
// always 0, so a test binary (which carries no module information and
// gets the fallback, v1.36.0) and a program built from the same go.mod
// render charts alike.
func DefaultKubeVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fallbackKubeVersion
	}
	return kubeVersionOf(bi.Deps)
}

// kubeVersionOf returns the Kubernetes version of the k8s.io libraries
// among deps (a replacement's version counts), or fallbackKubeVersion
// when neither library is there with a v0.<minor> release version.
func kubeVersionOf(deps []*debug.Module) string {
	for _, path := range []string{"k8s.io/client-go", "k8s.io/apimachinery"} {
		for _, d := range deps {
			if d == nil || d.Path != path {
				continue
			}
			v := d.Version
			if d.Replace != nil && d.Replace.Version != "" {
				v = d.Replace.Version
			}
			sv, err := semver.NewVersion(v)
			if err != nil || sv.Major() != 0 || sv.Minor() == 0 {
				continue
			}
			return fmt.Sprintf("v1.%d.0", sv.Minor())
		}
	}
	return fallbackKubeVersion
}
