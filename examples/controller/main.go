// Command controller is Flux's helm-controller built on helmfleet: a
// controller-runtime manager running release/controller's
// HelmReleaseReconciler. newManager is all the wiring a platform team's
// own main needs (scheme, manager options with the shard's Lease, and
// controller.Setup).
//
// With -serve it runs until interrupted against the cluster of
// controller-runtime's usual config (its -kubeconfig flag, $KUBECONFIG,
// or in-cluster); install the CRDs of release/crds first. Charts come from
// the embedded test chart here; a real deployment passes a
// source.Resolver as Config.Resolver:
//
//	go run ./examples/controller -serve -kubeconfig ~/.kube/config [-shard key] [-leader-elect]
//
// Without it, it runs a demo (demo.go): a hub with a HelmRelease whose
// values come from a ConfigMap, and a dependent released before its
// dependency; the platform team changes the ConfigMap and adds the
// dependency, and the controller follows. The demo runs the real manager
// against a real kube-apiserver when controller-runtime's envtest finds
// its binaries ($KUBEBUILDER_ASSETS, as setup-envtest prints it), else
// the same reconciler over
// controller-runtime's fake client, one reconcile per change as the
// manager's watches would trigger it:
//
//	go run ./examples/controller
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

func main() {
	serveFlag := flag.Bool("serve", false, "run against the cluster of -kubeconfig (or $KUBECONFIG, or in-cluster) until interrupted; without it, run the demo")
	shard := flag.String("shard", "", "reconcile the HelmReleases labelled sharding.fluxcd.io/key=<shard>; empty: the unlabelled ones")
	leaderElect := flag.Bool("leader-elect", false, "elect a leader among the shard's instances")
	metricsAddr := flag.String("metrics-bind-address", "0", "address of the Prometheus metrics endpoint; 0 disables it")
	flag.Parse()
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var err error
	if *serveFlag {
		err = serve(ctx, options{Shard: *shard, LeaderElection: *leaderElect, MetricsAddr: *metricsAddr})
	} else {
		err = demo(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// options are the knobs of one controller instance.
type options struct {
	// Shard is the sharding.fluxcd.io/key this instance reconciles; ""
	// the unlabelled HelmReleases.
	Shard string
	// LeaderElection elects one active instance per shard.
	LeaderElection bool
	// MetricsAddr serves Prometheus metrics; "0" disables.
	MetricsAddr string
	// Name is the controller's name; default controller.DefaultName.
	Name string
	// Log is the manager's logger; default ctrl.Log.
	Log *logr.Logger
}

// charts serves release/fleettest's small podinfo chart; a real
// controller passes a source.Resolver instead.
var charts = fleettest.NewCharts(fleettest.Podinfo("6.5.0"))

// newManager is the wiring: a scheme with the controller's kinds, a
// manager whose leader election uses the shard's Lease, and the
// HelmRelease controller for the shard.
func newManager(ctx context.Context, cfg *rest.Config, o options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := controller.AddToScheme(scheme); err != nil {
		return nil, err
	}
	log := ctrl.Log
	if o.Log != nil {
		log = *o.Log
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:  "0",
		LeaderElection:          o.LeaderElection,
		LeaderElectionID:        controller.LeaderElectionID(o.Shard),
		LeaderElectionNamespace: "default",
	})
	if err != nil {
		return nil, err
	}
	_, err = controller.Setup(ctx, mgr, controller.Config{
		Charts: charts,
		Shard:  controller.ShardSelector(o.Shard),
		Name:   o.Name,
		// The demo's clusters run no controllers: nothing becomes
		// available, so waits are short.
		Reconciler: reconcile.Config{PollInterval: 100 * time.Millisecond},
	})
	return mgr, err
}

// serve runs the controller against the cluster of controller-runtime's
// config until ctx is cancelled.
func serve(ctx context.Context, o options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, err := newManager(ctx, cfg, o)
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}
