package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
)

// Kubeconfig Secret keys, as Flux reads spec.kubeConfig.secretRef: the
// named key, else "value", else "value.yaml".
const (
	KubeconfigKey     = "value"
	KubeconfigKeyYAML = "value.yaml"
)

// ClusterFunc builds the release.Cluster a HelmRelease is installed on
// from its REST config. name identifies the cluster in errors, status
// messages and metrics ("in-cluster", or "<namespace>/<secret>" for a
// kubeconfig Secret). The default is kube.New.
type ClusterFunc func(name string, cfg *rest.Config) (release.Cluster, error)

// KubeCluster is the default ClusterFunc: a release/kube cluster. A
// config without rate limits, as a kubeconfig Secret's is (client-go
// would throttle it at 5 requests a second, bursts of 10), gets
// kube.DefaultQPS and kube.DefaultBurst; one with its own keeps them
// (controller-runtime's GetConfig sets 20 and 30 on the manager's).
func KubeCluster(name string, cfg *rest.Config) (release.Cluster, error) {
	return kube.New(kube.Config{Name: name, REST: cfg})
}

// TargetError reports a HelmRelease whose target cluster cannot be
// reached from its spec: a missing kubeconfig Secret or key, or a
// kubeconfig that does not parse or is refused (Err is then a
// *kube.KubeconfigError naming the kubeconfig field). It never quotes the
// Secret's content.
type TargetError struct {
	// Release is namespace/name of the HelmRelease.
	Release string
	// Field is the spec field at fault, e.g. spec.kubeConfig.secretRef.
	Field string
	// Message says what is wrong.
	Message string
	// Err is the cause, if any (never one that carries Secret data).
	Err error
}

