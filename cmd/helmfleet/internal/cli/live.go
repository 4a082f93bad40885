package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/helmfleet/helmfleet/release/kube"
)

// kubeconfigPath is the kubeconfig file the members' contexts are read
// from: --kubeconfig, else the fleet file's kubeconfig (relative to the
// fleet file), else "" for kubectl's rules ($KUBECONFIG, then
// ~/.kube/config).
func (f *FleetFile) kubeconfigPath(flag string) string {
	switch {
	case flag != "":
		return flag
	case f.Kubeconfig == "":
		return ""
	case filepath.IsAbs(f.Kubeconfig):
		return f.Kubeconfig
	}
	return filepath.Join(f.dir, f.Kubeconfig)
}

// liveCluster returns the cluster of ms's kubeconfig context. Reading a
// kubeconfig runs what it names (exec credential plugins), as kubectl
// does: the command is run by the kubeconfig's owner on their machine.
func liveCluster(ms MemberSpec, kubeconfig string) (*kube.Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: ms.Context})
	rest, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("member %s: context %q: %w", ms.Name, ms.Context, err)
	}
	c, err := kube.New(kube.Config{Name: ms.Name, REST: rest})
	if err != nil {
		return nil, fmt.Errorf("member %s: context %q: %w", ms.Name, ms.Context, err)
	}
	return c, nil
}

// readCapabilities fills ms's Kubernetes version and API versions, where
// the fleet file leaves them empty, from the live cluster c: what its
// in-memory stand-in renders charts for.
func readCapabilities(ctx context.Context, ms *MemberSpec, c *kube.Cluster) error {
	if ms.KubeVersion != "" && len(ms.APIVersions) > 0 {
		return nil
	}
	caps, err := c.Capabilities(ctx)
	if err != nil {
		return fmt.Errorf("member %s: context %q: reading its Kubernetes version and API versions: %w", ms.Name, ms.Context, err)
	}
	if ms.KubeVersion == "" {
		ms.KubeVersion = strings.TrimPrefix(caps.KubeVersion.Version, "v")
	}
	if len(ms.APIVersions) == 0 {
		ms.APIVersions = append([]string(nil), caps.APIVersions...)
	}
	return nil
}
