package kube_test

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kube"
)

// A Cluster from a *rest.Config (in a program, from clientcmd or
// rest.InClusterConfig). Nothing talks to the server until a call needs it,
// so this runs without a cluster.
func Example() {
	cfg := &rest.Config{Host: "https://eu-1.example.com:6443", BearerToken: "…"}
	c, err := kube.New(kube.Config{Name: "eu-1", REST: cfg, FieldManager: "platform"})
	if err != nil {
		fmt.Println(err)
		return
	}
	helm, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "flux-system", Namespace: "podinfo"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Name(), "stores Helm releases as", helm.Releases.Name())
	// Output: eu-1 stores Helm releases as Secret
}

// NewRESTConfigGetter adapts a *rest.Config for code that takes a
// RESTClientGetter, such as Helm's action.Configuration.Init.
func ExampleNewRESTConfigGetter() {
	getter := kube.NewRESTConfigGetter(&rest.Config{Host: "https://eu-1.example.com:6443"}, "podinfo")
	ns, _, _ := getter.ToRawKubeConfigLoader().Namespace()
	c, err := kube.New(kube.Config{Name: "eu-1", Getter: getter})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Name(), ns)
	// Output: eu-1 podinfo
}

// A misconfigured cluster is reported with the Config field at fault.
func ExampleNew_invalid() {
	_, err := kube.New(kube.Config{Name: "eu-1"})
	fmt.Println(err)
	// Output: kube.Config.Getter: one of Getter and REST is required
}
