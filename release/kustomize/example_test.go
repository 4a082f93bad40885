package kustomize_test

import (
	"context"
	"fmt"
	"testing/fstest"

	"github.com/helmfleet/helmfleet/release/kustomize"
)

// A base HelmRelease and a dev overlay that pins a pre-release chart
// version, built from an in-memory file system.
func ExampleBuild() {
	fsys := fstest.MapFS{
		"base/kustomization.yaml": {Data: []byte(`resources: [release.yaml]
namespace: ingress-nginx
`)},
		"base/release.yaml": {Data: []byte(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: ingress-nginx
spec:
  interval: 30m
  chart:
    spec:
      chart: ingress-nginx
      sourceRef: {kind: HelmRepository, name: ingress-nginx}
`)},
		"dev/kustomization.yaml": {Data: []byte(`resources: [../base, namespace.yaml]
patches:
  - target: {kind: HelmRelease, name: ingress-nginx}
    patch: |
      - op: add
        path: /spec/chart/spec/version
        value: ">=4.0.0-0"
`)},
		"dev/namespace.yaml": {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ingress-nginx\n")},
	}
	res, err := kustomize.Build(context.Background(), fsys, "dev", kustomize.Options{Origins: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Objects.Releases {
		fmt.Printf("%s/%s chart %s version %s\n", r.Namespace, r.Name, r.Spec.Chart.Spec.Chart, r.Spec.Chart.Spec.Version)
	}
	for _, o := range res.Plain {
		fmt.Println("plain:", o.GetKind(), o.GetName())
	}
	for _, o := range res.Origins {
		fmt.Println("from", o.File+":", o.Kind, o.Name)
	}

	// A remote base is refused before anything runs.
	fsys["dev/kustomization.yaml"] = &fstest.MapFile{Data: []byte("resources:\n  - ../base\n  - github.com/kubernetes/ingress-nginx/deploy?ref=main\n")}
	_, err = kustomize.Build(context.Background(), fsys, "dev", kustomize.Options{})
	fmt.Println(err)
	// Output:
	// ingress-nginx/ingress-nginx chart ingress-nginx version >=4.0.0-0
	// plain: Namespace ingress-nginx
	// from dev/namespace.yaml: Namespace ingress-nginx
	// from base/release.yaml: HelmRelease ingress-nginx
	// dev/kustomization.yaml: resources[1] "github.com/kubernetes/ingress-nginx/deploy?ref=main": remote bases and resources are not supported: Build reads only the given file system
}

// A kustomization tree on disk, read through an os.Root: no symbolic
// link, not even one swapped in while Build reads, leads out of it.
func ExampleDirFS() {
	dir, err := kustomize.DirFS("testdata/fleet")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer dir.Close()
	res, err := kustomize.Build(context.Background(), dir, "infrastructure/dev", kustomize.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range res.Objects.Releases {
		fmt.Println(r.Namespace + "/" + r.Name)
	}
	// Output:
	// ingress-nginx/ingress-nginx
}
