package kubeharness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// KubeVersion is the Kubernetes version the harness runs.
const KubeVersion = "1.37.2"

// Environment variables the harness reads.
const (
	// EnvBinDir names the directory holding kube-apiserver and etcd.
	EnvBinDir = "HELMFLEET_KUBE_BIN"
	// EnvIntegration set to "1" makes missing binaries a failure rather
	// than a reason to skip.
	EnvIntegration = "HELMFLEET_INTEGRATION"
)

// Binaries are the paths of the programs a control plane runs.
type Binaries struct {
	APIServer string
	Etcd      string
}

// BinDir is where .ci/kube-binaries.sh puts the binaries: $HELMFLEET_KUBE_BIN,
// or $HOME/.cache/helmfleet/kube-<KubeVersion>.
func BinDir() string {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "helmfleet", "kube-"+KubeVersion)
	}
	return filepath.Join(home, ".cache", "helmfleet", "kube-"+KubeVersion)
}

// ErrNoBinaries is matched by FindBinaries' error when a binary is absent.
var ErrNoBinaries = errors.New("kube-apiserver and etcd not found")

// FindBinaries returns the binaries in dir, or an error matching
// ErrNoBinaries that says how to build them.
func FindBinaries(dir string) (Binaries, error) {
	b := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}
	for _, p := range []string{b.APIServer, b.Etcd} {
		fi, err := os.Stat(p)
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return Binaries{}, fmt.Errorf("%w: %s is missing or not executable; run .ci/kube-binaries.sh (or set %s)", ErrNoBinaries, p, EnvBinDir)
		}
	}
	return b, nil
}

// Integration reports whether the integration suite must run
// (HELMFLEET_INTEGRATION=1).
func Integration() bool { return os.Getenv(EnvIntegration) == "1" }
