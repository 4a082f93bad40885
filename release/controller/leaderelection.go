package controller

import (
	"flag"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
)

// inClusterNamespaceFile holds the namespace of a pod's service account.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LeaderElectionNamespace is the namespace of the leader-election Lease,
// for manager.Options.LeaderElectionNamespace, found as the manager's
// REST config is by ctrl.GetConfig: in a pod, the pod's namespace (what
// controller-runtime uses when the option is empty); elsewhere, the
// namespace of the current context of the kubeconfig the --kubeconfig
// flag, KUBECONFIG or ~/.kube/config names, as kubectl uses it, and
// "default" when that context names none or no kubeconfig can be read.
// Without it a manager with LeaderElection fails outside a cluster with
// "unable to find leader election namespace".
func LeaderElectionNamespace() string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := flag.Lookup(config.KubeconfigFlagName); f != nil {
		rules.ExplicitPath = f.Value.String()
	}
	return leaderElectionNamespace(inClusterNamespaceFile, clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}))
}

// leaderElectionNamespace is LeaderElectionNamespace with the pod's
// namespace file and the kubeconfig given.
func leaderElectionNamespace(podNamespaceFile string, kubeconfig clientcmd.ClientConfig) string {
	if b, err := os.ReadFile(podNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	if ns, _, err := kubeconfig.Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}
