package memory_test

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
)

// Helm's own install action runs against an in-memory cluster; a
// scripted health makes the Deployment never become ready.
func ExampleCluster() {
	cluster := memory.New("dev-1", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" {
			return memory.Health{Message: "0/1 replicas available"}
		}
		return memory.Health{Ready: true}
	}))
	cfg, err := cluster.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	if err != nil {
		fmt.Println(err)
		return
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "web", "apps"
	install.Wait, install.Timeout = true, 20*time.Millisecond
	rel, err := install.RunWithContext(context.Background(), fleettest.Podinfo(""), nil)
	fmt.Println(rel.Info.Status)
	fmt.Println(err)
	for _, line := range cluster.Summary() {
		fmt.Println(line)
	}
	// Output:
	// failed
	// timed out waiting for the condition: not ready: Deployment apps/web-podinfo: 0/1 replicas available
	// ConfigMap apps/web-podinfo
	// Deployment apps/web-podinfo
	// Ingress apps/web-podinfo
	// Secret apps/web-podinfo
	// Service apps/web-podinfo
}

// A test fleet shares one Schemas: the kinds' schemas, field managers and
// the managed fields of objects already created are worked out once for
// all its clusters.
func ExampleWithSchemas() {
	shared := memory.NewSchemas()
	fleet := []*memory.Cluster{
		memory.New("prod-eu", memory.WithSchemas(shared)),
		memory.New("prod-us", memory.WithSchemas(shared)),
	}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "namespace": "apps"},
		"data":     map[string]any{"region": "eu"},
	}}
	for _, c := range fleet {
		got, err := c.Apply(context.Background(), cm, release.ApplyOptions{FieldManager: "platform"})
		if err != nil {
			fmt.Println(err)
			return
		}
		mf := got.GetManagedFields()[0]
		fmt.Println(c.Name(), got.GetUID(), mf.Manager, string(mf.FieldsV1.Raw))
	}
	// Output:
	// prod-eu prod-eu-000001 platform {"f:data":{"f:region":{}}}
	// prod-us prod-us-000001 platform {"f:data":{"f:region":{}}}
}

// A cluster says which Kubernetes version it runs and which API versions
// it serves, as discovery on a real cluster does: a CRD's API appears once
// the CRD is stored.
func ExampleCluster_Capabilities() {
	ctx := context.Background()
	cluster := memory.New("dev-1", memory.WithKubeVersion("v1.33.1"))
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "servicemonitors.monitoring.coreos.com"},
		"spec": map[string]any{
			"group": "monitoring.coreos.com", "scope": "Namespaced",
			"names":    map[string]any{"kind": "ServiceMonitor", "plural": "servicemonitors"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true}},
		},
	}}
	for _, step := range []string{"before", "after"} {
		caps, err := cluster.Capabilities(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(step, caps.KubeVersion.Version, caps.APIVersions.Has("apps/v1/Deployment"), caps.APIVersions.Has("monitoring.coreos.com/v1/ServiceMonitor"))
		if _, err := cluster.Apply(ctx, crd, release.ApplyOptions{FieldManager: "platform"}); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// before v1.33.1 true false
	// after v1.33.1 true true
}
