package kube

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	clientcmdlatest "k8s.io/client-go/tools/clientcmd/api/latest"
	clientcmdv1 "k8s.io/client-go/tools/clientcmd/api/v1"
)

// KubeconfigOptions say where a kubeconfig came from (for errors) and
// which of its risky fields are accepted. The zero value accepts none.
type KubeconfigOptions struct {
	// Secret is namespace/name of the Secret the kubeconfig was read
	// from, named in errors.
	Secret string
	// Key is the Secret's key that held it, named in errors.
	Key string
	// AllowExec accepts users[].user.exec and users[].user.auth-provider:
	// credential plugins that run a program, or plugin code, in the
	// process that uses the config (Flux's --insecure-kubeconfig-exec).
	AllowExec bool
	// AllowFiles accepts fields that name files of the host that uses
	// the config: users[].user.tokenFile, client-certificate and
	// client-key, and clusters[].cluster.certificate-authority.
	AllowFiles bool
}

// KubeconfigError reports a kubeconfig that does not parse or that has a
// field RESTConfigFromKubeconfig refuses. It never quotes the kubeconfig.
type KubeconfigError struct {
	// Secret and Key name where the kubeconfig came from (from
	// KubeconfigOptions; empty when not given).
	Secret, Key string
	// Field is the kubeconfig field at fault, e.g. users[0].user.exec;
	// empty when the kubeconfig as a whole does not parse.
	Field string
	// Reason says what is wrong or why the field is refused.
	Reason string
}

func (e *KubeconfigError) Error() string {
	var b strings.Builder
	b.WriteString("kubeconfig")
	if e.Key != "" {
		fmt.Fprintf(&b, " in key %q", e.Key)
	}
	if e.Secret != "" {
		fmt.Fprintf(&b, " of Secret %s", e.Secret)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	return b.String()
}

// Reasons of the refusals.
const (
	reasonExec     = "runs a credential plugin on the controller's host; refused unless exec is allowed (Flux's --insecure-kubeconfig-exec)"
	reasonProvider = "runs an auth-provider plugin in the controller's process; refused unless exec is allowed (Flux's --insecure-kubeconfig-exec)"
	reasonFile     = "names a file on the controller's host; refused unless file references are allowed (use the inline -data field instead)"
	reasonAs       = "impersonation is set by the controller (spec.serviceAccountName), not by a kubeconfig"
)

// RESTConfigFromKubeconfig turns kubeconfig bytes, as read from a Secret,
// into the *rest.Config of its current context, treating them as data:
// nothing in them makes the caller's process run a program or read a
// file of its host unless opts allow it. It refuses, wherever they appear
// in the kubeconfig (used by the current context or not):
//
//   - users[].user.exec and users[].user.auth-provider, unless
//     opts.AllowExec: an exec plugin is a command run on the host, and
//     an auth-provider is plugin code that may read files or write back
//     to the process's own kubeconfig;
//   - users[].user.tokenFile, client-certificate and client-key, and
//     clusters[].cluster.certificate-authority, unless opts.AllowFiles:
//     their files would be read on the host (a token file of the host
//     would be sent as bearer token to a server the kubeconfig names);
//   - users[].user.as, as-uid, as-groups and as-user-extra, always:
//     whom a release acts as is the controller's to set, from
//     spec.serviceAccountName, which would otherwise replace them
//     unseen.
//
// proxy-url, insecure-skip-tls-verify and the inline -data fields are
// accepted: they concern only the connection to a server the kubeconfig
// names anyway, with credentials it carries itself.
//
// The result has no ExecProvider, AuthProvider, file field or
// impersonation unless opts allow it, and never an auth-provider
// persister: nothing is written back anywhere. Errors are
// *KubeconfigError and name opts.Secret, opts.Key and the field, never a
// value of the kubeconfig.
func RESTConfigFromKubeconfig(data []byte, opts KubeconfigOptions) (*rest.Config, error) {
	fail := func(field, reason string) error {
		return &KubeconfigError{Secret: opts.Secret, Key: opts.Key, Field: field, Reason: reason}
	}
	// The versioned form keeps the order of users and clusters, so a
	// field is named by its index (names are the Secret's content too).
	serializer := k8sjson.NewSerializerWithOptions(k8sjson.DefaultMetaFactory, clientcmdlatest.Scheme, clientcmdlatest.Scheme, k8sjson.SerializerOptions{Yaml: true})
	var v1 clientcmdv1.Config
	if len(data) == 0 {
		return nil, fail("", "is empty")
	}
	if _, _, err := serializer.Decode(data, &schema.GroupVersionKind{Version: clientcmdlatest.Version, Kind: "Config"}, &v1); err != nil {
		// Parse errors may quote the input: withheld.
		return nil, fail("", "does not parse as a kubeconfig")
	}
	if field, reason := refusedField(&v1, opts); field != "" {
		return nil, fail(field, reason)
	}
	// Load decodes the same bytes the same way into the form clientcmd
	// builds from; it reads no file (only LoadFromFile resolves paths).
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, fail("", "does not parse as a kubeconfig")
	}
	if field, reason := missingReference(&v1, cfg); field != "" {
		return nil, fail(field, reason)
	}
	// No config access: an auth-provider gets no persister that would
	// write refreshed tokens to the process's own kubeconfig files.
	rc, err := clientcmd.NewNonInteractiveClientConfig(*cfg, cfg.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		// clientcmd's messages quote names and paths: withheld.
		return nil, fail("", "is not usable: the current context's cluster needs a server URL and its user valid credentials")
	}
	if field := refusedRESTField(rc, opts); field != "" {
		return nil, fail("rest.Config."+field, "would be set from the kubeconfig; refused")
	}
	return rc, nil
}

