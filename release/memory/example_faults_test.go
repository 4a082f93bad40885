package memory_test

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

// A Fault fails the first apply of a Deployment on one member; the call
// changes nothing, and the retry goes through.
func ExampleCluster_SetFaults() {
	ctx := context.Background()
	cluster := memory.New("prod-eu-1")
	isDeployment := func(ref release.ObjectRef) bool { return ref.Kind == "Deployment" }
	cluster.SetFaults(memory.FailNth(memory.OpApply, isDeployment, 1, errors.New("boom")))

	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "podinfo", "namespace": "apps"},
		"spec":     map[string]any{"replicas": int64(2)},
	}}
	opts := release.ApplyOptions{FieldManager: "platform"}
	_, err := cluster.Apply(ctx, dep, opts)
	fmt.Println(err)
	var fe *memory.FaultError
	fmt.Println(errors.As(err, &fe), fe.Op, len(cluster.Objects()))

	_, err = cluster.Apply(ctx, dep, opts)
	fmt.Println(err, cluster.Summary())
	// Output:
	// cluster prod-eu-1: apply apps/v1 Deployment apps/podinfo: injected: boom
	// true apply 0
	// <nil> [Deployment apps/podinfo]
}
