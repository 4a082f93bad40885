package memory_test

import (
	"context"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
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
	rel, err := install.RunWithContext(context.Background(), testchart.MustLoad(""), nil)
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
