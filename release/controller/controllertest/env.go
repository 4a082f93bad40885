package controllertest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/source"
)

// Scheme returns a scheme with client-go's kinds and the controller's
// (controller.AddToScheme).
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := controller.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewClient returns a fake client holding objs, with Scheme, the status
// subresource of HelmReleases, and every index of controller.Indexers and
// controller.HelmChartIndexers: what the manager's cache serves a
// reconciler.
func NewClient(objs ...client.Object) (client.WithWatch, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	b := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&release.Release{}, &source.HelmChart{}, &source.HelmRepository{}, &source.OCIRepository{})
	for field, fn := range controller.Indexers() {
		b = b.WithIndex(&release.Release{}, field, fn)
	}
	for field, fn := range controller.HelmChartIndexers() {
		b = b.WithIndex(&source.HelmChart{}, field, fn)
	}
	return b.Build(), nil
}

// Env is a HelmReleaseReconciler over a fake client, installing releases
// on in-memory clusters.
type Env struct {
	// Client is the fake client: create and change objects with it, read
	// statuses back.
	Client client.WithWatch
	// Reconciler is the reconciler under test.
	Reconciler *controller.HelmReleaseReconciler
	// Metrics are the reconciler's collectors, on Registry.
	Metrics *controller.Metrics
	// Registry is the private Prometheus registry of Metrics.
	Registry *prometheus.Registry
	// Events records the reconciler's events (Events.Events to read).
	Events *events.FakeRecorder

	mu       sync.Mutex
	member   fleettest.Member
	clusters map[string]*memory.Cluster
}

// NewEnv returns the environment. cfg is the controller's configuration
// as a test wants it; NewEnv fills in Client, REST, Events and Metrics,
// Charts (when neither Charts nor Resolver is set: fleettest.Podinfo at
// 6.5.0) and NewCluster (when unset: one in-memory cluster per
// kubeconfig host, the local one called controller.LocalClusterName,
// built as local describes; its Name is ignored). objs are on the fake
// client from the start.
func NewEnv(cfg controller.Config, local fleettest.Member, objs ...client.Object) (*Env, error) {
	c, err := NewClient(objs...)
	if err != nil {
		return nil, err
	}
	e := &Env{Client: c, Registry: prometheus.NewRegistry(), Events: events.NewFakeRecorder(1000), member: local, clusters: map[string]*memory.Cluster{}}
	if e.Metrics, err = controller.NewMetrics(e.Registry); err != nil {
		return nil, err
	}
	cfg.Client, cfg.Events, cfg.Metrics = c, e.Events, e.Metrics
	if cfg.REST == nil {
		cfg.REST = &rest.Config{Host: localHost}
	}
	if cfg.Charts == nil && cfg.Resolver == nil {
		cfg.Charts = fleettest.NewCharts(fleettest.Podinfo(""))
	}
	fastPolls(&cfg.Reconciler.PollInterval)
	if cfg.NewCluster == nil {
		cfg.NewCluster = e.newCluster
	}
	if e.Reconciler, err = controller.New(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// localHost is the host of the local cluster's placeholder config: no
// request reaches it, since the clusters are in memory.
const localHost = "https://local.invalid"

func (e *Env) newCluster(name string, rc *rest.Config) (release.Cluster, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.clusters[rc.Host]; ok {
		return c, nil
	}
	m := e.member
	m.Name = name
	c := fleettest.NewCluster(m)
	e.clusters[rc.Host] = c
	return c, nil
}

// Cluster returns the in-memory cluster releases without spec.kubeConfig
// are installed on, building it if no reconcile has yet.
func (e *Env) Cluster() *memory.Cluster {
	c, _ := e.newCluster(controller.LocalClusterName, &rest.Config{Host: localHost})
	return c.(*memory.Cluster)
}

// Reconcile reconciles the HelmRelease namespace/name once and returns it
// as it is then on the client.
func (e *Env) Reconcile(ctx context.Context, namespace, name string) (ctrl.Result, *release.Release, error) {
	return reconcileOnce(ctx, e.Reconciler, e.Client, namespace, name)
}

// FleetEnv is a FleetReconciler over a fake hub and in-memory members.
type FleetEnv struct {
	// Client is the hub's fake client.
	Client client.WithWatch
	// Reconciler is the reconciler under test.
	Reconciler *controller.FleetReconciler
	// Metrics are the reconciler's collectors, on Registry.
	Metrics *controller.Metrics
	// Registry is the private Prometheus registry of Metrics.
	Registry *prometheus.Registry
	// Events records the reconciler's events.
	Events   *events.FakeRecorder
	clusters map[string]*memory.Cluster
}

// NewFleetEnv returns the environment: cfg as a test wants it, with
// Client, Events, Metrics, Charts (when neither Charts nor Resolver is
// set: fleettest.Podinfo at 6.5.0) and Members (the members described)
// filled in; objs are on the hub from the start.
func NewFleetEnv(cfg controller.FleetConfig, members []fleettest.Member, objs ...client.Object) (*FleetEnv, error) {
	c, err := NewClient(objs...)
	if err != nil {
		return nil, err
	}
	e := &FleetEnv{Client: c, Registry: prometheus.NewRegistry(), Events: events.NewFakeRecorder(1000), clusters: map[string]*memory.Cluster{}}
	if e.Metrics, err = controller.NewMetrics(e.Registry); err != nil {
		return nil, err
	}
	var ms controller.StaticMembers
	for i, m := range members {
		if _, dup := e.clusters[m.Name]; dup || m.Name == "" {
			return nil, fmt.Errorf("controllertest: members[%d].Name %q is empty or given twice", i, m.Name)
		}
		mc := fleettest.NewCluster(m)
		e.clusters[m.Name] = mc
		ms = append(ms, release.Member{Cluster: mc, Facts: policy.Cluster{Name: m.Name, Labels: m.Labels}})
	}
	cfg.Client, cfg.Events, cfg.Metrics, cfg.Members = c, e.Events, e.Metrics, ms
	if cfg.Charts == nil && cfg.Resolver == nil {
		cfg.Charts = fleettest.NewCharts(fleettest.Podinfo(""))
	}
	fastPolls(&cfg.Reconciler.PollInterval)
	if e.Reconciler, err = controller.NewFleet(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Cluster returns the member called name, or nil.
func (e *FleetEnv) Cluster(name string) *memory.Cluster { return e.clusters[name] }

// Reconcile runs one pass of the fleet reconciler (it plans every
// release at once, whatever the request) and returns the HelmRelease
// namespace/name as it is then on the hub.
func (e *FleetEnv) Reconcile(ctx context.Context, namespace, name string) (ctrl.Result, *release.Release, error) {
	return reconcileOnce(ctx, e.Reconciler, e.Client, namespace, name)
}

// reconcileOnce calls r for namespace/name and reads the HelmRelease back.
func reconcileOnce(ctx context.Context, r ctrlreconcile.Reconciler, c client.Reader, namespace, name string) (ctrl.Result, *release.Release, error) {
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}})
	if err != nil {
		return res, nil, err
	}
	rel := &release.Release{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, rel); err != nil {
		return res, nil, fmt.Errorf("controllertest: HelmRelease %s/%s after reconcile: %w", namespace, name, err)
	}
	return res, rel, nil
}

// fastPolls makes the reconciler poll in-memory clusters every
// millisecond unless the test chose otherwise: they are ready at once or
// never.
func fastPolls(d *time.Duration) {
	if *d == 0 {
		*d = time.Millisecond
	}
}
