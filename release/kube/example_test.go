package kube_test

import (
	"context"
	"errors"
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

// A kubeconfig from a Secret is data: one whose user runs a credential
// plugin is refused, naming the Secret, key and field but no value.
func ExampleRESTConfigFromKubeconfig() {
	data := []byte(`apiVersion: v1
kind: Config
clusters: [{name: eu-1, cluster: {server: "https://eu-1.example.com:6443"}}]
users: [{name: tenant, user: {exec: {apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never, command: /bin/sh}}}]
contexts: [{name: eu-1, context: {cluster: eu-1, user: tenant}}]
current-context: eu-1
`)
	_, err := kube.RESTConfigFromKubeconfig(data, kube.KubeconfigOptions{Secret: "team-a/eu-1", Key: "value"})
	var ke *kube.KubeconfigError
	if errors.As(err, &ke) {
		fmt.Println(ke.Field)
	}

	rc, err := kube.RESTConfigFromKubeconfig(data, kube.KubeconfigOptions{AllowExec: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rc.Host, rc.ExecProvider.Command)
	// Output:
	// users[0].user.exec
	// https://eu-1.example.com:6443 /bin/sh
}
