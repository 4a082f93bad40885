package release_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// A scheme with both groups decodes Flux's YAML into the typed objects a
// controller-runtime client or a client-go REST client hands out.
func ExampleAddToScheme() {
	scheme := runtime.NewScheme()
	if err := release.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := source.AddToScheme(scheme); err != nil {
		panic(err)
	}
	decoder := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	for _, doc := range []string{`
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: podinfo, namespace: apps}
spec: {interval: 5m, url: "https://stefanprodan.github.io/podinfo"}
`, `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: 6.5.*
      sourceRef: {kind: HelmRepository, name: podinfo}
`} {
		obj, gvk, err := decoder.Decode([]byte(doc), nil, nil)
		if err != nil {
			panic(err)
		}
		switch o := obj.(type) {
		case *release.Release:
			fmt.Printf("%s: %T %s/%s, chart %s %s\n", gvk.Kind, o, o.Namespace, o.Name, o.Spec.Chart.Spec.Chart, o.Spec.Chart.Spec.Version)
		case *source.HelmRepository:
			fmt.Printf("%s: %T %s/%s, %s\n", gvk.Kind, o, o.Namespace, o.Name, o.Spec.URL)
		}
	}
	// Output:
	// HelmRepository: *source.HelmRepository apps/podinfo, https://stefanprodan.github.io/podinfo
	// HelmRelease: *release.Release apps/podinfo, chart podinfo 6.5.*
}
