package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/kubeharness"
	"github.com/helmfleet/helmfleet/release/kube"
)

var (
	// harness runs hub, member1 and member2 for every test of the package.
	harness *kubeharness.Harness
	// skipReason is set when the binaries are absent and the suite is not
	// required.
	skipReason string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	bins, err := kubeharness.FindBinaries(kubeharness.BinDir())
	if err != nil {
		if kubeharness.Integration() {
			fmt.Fprintf(os.Stderr, "FAIL: %s=1 but %v\n", kubeharness.EnvIntegration, err)
			return 1
		}
		skipReason = fmt.Sprintf("integration suite skipped: %v (set %s=1 to make this a failure)", err, kubeharness.EnvIntegration)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "helmfleet-kube-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(dir) }()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	h, err := kubeharness.Start(ctx, kubeharness.Options{Binaries: bins, Dir: dir, Logf: logf})
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: start control planes:", err)
		return 1
	}
	logf("kubeharness: hub, member1, member2 ready in %v", time.Since(start).Round(time.Millisecond))
	defer func() {
		t0 := time.Now()
		if err := h.Stop(); err != nil {
			logf("kubeharness: stop: %v", err)
		}
		logf("kubeharness: stopped in %v", time.Since(t0).Round(time.Millisecond))
	}()
	harness = h
	return m.Run()
}

// controlPlane returns the named control plane, or skips t when the suite
// does not run.
func controlPlane(t *testing.T, name string) *kubeharness.ControlPlane {
	t.Helper()
	if harness == nil {
		t.Skip(skipReason)
	}
	cp := harness.Cluster(name)
	require.NotNil(t, cp, "control plane %s", name)
	return cp
}

// admin returns release/kube's cluster for name as system:masters.
func admin(t *testing.T, name string) *kube.Cluster {
	t.Helper()
	c, err := kube.New(kube.Config{Name: name, REST: controlPlane(t, name).Admin})
	require.NoError(t, err)
	return c
}
