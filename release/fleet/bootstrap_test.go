package fleet_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
)

// gotkSync is clusters/dev/flux-system/gotk-sync.yaml as `flux
// bootstrap` writes it: the GitRepository of the repository and the
// flux-system Kustomization that points at ./clusters/dev, itself
// included. interval is the Kustomization's.
func gotkSync(interval string) string {
	return `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: 1m0s
  ref: {branch: main}
  secretRef: {name: flux-system}
  url: ssh://git@github.com/example/fleet
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec:
  interval: ` + interval + `
  path: ./clusters/dev
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`
}

// bootstrapTree is a repository in `flux bootstrap`'s layout.
func bootstrapTree(syncInterval string) fstest.MapFS {
	return fstest.MapFS{
		"clusters/dev/flux-system/kustomization.yaml": {Data: []byte("resources: [gotk-components.yaml, gotk-sync.yaml]\n")},
		// A slice of gotk-components.yaml: the controllers' Namespace and
		// one controller.
		"clusters/dev/flux-system/gotk-components.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata: {name: flux-system, labels: {app.kubernetes.io/part-of: flux}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: kustomize-controller, namespace: flux-system}
spec:
  replicas: 1
  selector: {matchLabels: {app: kustomize-controller}}
  template:
    metadata: {labels: {app: kustomize-controller}}
    spec:
      containers: [{name: manager, image: ghcr.io/fluxcd/kustomize-controller:v1.6.0}]
`)},
		"clusters/dev/flux-system/gotk-sync.yaml": {Data: []byte(gotkSync(syncInterval))},
		"clusters/dev/apps.yaml": {Data: []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
`)},
		"apps/kustomization.yaml": {Data: []byte("resources: [config.yaml]\n")},
		"apps/config.yaml":        {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config, namespace: flux-system}\ndata: {greeting: hello}\n")},
	}
}

func bootstrapFleet(t *testing.T, tree fstest.MapFS) (*fleet.Fleet, *memory.Cluster) {
	t.Helper()
	return oneMemberFleet(t, fixture.Charts(), "GitRepository/flux-system/flux-system", tree)
}

// bootstrapInputs places gotk-sync.yaml's Kustomization on every member,
// as the hub's copy of the bootstrap repository.
func bootstrapInputs(t *testing.T) fleet.Inputs {
	t.Helper()
	y := gotkSync("10m0s")
	y = y[strings.Index(y, "---\napiVersion: kustomize"):]
	return decodeInputs(t, y+placeOn("flux-system", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
}

func TestFleetBootstrapRepositoryManagesItself(t *testing.T) {
	ctx := context.Background()
	f, c := bootstrapFleet(t, bootstrapTree("10m0s"))
	plan, err := f.Plan(ctx, bootstrapInputs(t))
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	// The produced copy is the placed one: only the intervals, which no
	// Kustomization's is read, are said, once for the plan.
	require.Len(t, plan.Warnings, 1, "the produced copy is the placed one")
	assert.Equal(t, "spec.interval of 2 Kustomizations (10m0s): not read: a Kustomization is applied when its fleet is planned and applied (release/controller requeues a fleet by its HelmReleases' spec.interval)", plan.Warnings[0].Message)
	var keys []string
	for _, k := range plan.Kustomizations {
		keys = append(keys, k.Key().String())
	}
	assert.Equal(t, []string{"dev-1:Kustomization/flux-system/apps", "dev-1:Kustomization/flux-system/flux-system"}, keys)
	root, ok := plan.Kustomization(kkey("dev-1", "flux-system"))
	require.True(t, ok)
	assert.Equal(t, []fleet.Key{kkey("dev-1", "apps")}, root.Produced, "it does not produce itself")
	var objs []string
	for _, o := range root.Objects {
		objs = append(objs, o.Object.Kind+"/"+o.Object.Name)
	}
	// The controllers are applied as plain objects; the GitRepository,
	// a source the fleet maps itself, is not.
	assert.ElementsMatch(t, []string{"Namespace/flux-system", "Deployment/kustomize-controller"}, objs)

	rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	_, err = c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "flux-system", Name: "app-config"})
	assert.NoError(t, err, "apps ran")
	_, err = c.Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "flux-system", Name: "kustomize-controller"})
	assert.NoError(t, err, "gotk-components applied")
}

func TestFleetBootstrapProducedSpecDiffersWarns(t *testing.T) {
	ctx := context.Background()
	f, _ := bootstrapFleet(t, bootstrapTree("1m0s"))
	plan, err := f.Plan(ctx, bootstrapInputs(t))
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	require.Len(t, plan.Warnings, 2)
	assert.Contains(t, plan.Warnings[1].Message, "spec.interval of 2 Kustomizations")
	assert.Contains(t, plan.Warnings[0].Message, "dev-1:Kustomization/flux-system/flux-system produces Kustomization/flux-system/flux-system")
	assert.Contains(t, plan.Warnings[0].Message, "the placed spec")
	root, ok := plan.Kustomization(kkey("dev-1", "flux-system"))
	require.True(t, ok)
	assert.Equal(t, 10*time.Minute, root.Kustomization.Spec.Interval.Duration, "the placed spec is kept")
}

func TestFleetProducedKustomizationPlacedDirectlyIsTheSameUnit(t *testing.T) {
	ctx := context.Background()
	f, _ := bootstrapFleet(t, bootstrapTree("10m0s"))
	in := bootstrapInputs(t)
	apps := decodeInputs(t, string(bootstrapTree("")["clusters/dev/apps.yaml"].Data)+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	in.Kustomizations = append(in.Kustomizations, apps.Kustomizations...)
	in.Policies.Propagation = append(in.Policies.Propagation, apps.Policies.Propagation...)
	plan, err := f.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors, plan.Table())
	assert.Len(t, plan.Kustomizations, 2)
}
