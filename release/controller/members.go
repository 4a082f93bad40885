package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
)

// MemberSource gives the fleet's member clusters, each a cluster backend
// and its placement facts. The FleetReconciler asks it on every
// reconcile; implementations cache what is costly to build.
type MemberSource interface {
	Members(ctx context.Context) ([]release.Member, error)
}

// MemberLabel marks a kubeconfig Secret on the hub as a fleet member; its
// value is the member's name.
const MemberLabel = "helmfleet.io/member"

// SecretMembers is a MemberSource over kubeconfig Secrets on the hub:
// every Secret of Namespace labelled MemberLabel=<name> is a member, its
// kubeconfig under key "value" or "value.yaml" (as Flux reads
// kubeconfigs); the Secret's other labels are the member's placement
// labels (what clusterAffinity.labelSelector matches). Each member's
// Cluster is built once per Secret version. Kubeconfigs are read with
// kube.RESTConfigFromKubeconfig: exec and auth-provider plugins, file
// references and impersonation fields are refused unless the Insecure
// fields allow them (see "Kubeconfig Secrets" in the package doc).
type SecretMembers struct {
	// Reader reads the Secrets (the manager's API reader: Secrets are
	// not cached).
	Reader client.Reader
	// Namespace holds the Secrets.
	Namespace string
	// NewCluster builds a member's cluster; default KubeCluster.
	NewCluster ClusterFunc
	// InsecureKubeconfigExec accepts exec and auth-provider credential
	// plugins, which run on the controller's host (Flux's
	// --insecure-kubeconfig-exec); default refused.
	InsecureKubeconfigExec bool
	// InsecureKubeconfigFiles accepts fields that name files of the
	// controller's host (tokenFile, client-certificate, client-key,
	// certificate-authority); default refused.
	InsecureKubeconfigFiles bool

	mu    sync.Mutex
	built map[string]builtMember // by Secret name
}

type builtMember struct {
	resourceVersion string
	member          release.Member
}

var _ MemberSource = (*SecretMembers)(nil)

// Members returns the members, sorted by name. A Secret without a usable
// kubeconfig is an error naming it (never quoting it).
func (s *SecretMembers) Members(ctx context.Context) ([]release.Member, error) {
	var list corev1.SecretList
	if err := s.Reader.List(ctx, &list, client.InNamespace(s.Namespace), client.HasLabels{MemberLabel}); err != nil {
		return nil, fmt.Errorf("list member Secrets in %s: %w", s.Namespace, err)
	}
	build := s.NewCluster
	if build == nil {
		build = KubeCluster
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.built == nil {
		s.built = map[string]builtMember{}
	}
	seen := map[string]bool{}
	var out []release.Member
	for i := range list.Items {
		sec := &list.Items[i]
		seen[sec.Name] = true
		if b, ok := s.built[sec.Name]; ok && b.resourceVersion == sec.ResourceVersion {
			out = append(out, b.member)
			continue
		}
		name := sec.Labels[MemberLabel]
		key, data, err := kubeconfigData(sec, "")
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		cfg, err := kube.RESTConfigFromKubeconfig(data, kube.KubeconfigOptions{Secret: sec.Namespace + "/" + sec.Name, Key: key,
			AllowExec: s.InsecureKubeconfigExec, AllowFiles: s.InsecureKubeconfigFiles})
		if err != nil {
			// A *kube.KubeconfigError: Secret, key and field, no content.
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		c, err := build(name, cfg)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", name, err)
		}
		labels := map[string]string{}
		for k, v := range sec.Labels {
			if k != MemberLabel && !strings.HasPrefix(k, "kubernetes.io/") {
				labels[k] = v
			}
		}
		m := release.Member{Cluster: c, Facts: policy.Cluster{Name: name, Labels: labels}}
		s.built[sec.Name] = builtMember{resourceVersion: sec.ResourceVersion, member: m}
		out = append(out, m)
	}
	for name := range s.built {
		if !seen[name] {
			delete(s.built, name)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Facts.Name < out[j].Facts.Name })
	return out, nil
}

// StaticMembers is a MemberSource of a fixed list.
type StaticMembers []release.Member

// Members returns the list.
func (s StaticMembers) Members(context.Context) ([]release.Member, error) { return s, nil }
