package kustomize_test

import (
	"context"
	"fmt"
	"strings"
	"testing/fstest"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

// A Flux Kustomization, decoded from YAML, reconciled on an in-memory
// cluster: its variables substituted, its objects applied and recorded in
// its inventory; then one object leaves the tree and is pruned.
func ExampleReconciler() {
	ctx := context.Background()
	objs, err := release.Load(strings.NewReader(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps/dev
  prune: true
  wait: true
  targetNamespace: web
  sourceRef:
    kind: GitRepository
    name: fleet
  postBuild:
    substitute:
      cluster_env: dev
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	k := objs.Kustomizations[0]
	tree := fstest.MapFS{
		"apps/dev/kustomization.yaml": {Data: []byte("resources: [ns.yaml, settings.yaml, legacy.yaml]\n")},
		"apps/dev/ns.yaml":            {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n")},
		"apps/dev/settings.yaml":      {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  env: ${cluster_env}\n  level: ${log_level:=info}\n")},
		"apps/dev/legacy.yaml":        {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: legacy\n")},
	}
	r, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{
		Sources: kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: tree, Revision: "main@sha1:4f2a"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cluster := memory.New("dev")
	if _, err := r.Reconcile(ctx, cluster, k); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(k.Status.GetCondition(release.ConditionReady).Message)
	for _, e := range k.Status.Inventory.Entries {
		fmt.Println("inventory:", e.ID, e.Version)
	}
	settings, _ := cluster.Get(ctx, release.ObjectRef{GroupVersionKind: cmGVK, Namespace: "web", Name: "settings"})
	fmt.Println("settings:", settings.Object["data"])

	tree["apps/dev/kustomization.yaml"] = &fstest.MapFile{Data: []byte("resources: [ns.yaml, settings.yaml]\n")}
	res, err := r.Reconcile(ctx, cluster, k)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pruned:", res.Pruned)
	// Output:
	// Applied revision: main@sha1:4f2a
	// inventory: _web__Namespace v1
	// inventory: web_legacy__ConfigMap v1
	// inventory: web_settings__ConfigMap v1
	// settings: map[env:dev level:info]
	// pruned: [v1 ConfigMap web/legacy]
}
