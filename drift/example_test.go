package drift_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/drift"
)

func deployment(replicas int64, image string, extra map[string]any) *unstructured.Unstructured {
	container := map[string]any{"name": "web", "image": image}
	for k, v := range extra {
		container[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{container}}},
		},
	}}
}

// Detect a drifted image while ignoring replicas as the Flux HelmRelease
// example does, then plan the correction.
func ExampleDetect() {
	desired := []*unstructured.Unstructured{
		deployment(2, "nginx:1.27", nil),
		{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "web-config", "namespace": "shop"},
			"data":     map[string]any{"mode": "production"}}},
	}
	live := []*unstructured.Unstructured{
		// Scaled by an autoscaler, image edited by hand, a server default added.
		deployment(5, "nginx:1.25", map[string]any{"imagePullPolicy": "IfNotPresent"}),
	}
	cfg, err := drift.Compile([]drift.IgnoreRule{
		{Paths: []string{"/spec/replicas"}, Target: &drift.Selector{Kind: "Deployment"}},
	}, drift.Options{Mode: drift.ModeEnabled})
	if err != nil {
		panic(err)
	}
	report, err := drift.Detect(desired, live, cfg)
	if err != nil {
		panic(err)
	}
	fmt.Print(report)
	for _, c := range report.Corrections() {
		fmt.Println(c)
	}
	// Output:
	// drift (mode enabled): 1 missing, 1 modified, 0 unchanged, 0 excluded, 0 extra
	// ConfigMap/shop/web-config: missing
	// Deployment.apps/shop/web: modified
	//   spec.template.spec.containers[name=web].image: "nginx:1.25" -> "nginx:1.27"
	// rules:
	//   ignore[0] ["/spec/replicas"] on kind=Deployment: Deployment.apps/shop/web
	// create ConfigMap/shop/web-config
	// patch Deployment.apps/shop/web: replace /spec/template/spec/containers/0/image "nginx:1.27"
}

// Secret values never reach a report, while the correction keeps them.
func ExampleReport_Corrections_secret() {
	secret := func(password string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "db", "namespace": "shop"},
			"data":     map[string]any{"password": password},
		}}
	}
	cfg, _ := drift.Compile(nil, drift.Options{Mode: drift.ModeEnabled})
	report, _ := drift.Detect(
		[]*unstructured.Unstructured{secret("cmVhbA==")},
		[]*unstructured.Unstructured{secret("ZWRpdGVk")}, cfg)
	fmt.Print(report)
	c := report.Corrections()[0]
	fmt.Println(c)
	fmt.Println(c.Patch[0].Value)
	// Output:
	// drift (mode enabled): 0 missing, 1 modified, 0 unchanged, 0 excluded, 0 extra
	// Secret/shop/db: modified
	//   data.password: "*** (before)" -> "*** (after)"
	// patch Secret/shop/db: replace /data/password "***"
	// cmVhbA==
}
