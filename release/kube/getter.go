package kube

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RESTConfigGetter turns a *rest.Config into the
// genericclioptions.RESTClientGetter that Helm and New take, with a default
// namespace. Its discovery client and RESTMapper are built on first use and
// then shared by every caller, so repeated HelmConfig calls do not repeat
// discovery; the mapper is reset when a kind is not found (see Cluster).
//
// It reads no kubeconfig file and no environment variable: everything comes
// from the *rest.Config given.
type RESTConfigGetter struct {
	config    *rest.Config
	namespace string

	once      sync.Once
	discovery discovery.CachedDiscoveryInterface
	mapper    meta.RESTMapper
	err       error
}

var _ genericclioptions.RESTClientGetter = (*RESTConfigGetter)(nil)

// NewRESTConfigGetter returns a getter over a copy of cfg whose default
// namespace is namespace ("default" when empty).
func NewRESTConfigGetter(cfg *rest.Config, namespace string) *RESTConfigGetter {
	if namespace == "" {
		namespace = "default"
	}
	return &RESTConfigGetter{config: rest.CopyConfig(cfg), namespace: namespace}
}

// ToRESTConfig returns a copy of the configuration.
func (g *RESTConfigGetter) ToRESTConfig() (*rest.Config, error) {
	return rest.CopyConfig(g.config), nil
}

// ToDiscoveryClient returns the shared, memory-cached discovery client.
func (g *RESTConfigGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	g.init()
	return g.discovery, g.err
}

// ToRESTMapper returns the shared deferred discovery RESTMapper.
func (g *RESTConfigGetter) ToRESTMapper() (meta.RESTMapper, error) {
	g.init()
	return g.mapper, g.err
}

// ToRawKubeConfigLoader returns a client configuration that yields the same
// *rest.Config and the getter's namespace.
func (g *RESTConfigGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return &clientConfig{getter: g}
}

func (g *RESTConfigGetter) init() {
	g.once.Do(func() {
		cfg := rest.CopyConfig(g.config)
		// Discovery issues one request per group version; kubectl raises
		// the burst for the same reason.
		if cfg.Burst < 300 {
			cfg.Burst = 300
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			g.err = fmt.Errorf("discovery client for %s: %w", g.config.Host, err)
			return
		}
		g.discovery = memory.NewMemCacheClient(dc)
		g.mapper = restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(g.discovery), g.discovery, nil)
	})
}

// clientConfig is the clientcmd.ClientConfig of a RESTConfigGetter: Helm's
// kube client asks it for the default namespace.
type clientConfig struct {
	getter *RESTConfigGetter
}

func (c *clientConfig) RawConfig() (clientcmdapi.Config, error) {
	const name = "helmfleet"
	cfg := c.getter.config
	api := clientcmdapi.NewConfig()
	api.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		CertificateAuthority:     cfg.CAFile,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	api.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientCertificate:     cfg.CertFile,
		ClientKeyData:         cfg.KeyData,
		ClientKey:             cfg.KeyFile,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
	}
	api.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: c.getter.namespace}
	api.CurrentContext = name
	return *api, nil
}

func (c *clientConfig) ClientConfig() (*rest.Config, error) { return c.getter.ToRESTConfig() }

func (c *clientConfig) Namespace() (string, bool, error) { return c.getter.namespace, true, nil }

func (c *clientConfig) ConfigAccess() clientcmd.ConfigAccess {
	// No file backs this configuration; an empty set of loading rules
	// makes kubeconfig-editing callers find nothing rather than the
	// user's ~/.kube/config.
	return &clientcmd.ClientConfigLoadingRules{}
}
