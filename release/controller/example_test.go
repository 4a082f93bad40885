package controller_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// A HelmRelease on a (fake) API server, reconciled once onto an in-memory
// cluster: the status gets Flux's conditions and the result says when to
// come back. In a manager, controller.Setup wires the same reconciler to
// the manager's client, cache, events and watches.
func Example() {
	const hrYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps, generation: 1}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
`
	objs, err := release.Decode(strings.NewReader(hrYAML))
	if err != nil {
		panic(err)
	}
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = controller.AddToScheme(scheme)
	hub := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(objs.Releases[0]).WithStatusSubresource(&release.Release{}).Build()

	charts := reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: fleettest.Podinfo(rel.Spec.Chart.Spec.Version)}, nil
	})
	target := memory.New("in-cluster")
	r, err := controller.New(controller.Config{
		Client:     hub,
		REST:       &rest.Config{Host: "https://in-cluster.example"},
		Charts:     charts,
		NewCluster: func(string, *rest.Config) (release.Cluster, error) { return target, nil },
		Metrics:    must(controller.NewMetrics(nil)),
	})
	if err != nil {
		panic(err)
	}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "podinfo"}})
	if err != nil {
		panic(err)
	}
	hr := &release.Release{}
	if err := hub.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, hr); err != nil {
		panic(err)
	}
	for _, c := range hr.Status.Conditions {
		fmt.Printf("%s=%s %s\n", c.Type, c.Status, c.Reason)
	}
	fmt.Println("observedGeneration:", hr.Status.ObservedGeneration, "finalizers:", hr.Finalizers)
	fmt.Println("requeue after:", res.RequeueAfter)
	// Output:
	// Released=True InstallSucceeded
	// Ready=True InstallSucceeded
	// observedGeneration: 1 finalizers: [finalizers.fluxcd.io]
	// requeue after: 10m0s
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ShardSelector and LeaderElectionID split the HelmReleases of a cluster
// between instances by Flux's sharding.fluxcd.io/key label, each shard
// with its own leader.
func ExampleShardSelector() {
	for _, key := range []string{"", "shard1"} {
		fmt.Printf("shard %q: releases %s, lease %s\n", key, controller.ShardSelector(key), controller.LeaderElectionID(key))
	}
	// Output:
	// shard "": releases !sharding.fluxcd.io/key, lease helmfleet-helmrelease
	// shard "shard1": releases sharding.fluxcd.io/key=shard1, lease helmfleet-helmrelease-shard1
}

// A hub controller in fleet mode, as main wires it: charts resolved from
// the hub's HelmRepositories, OCIRepositories and HelmCharts, members from
// kubeconfig Secrets, the inventory in Secrets on the hub through the
// manager's own client, and leader election that also works outside a
// cluster.
func ExampleSetupFleet() {
	ctx := ctrl.SetupSignalHandler()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = controller.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                  scheme,
		LeaderElection:          true,
		LeaderElectionID:        controller.LeaderElectionID(""),
		LeaderElectionNamespace: controller.LeaderElectionNamespace(),
	})
	if err != nil {
		panic(err)
	}
	store, err := fleet.NewObjectStore(controller.ObjectClient("hub", mgr.GetClient()),
		fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "fleet"})
	if err != nil {
		panic(err)
	}
	_, err = controller.SetupFleet(ctx, mgr, controller.FleetConfig{
		Resolver:               source.Composite{HTTP: source.NewHTTPResolver(http.DefaultClient, source.HTTPOptions{})},
		Members:                &controller.SecretMembers{Reader: mgr.GetAPIReader(), Namespace: "fleet-system"},
		MemberSecretsNamespace: "fleet-system",
		Store:                  store,
	})
	if err != nil {
		panic(err)
	}
	if err := mgr.Start(ctx); err != nil {
		panic(err)
	}
}