func (e *TargetError) Error() string {
	msg := fmt.Sprintf("HelmRelease %s: %s", e.Release, e.Field)
	if e.Message != "" {
		msg += ": " + e.Message
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *TargetError) Unwrap() error { return e.Err }

// LocalClusterName names the cluster the manager runs against.
const LocalClusterName = "in-cluster"

// targetKey identifies one built Cluster: the kubeconfig Secret's
// version (empty for the local cluster) and the impersonated account.
type targetKey struct {
	secretNamespace, secretName, key, resourceVersion string
	serviceAccount                                    string
}

// targets builds and caches the Cluster of each target, so discovery and
// Helm's clients are made once per kubeconfig version and service account
// instead of on every reconcile.
type targets struct {
	reader    client.Reader // Secrets, uncached
	local     *rest.Config
	build     ClusterFunc
	defaultSA string
	// kubeconfig carries the opt-ins (exec, files) of every kubeconfig
	// read; Secret and Key are filled per read.
	kubeconfig kube.KubeconfigOptions

	mu       sync.Mutex
	clusters map[targetKey]release.Cluster
	byRel    map[string]targetKey // release namespace/name → its key
}

func newTargets(reader client.Reader, local *rest.Config, build ClusterFunc, defaultSA string, kubeconfig kube.KubeconfigOptions) *targets {
	if build == nil {
		build = KubeCluster
	}
	return &targets{reader: reader, local: local, build: build, defaultSA: defaultSA, kubeconfig: kubeconfig,
		clusters: map[targetKey]release.Cluster{}, byRel: map[string]targetKey{}}
}

// serviceAccount is the account a release impersonates: its
// spec.serviceAccountName, else the configured default, else none.
func (t *targets) serviceAccount(rel *release.Release) string {
	if rel.Spec.ServiceAccountName != "" {
		return rel.Spec.ServiceAccountName
	}
	return t.defaultSA
}

// cluster returns the Cluster rel is reconciled on.
func (t *targets) cluster(ctx context.Context, rel *release.Release) (release.Cluster, error) {
	ref := rel.Namespace + "/" + rel.Name
	key := targetKey{serviceAccount: t.serviceAccount(rel)}
	var kubeconfig []byte
	if kc := rel.Spec.KubeConfig; kc != nil {
		if kc.SecretRef == nil {
			return nil, &TargetError{Release: ref, Field: "spec.kubeConfig", Message: "only secretRef is supported (configMapRef names a cloud provider configuration helmfleet does not run)"}
		}
		var s corev1.Secret
		if err := t.reader.Get(ctx, client.ObjectKey{Namespace: rel.Namespace, Name: kc.SecretRef.Name}, &s); err != nil {
			msg := fmt.Sprintf("read Secret %s/%s", rel.Namespace, kc.SecretRef.Name)
			if apierrors.IsNotFound(err) {
				return nil, &TargetError{Release: ref, Field: "spec.kubeConfig.secretRef.name", Message: fmt.Sprintf("Secret %s/%s not found", rel.Namespace, kc.SecretRef.Name)}
			}
			return nil, &TargetError{Release: ref, Field: "spec.kubeConfig.secretRef", Message: msg, Err: err}
		}
		k, data, err := kubeconfigData(&s, kc.SecretRef.Key)
		if err != nil {
			return nil, &TargetError{Release: ref, Field: "spec.kubeConfig.secretRef.key", Message: err.Error()}
		}
		key.secretNamespace, key.secretName, key.key, key.resourceVersion = s.Namespace, s.Name, k, s.ResourceVersion
		kubeconfig = data
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.byRel[ref]; ok && old != key {
		t.dropLocked(ref)
	}
	if c, ok := t.clusters[key]; ok {
		t.byRel[ref] = key
		return c, nil
	}
	cfg, name := t.local, LocalClusterName
	if kubeconfig != nil {
		opts := t.kubeconfig
		opts.Secret, opts.Key = key.secretNamespace+"/"+key.secretName, key.key
		var err error
		if cfg, err = kube.RESTConfigFromKubeconfig(kubeconfig, opts); err != nil {
			// A *kube.KubeconfigError names the Secret, key and field
			// and quotes nothing of the Secret.
			return nil, &TargetError{Release: ref, Field: "spec.kubeConfig.secretRef", Err: err}
		}
		name = key.secretNamespace + "/" + key.secretName
	}
	if cfg == nil {
		return nil, errors.New("controller: no REST config for the local cluster")
	}
	if key.serviceAccount != "" {
		cfg = rest.CopyConfig(cfg)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: ImpersonatedUser(rel.Namespace, key.serviceAccount)}
		name += " as " + key.serviceAccount
	}
	c, err := t.build(name, cfg)
	if err != nil {
		return nil, &TargetError{Release: ref, Field: "spec.kubeConfig", Message: "build cluster client", Err: err}
	}
	t.clusters[key] = c
	t.byRel[ref] = key
	return c, nil
}

// ImpersonatedUser is the user a release with spec.serviceAccountName
// acts as: system:serviceaccount:<namespace>:<name>, the release's own
// namespace, as in Flux (release.ServiceAccountUser).
func ImpersonatedUser(namespace, serviceAccount string) string {
	return release.ServiceAccountUser(namespace, serviceAccount)
}

// kubeconfigData returns the key read and its data.
func kubeconfigData(s *corev1.Secret, key string) (string, []byte, error) {
	if key != "" {
		if d, ok := s.Data[key]; ok {
			return key, d, nil
		}
		return "", nil, fmt.Errorf("Secret %s/%s has no key %q", s.Namespace, s.Name, key)
	}
	for _, k := range []string{KubeconfigKey, KubeconfigKeyYAML} {
		if d, ok := s.Data[k]; ok {
			return k, d, nil
		}
	}
	return "", nil, fmt.Errorf("Secret %s/%s has neither key %q nor %q", s.Namespace, s.Name, KubeconfigKey, KubeconfigKeyYAML)
}

// forget drops what is cached for a deleted release.
func (t *targets) forget(ref string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropLocked(ref)
}

// dropLocked unlinks ref and drops its cluster when no other release
// uses it.
func (t *targets) dropLocked(ref string) {
	key, ok := t.byRel[ref]
	if !ok {
		return
	}
	delete(t.byRel, ref)
	for _, k := range t.byRel {
		if k == key {
			return
		}
	}
	delete(t.clusters, key)
}

// size is the number of clusters cached.
func (t *targets) size() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clusters)
}