// refusedField returns the first field of cfg that opts do not allow,
// and why.
func refusedField(cfg *clientcmdv1.Config, opts KubeconfigOptions) (string, string) {
	for i := range cfg.AuthInfos {
		u := &cfg.AuthInfos[i].AuthInfo
		at := func(f string) string { return fmt.Sprintf("users[%d].user.%s", i, f) }
		switch {
		case u.Exec != nil && !opts.AllowExec:
			return at("exec"), reasonExec
		case u.AuthProvider != nil && !opts.AllowExec:
			return at("auth-provider"), reasonProvider
		case u.TokenFile != "" && !opts.AllowFiles:
			return at("tokenFile"), reasonFile
		case u.ClientCertificate != "" && !opts.AllowFiles:
			return at("client-certificate"), reasonFile
		case u.ClientKey != "" && !opts.AllowFiles:
			return at("client-key"), reasonFile
		case u.Impersonate != "":
			return at("as"), reasonAs
		case u.ImpersonateUID != "":
			return at("as-uid"), reasonAs
		case len(u.ImpersonateGroups) > 0:
			return at("as-groups"), reasonAs
		case len(u.ImpersonateUserExtra) > 0:
			return at("as-user-extra"), reasonAs
		}
	}
	for i := range cfg.Clusters {
		if cfg.Clusters[i].Cluster.CertificateAuthority != "" && !opts.AllowFiles {
			return fmt.Sprintf("clusters[%d].cluster.certificate-authority", i), reasonFile
		}
	}
	return "", ""
}

// missingReference names a reference of the current context that leads
// nowhere (clientcmd's own errors would quote the names).
func missingReference(v1 *clientcmdv1.Config, cfg *clientcmdapi.Config) (string, string) {
	if cfg.CurrentContext == "" {
		return "current-context", "is empty"
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "current-context", "names no entry of contexts"
	}
	i := 0
	for j := range v1.Contexts {
		if v1.Contexts[j].Name == cfg.CurrentContext {
			i = j // the last one wins, as in clientcmd
		}
	}
	if _, ok := cfg.Clusters[ctx.Cluster]; !ok {
		return fmt.Sprintf("contexts[%d].context.cluster", i), "names no entry of clusters"
	}
	if _, ok := cfg.AuthInfos[ctx.AuthInfo]; ctx.AuthInfo != "" && !ok {
		return fmt.Sprintf("contexts[%d].context.user", i), "names no entry of users"
	}
	return "", ""
}

// refusedRESTField returns the first field of rc that opts do not allow:
// a second line behind refusedField, in case clientcmd fills one from
// somewhere the kubeconfig checks do not look.
func refusedRESTField(rc *rest.Config, opts KubeconfigOptions) string {
	switch {
	case rc.ExecProvider != nil && !opts.AllowExec:
		return "ExecProvider"
	case rc.AuthProvider != nil && !opts.AllowExec:
		return "AuthProvider"
	case rc.AuthConfigPersister != nil:
		return "AuthConfigPersister"
	case rc.BearerTokenFile != "" && !opts.AllowFiles:
		return "BearerTokenFile"
	case rc.CertFile != "" && !opts.AllowFiles:
		return "CertFile"
	case rc.KeyFile != "" && !opts.AllowFiles:
		return "KeyFile"
	case rc.CAFile != "" && !opts.AllowFiles:
		return "CAFile"
	case rc.Impersonate.UserName != "" || rc.Impersonate.UID != "" || len(rc.Impersonate.Groups) > 0 || len(rc.Impersonate.Extra) > 0:
		return "Impersonate"
	}
	return ""
}
