package controllertest_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/controller/controllertest"
	"github.com/helmfleet/helmfleet/release/fleettest"
)

func podinfo() *release.Release {
	rel := &release.Release{}
	if err := yaml.UnmarshalStrict([]byte(`
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec: {chart: podinfo, version: "6.5.0", sourceRef: {kind: HelmRepository, name: podinfo}}
  valuesFrom: [{kind: ConfigMap, name: podinfo-values}]
`), rel); err != nil {
		panic(err)
	}
	return rel
}

// The one-cluster controller, with no API server: a HelmRelease whose
// values come from a ConfigMap is installed, then upgraded when the
// ConfigMap changes.
func ExampleNewEnv() {
	ctx := context.Background()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "podinfo-values"},
		Data:       map[string]string{"values.yaml": "replicaCount: 2\n"},
	}
	env, err := controllertest.NewEnv(controller.Config{}, fleettest.Member{KubeVersion: "v1.31.0"}, podinfo(), cm)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, rel, err := env.Reconcile(ctx, "apps", "podinfo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rel.Status.GetCondition(release.ConditionReady).Reason)

	cm.Data["values.yaml"] = "replicaCount: 3\n"
	if err := env.Client.Update(ctx, cm); err != nil {
		fmt.Println(err)
		return
	}
	_, rel, err = env.Reconcile(ctx, "apps", "podinfo")
	if err != nil {
		fmt.Println(err)
		return
	}
	dep, err := fleettest.Object(ctx, env.Cluster(), "apps/v1", "Deployment", "apps", "podinfo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rel.Status.GetCondition(release.ConditionReady).Reason, dep.Object["spec"].(map[string]any)["replicas"])
	// Output:
	// InstallSucceeded
	// UpgradeSucceeded 3
}

// The fleet controller, with no API server: a PropagationPolicy on the hub
// places podinfo on the prod members only.
func ExampleNewFleetEnv() {
	ctx := context.Background()
	objs, err := controllertest.Objects(`
apiVersion: v1
kind: ConfigMap
metadata: {name: podinfo-values, namespace: apps}
data: {values.yaml: "replicaCount: 2"}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}]
  placement:
    clusterAffinity: {labelSelector: {matchLabels: {env: prod}}}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	env, err := controllertest.NewFleetEnv(controller.FleetConfig{}, []fleettest.Member{
		{Name: "dev-1", Labels: map[string]string{"env": "dev"}},
		{Name: "prod-1", Labels: map[string]string{"env": "prod"}},
	}, append(objs, podinfo())...)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, rel, err := env.Reconcile(ctx, "apps", "podinfo")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rel.Status.GetCondition(release.ConditionReady).Message)
	for _, name := range []string{"dev-1", "prod-1"} {
		revs, err := fleettest.Revisions(ctx, env.Cluster(name), "apps", "podinfo")
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(name, revs)
	}
	// Output:
	// ready on 1/1 members: prod-1
	// dev-1 []
	// prod-1 [6.5.0 deployed]
}
