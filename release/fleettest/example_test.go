package fleettest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/registry"

	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/source"
)

const podinfoEverywhere = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  timeout: 1s # the in-memory members are ready at once, or never
  chart:
    spec: {chart: podinfo, version: "6.5.x", sourceRef: {kind: HelmRepository, name: podinfo}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: everywhere}
spec:
  resourceSelectors: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease}]
  placement:
    clusterAffinity: {labelSelector: {matchExpressions: [{key: env, operator: Exists}]}}
`

// A test fleet of two members where podinfo's image never becomes ready
// on prod: dev gets a deployed release, prod a failed one.
func Example() {
	ctx := context.Background()
	f, err := fleettest.New(fleettest.Config{
		Members: []fleettest.Member{
			{Name: "dev-1", Labels: map[string]string{"env": "dev"}, KubeVersion: "v1.31.0"},
			{Name: "prod-1", Labels: map[string]string{"env": "prod"}, Health: fleettest.ImageNeverReady("ghcr.io/stefanprodan/podinfo")},
		},
		Charts: fleettest.NewCharts(fleettest.Podinfo("6.5.0"), fleettest.Podinfo("6.5.1")),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	in, err := fleettest.Inputs(podinfoEverywhere)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = f.Run(ctx, in, fleet.ApplyOptions{})
	fmt.Println("apply failed:", err != nil)
	for _, name := range f.Names() {
		revs, err := fleettest.Revisions(ctx, f.Cluster(name), "apps", "podinfo")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(name, revs, "Ready="+f.Ready(name, "apps", "podinfo"))
	}
	// Output:
	// apply failed: true
	// dev-1 [6.5.1 deployed] Ready=True
	// prod-1 [6.5.1 failed] Ready=False
}

// A member whose Helm storage refuses the first write of a release
// record: the install fails with the injected error, and nothing is
// stored.
func ExampleMember_faults() {
	ctx := context.Background()
	f, err := fleettest.New(fleettest.Config{
		Members: []fleettest.Member{{
			Name: "dev-1", Labels: map[string]string{"env": "dev"},
			Faults: memory.FailNth(memory.OpStorageCreate, nil, 1, errors.New("etcd timeout")),
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	in, err := fleettest.Inputs(podinfoEverywhere)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = f.Run(ctx, in, fleet.ApplyOptions{})
	fmt.Println("names the fault:", err != nil && strings.Contains(err.Error(), "etcd timeout"))
	revs, _ := fleettest.Revisions(ctx, f.Cluster("dev-1"), "apps", "podinfo")
	fmt.Println("revisions:", len(revs))
	// Output:
	// names the fault: true
	// revisions: 0
}

// A chart written in code, installed on one in-memory cluster with Helm,
// and its objects read back.
func ExampleChart() {
	ctx := context.Background()
	ch, err := fleettest.Chart{
		Name: "hello", Version: "1.0.0",
		Values: map[string]any{"greeting": "hello"},
		Templates: map[string]string{"configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: '{{ .Release.Name }}'}
data: {greeting: '{{ .Values.greeting }}'}
`},
	}.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	c := fleettest.NewCluster(fleettest.Member{Name: "dev-1"})
	if err := install(ctx, c, ch, "world"); err != nil {
		fmt.Println(err)
		return
	}
	cm, err := fleettest.Object(ctx, c, "v1", "ConfigMap", "apps", "world")
	if err != nil {
		fmt.Println(err)
		return
	}
	revs, err := fleettest.History(ctx, c, "apps", "world")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cm.Object["data"], len(revs), revs[0].Info.Status)
	// Output:
	// map[greeting:hello] 1 deployed
}

// Charts picks the newest version a release's constraint admits, as
// Flux's source-controller does.
func ExampleCharts() {
	charts := fleettest.NewCharts(fleettest.Podinfo("6.4.0"), fleettest.Podinfo("6.5.2"), fleettest.Podinfo("7.0.0-rc.1"))
	for _, constraint := range []string{"6.x", "6.4.0", ">=7.0.0-0", "8.x"} {
		ch, err := charts.Get("podinfo", constraint)
		if err != nil {
			fmt.Println(constraint, "error:", errors.Is(err, source.ErrNoMatchingVersion))
			continue
		}
		fmt.Println(constraint, ch.Metadata.Version)
	}
	// Output:
	// 6.x 6.5.2
	// 6.4.0 6.4.0
	// >=7.0.0-0 7.0.0-rc.1
	// 8.x error: true
}

// A Helm repository in memory, read by package source as a HelmRepository
// would be.
func ExampleNewHelmRepository() {
	repo, err := fleettest.NewHelmRepository(fleettest.Podinfo("6.4.0"), fleettest.Podinfo("6.5.2"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer repo.Close()
	resolver := source.NewHTTPResolver(repo.Client(), source.HTTPOptions{})
	c, err := resolver.Resolve(context.Background(), source.Ref{
		Chart: "podinfo", Version: "6.x", HelmRepository: repo.Object("flux-system", "podinfo"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Chart.Name(), c.Version, c.SourceKind)
	// Output:
	// podinfo 6.5.2 HelmRepository
}

// An OCI registry in memory, read by package source as an OCIRepository
// would be.
func ExampleNewOCIRegistry() {
	ctx := context.Background()
	reg, err := fleettest.NewOCIRegistry(ctx, fleettest.Podinfo("6.5.0"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Close()
	repo := &source.OCIRepository{Spec: source.OCIRepositorySpec{URL: reg.URL("podinfo")}}
	resolver := source.NewOCIResolver(source.OCIOptions{ClientOptions: []registry.ClientOption{registry.ClientOptPlainHTTP()}})
	c, err := resolver.Resolve(ctx, source.Ref{Version: "6.5.0", OCIRepository: repo})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Chart.Name(), c.Version, strings.HasPrefix(c.Digest, "sha256:"))
	// Output:
	// podinfo 6.5.0 true
}
