package kube

import (
	"context"
	"errors"
	"fmt"
	"io"

	"helm.sh/helm/v3/pkg/action"
	helmkube "helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
)

// DefaultFieldManager is the field manager of applies whose options name
// none and whose Config sets no FieldManager.
const DefaultFieldManager = "helmfleet"

// Config says how to reach one cluster. Exactly one of Getter and REST is
// required; every client the Cluster uses is built from it unless the
// caller hands one in.
type Config struct {
	// Name identifies the cluster in errors and plans; required.
	Name string
	// Getter is the caller's client getter (for example
	// genericclioptions.ConfigFlags, or a RESTConfigGetter). Helm's kube
	// client always works through it (Helm builds its clients from a
	// getter); the object client's defaults come from it too.
	Getter genericclioptions.RESTClientGetter
	// REST is used, through NewRESTConfigGetter with namespace "default",
	// when Getter is nil.
	REST *rest.Config
	// Dynamic, when set, serves Get, List, Apply and Delete instead of a
	// dynamic client built from the getter's *rest.Config.
	Dynamic dynamic.Interface
	// Mapper, when set, maps kinds to resources instead of the getter's
	// RESTMapper. It is reset (meta.MaybeResetRESTMapper) once when a kind
	// is not found, so CRDs created after the first call are found.
	Mapper meta.RESTMapper
	// Kubernetes, when set, stores Helm's release Secrets instead of a
	// clientset built from the getter's *rest.Config.
	Kubernetes kubernetes.Interface
	// FieldManager is used for applies whose options name none; empty
	// means DefaultFieldManager.
	FieldManager string
	// Log receives Helm's debug messages; nil discards them. Helm calls
	// it on goroutines of its own: a panic of Log is contained, turns the
	// log off, and the next HelmConfig fails once with it (a
	// *release.CallbackPanicError).
	Log func(format string, args ...any)
	// QPS and Burst are the client-side rate limit of every client the
	// Cluster builds, used when the caller's *rest.Config sets none (QPS,
	// Burst and RateLimiter all zero); zero means DefaultQPS and
	// DefaultBurst. A config that sets any of them is kept as it is. With
	// REST they reach Helm's own clients too; with Getter only the
	// object client and the release storage, as Helm builds its clients
	// from the getter.
	QPS   float32
	Burst int
}

// Client-side rate limits used when a *rest.Config sets none. client-go
// would otherwise throttle at 5 requests a second with bursts of 10 (what
// a plain kubeconfig gets), and a Helm install issues a request per object
// plus its release Secret and readiness polls: measured on a local API
// server, 580 ms per install throttled against 173 ms unthrottled. 50 and
// 300 are Flux's controllers' defaults (--kube-api-qps, --kube-api-burst);
// 300 is also kubectl's discovery burst.
const (
	DefaultQPS   float32 = 50
	DefaultBurst         = 300
)

