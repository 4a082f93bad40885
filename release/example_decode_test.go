package release_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
)

// Decode a stream holding a source and two releases, one of them in the
// older v2beta1 format, fill in Flux's defaults and validate everything.
func Example_decode() {
	const stream = `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: podinfo
spec:
  interval: 5m
  url: https://stefanprodan.github.io/podinfo
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
spec:
  interval: 10m
  targetNamespace: web
  chart:
    spec:
      chart: podinfo
      version: '6.5.*'
      sourceRef:
        kind: HelmRepository
        name: podinfo
  upgrade:
    remediation:
      retries: 3
  values:
    replicaCount: 2
---
apiVersion: helm.toolkit.fluxcd.io/v2beta1
kind: HelmRelease
metadata:
  name: legacy
  namespace: apps
spec:
  interval: 5m
  chart:
    spec:
      chart: nginx
      version: 15.3.0
      valuesFile: values-prod.yaml
      sourceRef:
        kind: HelmRepository
        name: bitnami
        namespace: default
`
	objs, err := release.Decode(strings.NewReader(stream))
	if err != nil {
		fmt.Println(err)
		return
	}
	objs.Default()
	if err := objs.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	for _, repo := range objs.HelmRepositories {
		fmt.Printf("%s %s/%s %s\n", repo.Kind, repo.Namespace, repo.Name, repo.Spec.URL)
	}
	for _, r := range objs.Releases {
		c := r.Spec.Chart.Spec
		up := r.GetUpgrade().GetRemediation()
		fmt.Printf("%s %s/%s: release %s in %s, chart %s@%s, values files %v, upgrade retries %d then %s\n",
			r.APIVersion, r.Namespace, r.Name, r.GetReleaseName(), r.GetTargetNamespace(),
			c.Chart, c.Version, c.ValuesFiles, up.GetRetries(), up.GetStrategy())
	}
	// Output:
	// HelmRepository default/podinfo https://stefanprodan.github.io/podinfo
	// helm.toolkit.fluxcd.io/v2 default/podinfo: release web-podinfo in web, chart podinfo@6.5.*, values files [], upgrade retries 3 then rollback
	// helm.toolkit.fluxcd.io/v2 apps/legacy: release legacy in apps, chart nginx@15.3.0, values files [values-prod.yaml], upgrade retries 0 then rollback
}

// Decode reports every problem of a stream at once, each with the
// document, the object and the field path.
func Example_decodeErrors() {
	const stream = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: default
spec:
  interval: 10m
  timeout: 5 minutes
  chart:
    spec:
      chart: podinfo
      sourceRef: {kind: HelmRepository, name: podinfo}
  install:
    remediaton:
      retries: 3
---
apiVersion: helm.toolkit.fluxcd.io/v3
kind: HelmRelease
metadata:
  name: next
`
	_, err := release.Decode(strings.NewReader(stream))
	var de *release.DecodeError
	if errors.As(err, &de) {
		for _, p := range de.Problems {
			fmt.Printf("document %d, %s, %s\n", p.Document, p.Object(), p.Path)
		}
	}
	fmt.Println(err)
	// Output:
	// document 1, HelmRelease default/podinfo, spec.timeout
	// document 1, HelmRelease default/podinfo, spec.install.remediaton
	// document 2, HelmRelease next, apiVersion
	// 3 problems:
	//   document 1 (HelmRelease default/podinfo, line 9): spec.timeout: invalid value: time: unknown unit " minutes" in duration "5 minutes" (value: 5 minutes)
	//   document 1 (HelmRelease default/podinfo, line 15): spec.install.remediaton: unknown field, did you mean "remediation"? (value: {"retries":3})
	//   document 2 (HelmRelease next, line 18): apiVersion: unsupported apiVersion "helm.toolkit.fluxcd.io/v3" for kind HelmRelease; accepted: helm.toolkit.fluxcd.io/v2, helm.toolkit.fluxcd.io/v2beta1, helm.toolkit.fluxcd.io/v2beta2 (value: helm.toolkit.fluxcd.io/v3)
}

// Validate returns every problem of a Release at once.
func ExampleRelease_Validate() {
	r := &release.Release{}
	r.Name = "podinfo"
	r.Spec.Chart = &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{
		Chart:     "podinfo",
		Version:   ">= 6.x.y.z",
		SourceRef: release.CrossNamespaceObjectReference{Kind: "OCIRepository", Name: "podinfo"},
	}}
	r.Spec.Timeout = &metav1.Duration{Duration: -time.Second}
	r.Spec.DriftDetection = &release.DriftDetection{Mode: "enabled", Ignore: []release.IgnoreRule{{Paths: []string{"spec/replicas"}}}}
	r.Default()
	fmt.Println(r.Validate())
	// Output:
	// HelmRelease default/podinfo: 4 problems:
	//   spec.chart.spec.sourceRef.kind: must be one of HelmRepository, GitRepository, Bucket (value: OCIRepository)
	//   spec.interval: is required and must be positive (value: 0s)
	//   spec.timeout: must not be negative (value: -1s)
	//   spec.driftDetection.ignore[0].paths[0]: a JSON pointer must be empty or start with '/' (value: spec/replicas)
}

// GetReleaseName shortens names longer than Helm's 53 characters the way
// Flux does.
func ExampleShortenName() {
	fmt.Println(release.ShortenName("podinfo"))
	fmt.Println(release.ShortenName("web-a-very-long-release-name-for-the-podinfo-application-xyz"))
	// Output:
	// podinfo
	// web-a-very-long-release-name-for-the-pod-1b137994b1a3
}

// Load Karmada's documents as kubectl applies them: the namespaced
// objects without a namespace get the one of the context, the
// cluster-scoped ones none.
func ExampleWithDefaultNamespace() {
	const stream = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-propagation
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
    clusterTolerations:
      - effect: NoSchedule
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterOverridePolicy
metadata:
  name: registry
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
  overrideRules:
    - overriders:
        imageOverrider:
          - component: Registry
            operator: replace
            value: mirror.example.com
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: nginx-conf
data:
  nginx.conf: "worker_processes 2;"
`
	objs, err := release.Load(strings.NewReader(stream), release.WithDefaultNamespace("web"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("PropagationPolicy %s/%s\n", objs.Policies.Propagation[0].Namespace, objs.Policies.Propagation[0].Name)
	fmt.Printf("ClusterOverridePolicy %q/%s\n", objs.Policies.ClusterOverride[0].Namespace, objs.Policies.ClusterOverride[0].Name)
	fmt.Printf("%s %s/%s\n", objs.Plain[0].GetKind(), objs.Plain[0].GetNamespace(), objs.Plain[0].GetName())

	_, err = release.Load(strings.NewReader(strings.Replace(stream, "name: nginx-propagation", "name: nginx-propagation\n  namespace: shop", 1)), release.WithEnforceNamespace("web"))
	fmt.Println(err)
	// Output:
	// PropagationPolicy web/nginx-propagation
	// ClusterOverridePolicy ""/registry
	// ConfigMap web/nginx-conf
	// document 1 (PropagationPolicy shop/nginx-propagation, line 6): metadata.namespace: does not match the namespace "web" the caller enforces (kubectl's --namespace); remove it or use that namespace (value: shop)
}