// withRateLimits returns cfg when it sets a rate limit, otherwise a copy
// with qps and burst (DefaultQPS and DefaultBurst when zero).
func withRateLimits(cfg *rest.Config, qps float32, burst int) *rest.Config {
	if cfg.QPS != 0 || cfg.Burst != 0 || cfg.RateLimiter != nil {
		return cfg
	}
	if qps == 0 {
		qps = DefaultQPS
	}
	if burst == 0 {
		burst = DefaultBurst
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = qps, burst
	return cfg
}

// Cluster is a release.Cluster over a real Kubernetes API server. It is
// safe for concurrent use.
type Cluster struct {
	name         string
	getter       genericclioptions.RESTClientGetter
	dynamic      dynamic.Interface
	mapper       meta.RESTMapper
	kubernetes   kubernetes.Interface
	fieldManager string
	log          func(format string, args ...any)
	logs         *containedLog // log's panics; nil without Config.Log
	caps         *capsCache
	verifier     *sharedVerifier
	as           *impersonations
}

var _ release.Cluster = (*Cluster)(nil)

// ConfigError reports an invalid Config field.
type ConfigError struct {
	// Field is the Config field, e.g. "Name".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("kube.Config.%s: %s", e.Field, e.Reason)
}

// New returns the cluster cfg describes. It talks to no server: discovery
// happens on first use.
func New(cfg Config) (*Cluster, error) {
	if cfg.Name == "" {
		return nil, &ConfigError{Field: "Name", Reason: "required"}
	}
	getter := cfg.Getter
	switch {
	case getter == nil && cfg.REST == nil:
		return nil, &ConfigError{Field: "Getter", Reason: "one of Getter and REST is required"}
	case getter != nil && cfg.REST != nil:
		return nil, &ConfigError{Field: "REST", Reason: "set only one of Getter and REST"}
	case getter == nil:
		getter = NewRESTConfigGetter(withRateLimits(cfg.REST, cfg.QPS, cfg.Burst), "")
	}
	c := &Cluster{
		name:         cfg.Name,
		getter:       getter,
		dynamic:      cfg.Dynamic,
		mapper:       cfg.Mapper,
		kubernetes:   cfg.Kubernetes,
		fieldManager: cfg.FieldManager,
		log:          cfg.Log,
		caps:         newCapsCache(),
		verifier:     newSharedVerifier(),
		as:           newImpersonations(cfg),
	}
	if c.fieldManager == "" {
		c.fieldManager = DefaultFieldManager
	}
	if c.log == nil {
		c.log = func(string, ...any) {}
	} else {
		c.logs = &containedLog{log: c.log}
		c.log = c.logs.logf
	}
	if c.dynamic == nil || c.kubernetes == nil {
		rc, err := getter.ToRESTConfig()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: rest config: %w", cfg.Name, err)
		}
		rc = withRateLimits(rc, cfg.QPS, cfg.Burst)
		if c.dynamic == nil {
			if c.dynamic, err = dynamic.NewForConfig(rc); err != nil {
				return nil, fmt.Errorf("cluster %s: dynamic client: %w", cfg.Name, err)
			}
		}
		if c.kubernetes == nil {
			if c.kubernetes, err = kubernetes.NewForConfig(rc); err != nil {
				return nil, fmt.Errorf("cluster %s: clientset: %w", cfg.Name, err)
			}
		}
	}
	if c.mapper == nil {
		m, err := getter.ToRESTMapper()
		if err != nil {
			return nil, fmt.Errorf("cluster %s: rest mapper: %w", cfg.Name, err)
		}
		c.mapper = m
	}
	return c, nil
}

// RESTConfig returns a copy of the *rest.Config the cluster's getter
// gives: with Config.REST, the caller's with the rate limits New filled
// in.
func (c *Cluster) RESTConfig() (*rest.Config, error) { return c.getter.ToRESTConfig() }

// Name returns the cluster's name.
func (c *Cluster) Name() string { return c.name }

// HelmConfig returns a new Helm action configuration for scope: release
// records in Secrets (Helm's "secret" driver) of scope.StorageNamespace, and
// a Helm kube client whose default namespace is scope.Namespace
// (scope.StorageNamespace when empty). Helm's debug output goes to
// Config.Log; hook logs are discarded. Its kube client's validator asks
// the server whether it validates fields itself once per kind for the
// Cluster's life, not on every install (see validatorFactory).
func (c *Cluster) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %s: helm config: %w", c.name, err)
	}
	if scope.StorageNamespace == "" {
		return nil, fmt.Errorf("cluster %s: helm config: HelmScope.StorageNamespace is empty", c.name)
	}
	if c.logs != nil {
		if err := c.logs.take(); err != nil {
			return nil, fmt.Errorf("cluster %s: helm config: %w", c.name, err)
		}
	}
	ns := scope.Namespace
	if ns == "" {
		ns = scope.StorageNamespace
	}
	kc := helmkube.New(c.getter)
	kc.Factory = newValidatorFactory(c.getter, c.verifier)
	kc.Namespace = ns
	kc.Log = c.log
	secrets := driver.NewSecrets(c.kubernetes.CoreV1().Secrets(scope.StorageNamespace))
	secrets.Log = c.log
	store := storage.Init(secrets)
	store.Log = c.log
	return &action.Configuration{
		RESTClientGetter: c.getter,
		Releases:         store,
		KubeClient:       kc,
		Log:              c.log,
		HookOutputFunc:   func(_, _, _ string) io.Writer { return io.Discard },
	}, nil
}

// ctxError wraps err so that it matches ctx's error when ctx is done.
func ctxError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("%w: %w", ctxErr, err)
	}
	return err
}
