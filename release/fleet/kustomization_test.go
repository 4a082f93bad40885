package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// repo is a source in Flux's recommended layout: a CRD bundle, an
// infrastructure directory whose HelmRelease is patched per environment,
// and apps.
var repo = fstest.MapFS{
	"infrastructure/crds/kustomization.yaml": {Data: []byte("resources: [crd.yaml]\n")},
	"infrastructure/crds/crd.yaml": {Data: []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)},
	"infrastructure/base/kustomization.yaml": {Data: []byte("resources: [namespace.yaml, release.yaml]\n")},
	"infrastructure/base/namespace.yaml":     {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: monitoring}\n")},
	"infrastructure/base/release.yaml": {Data: []byte(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: addon, namespace: monitoring}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
`)},
	"infrastructure/dev/kustomization.yaml": {Data: []byte(`resources: [../base]
patches:
  - target: {kind: HelmRelease, name: addon}
    patch: |
      - op: replace
        path: /spec/chart/spec/version
        value: 6.6.0-rc.1
`)},
	"clusters/dev/kustomization.yaml": {Data: []byte("resources: [infrastructure.yaml, apps.yaml]\n")},
	"clusters/dev/infrastructure.yaml": {Data: []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: infrastructure, namespace: flux-system}
spec:
  interval: 1h
  path: ./infrastructure/dev
  prune: true
  wait: true
  sourceRef: {kind: GitRepository, name: fleet}
`)},
	"clusters/dev/apps.yaml": {Data: []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  prune: true
  dependsOn: [{name: infrastructure}]
  sourceRef: {kind: GitRepository, name: fleet}
`)},
	"apps/kustomization.yaml":      {Data: []byte("resources: [config.yaml]\n")},
	"apps/config.yaml":             {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config, namespace: apps}\ndata: {greeting: hello}\n")},
	"apps/vars/kustomization.yaml": {Data: []byte("resources: [config.yaml]\n")},
	"apps/vars/config.yaml":        {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-info, namespace: apps}\ndata:\n  cluster: ${cluster_name}\n  greeting: ${greeting:=hello}\n")},
	"apps/eu/kustomization.yaml":   {Data: []byte("resources: [config.yaml]\n")},
	"apps/eu/config.yaml":          {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app-config-eu, namespace: apps}\ndata: {greeting: hallo}\n")},

	// A Widget whose controller reports only status.phase: kstatus
	// takes it as Current whatever the phase; healthCheckExprs judge it.
	"widgets/ready/kustomization.yaml":  {Data: []byte("resources: [../../infrastructure/crds, ../ns.yaml, widget.yaml]\n")},
	"widgets/ready/widget.yaml":         {Data: []byte(widgetYAML("Ready"))},
	"widgets/broken/kustomization.yaml": {Data: []byte("resources: [../../infrastructure/crds, ../ns.yaml, widget.yaml]\n")},
	"widgets/broken/widget.yaml":        {Data: []byte(widgetYAML("Broken"))},
	"widgets/ns.yaml":                   {Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: widgets}\n")},
}

// kustTestFleet is a test fleet that runs Kustomizations.
// kustTestFleet is a fleet of three members (new ones when on is nil),
// dev-1, prod-eu-1 and prod-us-1, labelled env; opts change its Config.
func kustTestFleet(t *testing.T, store fleet.Store, on map[string]*memory.Cluster, opts ...func(*fleet.Config)) *testFleet {
	t.Helper()
	tf := &testFleet{members: map[string]*memory.Cluster{}}
	var members []release.Member
	for _, m := range []struct{ name, env string }{{"dev-1", "dev"}, {"prod-eu-1", "prod"}, {"prod-us-1", "prod"}} {
		c := on[m.name]
		if c == nil {
			// Chart 9.9.9 never gets healthy.
			c = memory.New(m.name, memory.WithHealth(fixture.BrokenVersion("9.9.9")))
		}
		tf.members[m.name] = c
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env}}})
	}
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	cfg := fleet.Config{Members: members, Reconciler: rec, Store: store, KustomizeConfig: &kustomize.ReconcilerConfig{
		Sources:      kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: repo, Revision: "main@sha1:0123abc"}},
		PollInterval: time.Millisecond,
	}, Events: func(e fleet.Event) {
		tf.mu.Lock()
		tf.events = append(tf.events, e)
		tf.mu.Unlock()
	}}
	for _, o := range opts {
		o(&cfg)
	}
	f, err := fleet.New(cfg)
	require.NoError(t, err)
	tf.fleet = f
	return tf
}

// eventIndex is the position of the first event of kind for k, or -1.
func (tf *testFleet) eventIndex(kind fleet.EventKind, k fleet.Key) int {
	tf.mu.Lock()
	defer tf.mu.Unlock()
	for i, e := range tf.events {
		if e.Kind == kind && e.Key == k {
			return i
		}
	}
	return -1
}

// assertAfter asserts that dependent started after dependency was ready.
func (tf *testFleet) assertAfter(t *testing.T, dependency, dependent fleet.Key) {
	t.Helper()
	ready, started := tf.eventIndex(fleet.EventReady, dependency), tf.eventIndex(fleet.EventStarted, dependent)
	require.GreaterOrEqual(t, ready, 0, "%s never ready", dependency)
	require.GreaterOrEqual(t, started, 0, "%s never started", dependent)
	assert.Less(t, ready, started, "%s must start after %s is ready", dependent, dependency)
}

func kustomizationYAML(name, path, extra string) string {
	return fmt.Sprintf(`---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %s, namespace: flux-system}
spec:
  interval: 10m
  path: %s
  prune: true
  sourceRef: {kind: GitRepository, name: fleet}
%s`, name, path, extra)
}

// placeOn is a PropagationPolicy placing one unit of kind by name.
func placeOn(name, apiVersion, kind, namespace, affinity string) string {
	return fmt.Sprintf(`---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %s-%s, namespace: %s}
spec:
  resourceSelectors:
    - {apiVersion: %s, kind: %s, name: %s}
  placement:
    clusterAffinity:
      %s
`, strings.ToLower(kind), name, namespace, apiVersion, kind, name, affinity)
}

const everywhere = "labelSelector: {matchExpressions: [{key: env, operator: Exists}]}"

func hrYAML(name, extra string) string {
	return fmt.Sprintf(`---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: %s, namespace: apps}
spec:
  interval: 10m
  releaseName: %s
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
%s`, name, name, extra)
}

func kkey(cluster, name string) fleet.Key {
	return fleet.Key{Cluster: cluster, Namespace: "flux-system", Name: name, Kind: fleet.KindKustomization}
}

func TestFleetKustomizationDependencyOrderAcrossKinds(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("infra-crds", "./infrastructure/crds", "")+
		placeOn("infra-crds", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere)+
		hrYAML("podinfo", "  dependsOn: [{kind: Kustomization, name: infra-crds, namespace: flux-system}]\n")+
		placeOn("podinfo", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", everywhere)+
		hrYAML("database", "")+
		placeOn("database", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [prod-eu-1]")+
		kustomizationYAML("apps", "./apps", "  dependsOn: [{kind: HelmRelease, name: database, namespace: apps}]\n")+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [prod-us-1]"))

	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Len(t, plan.Kustomizations, 4, "infra-crds on each member, apps on prod-us-1")

	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	for _, m := range []string{"dev-1", "prod-eu-1", "prod-us-1"} {
		// Same member: the HelmRelease after the CRD Kustomization.
		tf.assertAfter(t, kkey(m, "infra-crds"), fleet.Key{Cluster: m, Namespace: "apps", Name: "podinfo"})
		_, err := tf.members[m].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, Name: "widgets.example.com"})
		assert.NoError(t, err, "the CRD is on %s", m)
	}
	// Across members: the Kustomization on prod-us-1 after the
	// HelmRelease on prod-eu-1.
	tf.assertAfter(t, fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "database"}, kkey("prod-us-1", "apps"))
	st, ok := tf.fleet.KustomizationStatus(kkey("prod-us-1", "apps"))
	require.True(t, ok)
	assert.True(t, st.IsConditionTrue(release.ConditionReady))
	assert.Contains(t, plan.Mermaid(), "prod-us-1:Kustomization/flux-system/apps")
	assert.Contains(t, rep.Table(), "Kustomization/flux-system/apps")
}

func TestFleetKustomizationCycleAcrossKinds(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("infra", "./apps", "  dependsOn: [{kind: HelmRelease, name: podinfo, namespace: apps}]\n")+
		placeOn("infra", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]")+
		hrYAML("podinfo", "  dependsOn: [{kind: Kustomization, name: infra, namespace: flux-system}]\n")+
		placeOn("podinfo", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [dev-1]"))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Len(t, plan.PlacementErrors(), 1)
	msg := plan.PlacementErrors()[0].Error()
	assert.Contains(t, msg, "cycle")
	assert.Contains(t, msg, "dev-1:Kustomization/flux-system/infra")
	assert.Contains(t, msg, "dev-1:apps/podinfo")
	var cycle *depgraph.CycleError[fleet.Key]
	assert.ErrorAs(t, plan.PlacementErrors()[0], &cycle)

	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cycle")
	assert.Empty(t, tf.members["dev-1"].Summary(), "nothing applied")
}

func TestFleetKustomizationProducesReleases(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("infrastructure", "./infrastructure/dev", "  wait: true\n  dependsOn: [{kind: HelmRelease, name: database, namespace: apps}]\n")+
		placeOn("infrastructure", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]")+
		hrYAML("database", "")+
		placeOn("database", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [prod-eu-1]")+
		hrYAML("frontend", "  dependsOn: [{kind: Kustomization, name: infrastructure, namespace: flux-system}]\n")+
		placeOn("frontend", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [dev-1]"))

	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	addon := fleet.Key{Cluster: "dev-1", Namespace: "monitoring", Name: "addon"}
	kp, ok := plan.Kustomization(kkey("dev-1", "infrastructure"))
	require.True(t, ok)
	assert.Equal(t, []fleet.Key{addon}, kp.Produced)
	assert.Equal(t, []string{"Namespace//monitoring create"}, kindNames(kp.Objects), "the HelmRelease is the fleet's unit, not one of its objects")
	item, ok := plan.Item(addon)
	require.True(t, ok, "the produced HelmRelease is planned like a decoded one")
	assert.Equal(t, "6.6.0-rc.1", item.Version, "with the dev overlay's patch")
	assert.Equal(t, reconcile.ActionInstall, item.Action)
	assert.Contains(t, plan.Table(), "Kustomization/flux-system/infrastructure")
	assert.Contains(t, plan.Table(), "produces monitoring/addon")
	data, err := json.Marshal(plan)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"kind":"Kustomization","namespace":"flux-system","name":"infrastructure","state":"Absent","action":"apply"`)
	assert.Contains(t, string(data), `"produced":["monitoring/addon"]`)

	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	database := fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "database"}
	tf.assertAfter(t, database, kkey("dev-1", "infrastructure"))
	tf.assertAfter(t, database, addon)
	tf.assertAfter(t, kkey("dev-1", "infrastructure"), addon)
	// wait: its dependents wait for what it produces too.
	tf.assertAfter(t, addon, fleet.Key{Cluster: "dev-1", Namespace: "apps", Name: "frontend"})
	assert.Equal(t, []string{"addon 6.6.0-rc.1 deployed"}, helmListIn(t, tf.members["dev-1"], "monitoring"))
}

func TestFleetKustomizationPlacementAndOverrides(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("apps", "./apps", "")+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "labelSelector: {matchLabels: {env: prod}}")+`---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: apps-eu, namespace: flux-system}
spec:
  resourceSelectors:
    - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization, name: apps}
  overrideRules:
    - targetCluster: {clusterNames: [prod-eu-1]}
      overriders:
        plaintext:
          - {path: /spec/path, operator: replace, value: ./apps/eu}
`)
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	var placed []string
	for _, kp := range plan.Kustomizations {
		placed = append(placed, kp.Cluster+" "+kp.Kustomization.Spec.Path)
	}
	assert.Equal(t, []string{"prod-eu-1 ./apps/eu", "prod-us-1 ./apps"}, placed)
	assert.Contains(t, plan.Diff(), "### prod-eu-1 Kustomization/flux-system/apps (apply)\n--- /dev/null\n+++ v1 ConfigMap apps/app-config-eu\n")
	assert.Contains(t, plan.Diff(), "+  greeting: hallo\n")

	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"app-config-eu"}, configMaps(t, tf.members["prod-eu-1"]))
	assert.Equal(t, []string{"app-config"}, configMaps(t, tf.members["prod-us-1"]))
	assert.Empty(t, configMaps(t, tf.members["dev-1"]))
}

func TestFleetKustomizationGarbageCollection(t *testing.T) {
	ctx := context.Background()
	hub := memory.New("hub")
	store, err := fleet.NewObjectStore(hub, fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "test"})
	require.NoError(t, err)
	tf := kustTestFleet(t, store, nil)
	in := decodeInputs(t, kustomizationYAML("infrastructure", "./infrastructure/dev", "")+
		placeOn("infrastructure", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]")+
		kustomizationYAML("apps", "./apps", "")+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]"))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"app-config"}, configMaps(t, tf.members["dev-1"]))
	require.Equal(t, []string{"addon 6.6.0-rc.1 deployed"}, helmListIn(t, tf.members["dev-1"], "monitoring"))

	// A new process finds both in the store, and garbage-collects
	// what the inputs no longer have: infrastructure's release before
	// infrastructure itself, whose prune deletes its namespace.
	tf2 := kustTestFleet(t, store, tf.members)
	in.Kustomizations = in.Kustomizations[1:] // apps stays
	require.Equal(t, "apps", in.Kustomizations[0].Name)
	plan, err = tf2.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	kp, ok := plan.Kustomization(kkey("dev-1", "infrastructure"))
	require.True(t, ok)
	assert.Equal(t, fleet.ActionDelete, kp.Action)
	assert.Contains(t, kp.Reason, "removed from the inputs")
	addon := fleet.Key{Cluster: "dev-1", Namespace: "monitoring", Name: "addon"}
	item, ok := plan.Item(addon)
	require.True(t, ok)
	assert.Equal(t, reconcile.ActionUninstall, item.Action)
	apps, _ := plan.Kustomization(kkey("dev-1", "apps"))
	assert.Equal(t, fleet.ActionApply, apps.Action)
	assert.Equal(t, reconcile.StateInSync, apps.State)
	// In sync, the table says there is nothing to do, as for a release.
	assert.Regexp(t, `(?m)^dev-1\s+Kustomization/flux-system/apps\s+InSync\s+none\s`, plan.Table())
	assert.Regexp(t, `(?m)^dev-1\s+Kustomization/flux-system/infrastructure\s+Removed\s+delete\s`, plan.Table())

	_, err = tf2.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Empty(t, helmListIn(t, tf.members["dev-1"], "monitoring"))
	_, err = tf.members["dev-1"].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "monitoring"})
	assert.ErrorIs(t, err, release.ErrNotFound, "infrastructure's prune deleted its namespace")
	assert.Equal(t, []string{"app-config"}, configMaps(t, tf.members["dev-1"]), "apps is kept")
	un, del := tf2.eventIndex(fleet.EventUninstalled, addon), tf2.eventIndex(fleet.EventUninstalled, kkey("dev-1", "infrastructure"))
	require.GreaterOrEqual(t, un, 0)
	assert.Less(t, un, del, "the produced release goes before its Kustomization")
	entries, err := store.Load(ctx)
	require.NoError(t, err)
	var keys []string
	for _, e := range entries {
		keys = append(keys, e.Key.String())
	}
	assert.Equal(t, []string{"dev-1:Kustomization/flux-system/apps"}, keys)
}

func TestFleetKustomizationWaves(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("apps", "./apps", "")+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	var gated []string
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves: []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod", Selector: "env=prod"}},
		Gate: func(_ context.Context, w fleet.WaveReport) error {
			gated = append(gated, fmt.Sprintf("%s %d", w.Name, w.Succeeded))
			if w.Name == "dev" {
				return errors.New("hold")
			}
			return nil
		},
	}})
	require.Error(t, err)
	assert.Equal(t, []string{"dev 1"}, gated, "the gate sees the dev wave's Kustomization")
	byKey := map[string]string{}
	for _, it := range rep.Items {
		byKey[it.Key.String()] = it.Wave + " " + it.State.String()
	}
	assert.Equal(t, map[string]string{
		"dev-1:Kustomization/flux-system/apps":     "dev succeeded",
		"prod-eu-1:Kustomization/flux-system/apps": " not-started",
		"prod-us-1:Kustomization/flux-system/apps": " not-started",
	}, byKey)
	assert.Empty(t, configMaps(t, tf.members["prod-eu-1"]), "the gate held prod")
}

func TestFleetKustomizationNeedsKustomizer(t *testing.T) {
	tf := newTestFleet(t, nil)
	in := decodeInputs(t, kustomizationYAML("apps", "./apps", ""))
	_, err := tf.fleet.Plan(context.Background(), in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kustomizations[0] flux-system/apps")
}

func kindNames(objs []kustomize.ObjectPlan) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Object.Kind+"/"+o.Object.Namespace+"/"+o.Object.Name+" "+o.Action)
	}
	return out
}

func configMaps(t *testing.T, c *memory.Cluster) []string {
	t.Helper()
	objs, err := c.List(context.Background(), schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "apps", nil)
	require.NoError(t, err)
	var out []string
	for _, o := range objs {
		out = append(out, o.GetName())
	}
	sort.Strings(out)
	return out
}

// helmListIn lists the Helm releases of namespace on c.
func helmListIn(t *testing.T, c *memory.Cluster, namespace string) []string {
	t.Helper()
	cfg, err := c.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: namespace, Namespace: namespace})
	require.NoError(t, err)
	l := action.NewList(cfg)
	l.All = true
	rels, err := l.Run()
	require.NoError(t, err)
	var out []string
	for _, r := range rels {
		out = append(out, r.Name+" "+r.Chart.Metadata.Version+" "+r.Info.Status.String())
	}
	return out
}

// A Kustomization that produces Kustomizations (Flux's clusters/<env>
// layout) runs them as units on its member, in their dependency order.
func TestFleetKustomizationProducesKustomizations(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("flux-system", "./clusters/dev", "")+
		placeOn("flux-system", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]"))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	top, _ := plan.Kustomization(kkey("dev-1", "flux-system"))
	require.NotNil(t, top)
	assert.Equal(t, []fleet.Key{kkey("dev-1", "apps"), kkey("dev-1", "infrastructure")}, top.Produced)
	assert.Empty(t, top.Objects)
	infra, ok := plan.Kustomization(kkey("dev-1", "infrastructure"))
	require.True(t, ok)
	addon := fleet.Key{Cluster: "dev-1", Namespace: "monitoring", Name: "addon"}
	assert.Equal(t, []fleet.Key{addon}, infra.Produced)

	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	tf.assertAfter(t, kkey("dev-1", "flux-system"), kkey("dev-1", "infrastructure"))
	tf.assertAfter(t, kkey("dev-1", "infrastructure"), addon)
	// apps depends on infrastructure, which waits: on its release too.
	tf.assertAfter(t, addon, kkey("dev-1", "apps"))
	assert.Equal(t, []string{"app-config"}, configMaps(t, tf.members["dev-1"]))

	// Without the top Kustomization (prune: true), everything it
	// produced goes, children before parents.
	plan, err = tf.fleet.Plan(ctx, fleet.Inputs{})
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	var actions []string
	for _, kp := range plan.Kustomizations {
		actions = append(actions, kp.Key().Name+" "+string(kp.Action))
	}
	assert.Equal(t, []string{"apps delete", "flux-system delete", "infrastructure delete"}, actions)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Empty(t, configMaps(t, tf.members["dev-1"]))
	assert.Empty(t, helmListIn(t, tf.members["dev-1"], "monitoring"))
	assert.Less(t, tf.eventIndex(fleet.EventUninstalled, addon), tf.eventIndex(fleet.EventUninstalled, kkey("dev-1", "infrastructure")))
	assert.Less(t, tf.eventIndex(fleet.EventUninstalled, kkey("dev-1", "infrastructure")), tf.eventIndex(fleet.EventUninstalled, kkey("dev-1", "flux-system")))
}

// A shared Config.Kustomize built without kustomize.FleetUnit would
// apply the HelmRelease as an object beside the fleet's own release: the
// plan refuses it, naming the object.
func TestFleetKustomizeMustExcludeUnits(t *testing.T) {
	ctx := context.Background()
	kr, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{Sources: kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: repo}}})
	require.NoError(t, err)
	c := memory.New("dev-1")
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts()})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{Members: []release.Member{{Cluster: c}}, Reconciler: rec, Kustomize: kr})
	require.NoError(t, err)
	plan, err := f.Plan(ctx, decodeInputs(t, kustomizationYAML("infrastructure", "./infrastructure/dev", "")+
		placeOn("infrastructure", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]")))
	require.NoError(t, err)
	require.Len(t, plan.Errors, 1)
	var unit *fleet.UnitAppliedError
	require.ErrorAs(t, plan.Errors[0], &unit)
	assert.Equal(t, "HelmRelease", unit.Object.Kind)
	assert.Contains(t, plan.Errors[0].Error(), "member dev-1: kustomization flux-system/infrastructure")

	_, err = fleet.New(fleet.Config{Members: []release.Member{{Cluster: c}}, Reconciler: rec, Kustomize: kr, KustomizeConfig: &kustomize.ReconcilerConfig{}})
	assert.ErrorContains(t, err, "set Kustomize or KustomizeConfig, not both")
}

// With KustomizeConfig.Variables nil, each member's Kustomization reads
// postBuild.substituteFrom on that member, as a Flux-layout repository's per-cluster
// cluster-vars ConfigMaps are read by the Flux of each cluster.
func TestFleetKustomizationSubstitutesPerMember(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	for name, c := range tf.members {
		vars := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "cluster-vars", "namespace": "flux-system"},
			"data":     map[string]any{"cluster_name": name}}}
		_, err := c.Apply(ctx, vars, release.ApplyOptions{FieldManager: "test"})
		require.NoError(t, err)
	}
	in := decodeInputs(t, kustomizationYAML("apps", "./apps/vars", "  postBuild:\n    substituteFrom: [{kind: ConfigMap, name: cluster-vars}]\n")+
		placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	for name, c := range tf.members {
		cm, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "cluster-info"})
		require.NoError(t, err)
		data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
		assert.Equal(t, map[string]string{"cluster": name, "greeting": "hello"}, data, name)
	}
}

// A Kustomization with wait, or with a health check naming a release it
// produces, is not ready while that release fails, as Flux's health
// check of the HelmReleases it applied makes it: it fails, its status is
// Ready and Healthy False, reason HealthCheckFailed, naming the release,
// and its dependent is skipped. Without either it is ready and its
// dependent goes on.
func TestFleetKustomizationWaitIncludesProducedReleases(t *testing.T) {
	ctx := context.Background()
	broken := `---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: broken-addon, namespace: monitoring}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: addon}
  overrideRules:
    - overriders:
        plaintext:
          - {path: /spec/chart/spec/version, operator: replace, value: 9.9.9}
          - {path: /spec/install/timeout, operator: replace, value: 20ms}
`
	for _, tc := range []struct {
		name, spec string
		waits      bool
	}{
		{"wait", "  wait: true\n", true},
		{"healthChecks", "  timeout: 30s\n  healthChecks: [{apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: addon, namespace: monitoring}]\n", true},
		{"neither", "  wait: false\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tf := kustTestFleet(t, nil, nil)
			in := decodeInputs(t, kustomizationYAML("infrastructure", "./infrastructure/dev", tc.spec)+
				placeOn("infrastructure", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]")+
				hrYAML("frontend", "  dependsOn: [{kind: Kustomization, name: infrastructure, namespace: flux-system}]\n")+
				placeOn("frontend", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [dev-1]")+broken)
			plan, err := tf.fleet.Plan(ctx, in)
			require.NoError(t, err)
			addon := fleet.Key{Cluster: "dev-1", Namespace: "monitoring", Name: "addon"}
			item, ok := plan.Item(addon)
			require.True(t, ok)
			require.Equal(t, "9.9.9", item.Version, "the override gives the produced release a chart that never gets healthy")
			rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
			require.Error(t, err)
			states := map[string]string{}
			for _, it := range rep.Items {
				states[it.Key.String()] = it.State.String()
			}
			kust, frontend, ready := "succeeded", "succeeded", "True ReconciliationSucceeded"
			if tc.waits {
				kust, frontend, ready = "failed", "skipped", "False HealthCheckFailed"
			}
			assert.Equal(t, map[string]string{
				"dev-1:Kustomization/flux-system/infrastructure": kust,
				"dev-1:monitoring/addon":                         "failed",
				"dev-1:apps/frontend":                            frontend,
			}, states)
			st, ok := tf.fleet.KustomizationStatus(kkey("dev-1", "infrastructure"))
			require.True(t, ok)
			c := st.GetCondition(release.ConditionReady)
			require.NotNil(t, c)
			assert.Equal(t, ready, string(c.Status)+" "+c.Reason)
			if tc.waits {
				assert.Contains(t, c.Message, "health check failed: HelmRelease monitoring/addon: ")
				assert.False(t, st.IsConditionTrue(release.ConditionHealthy))
				assert.Equal(t, 2, rep.Waves[0].Failed, "the wave counts the Kustomization as failed, beside addon")
				assert.Contains(t, err.Error(), "dev-1:Kustomization/flux-system/infrastructure: ")
			}
		})
	}
}

// A Kustomization that fails to build leaves what it produced before in
// place: its failure is no reason to uninstall its releases.
func TestFleetKustomizationBuildFailureKeepsProduced(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, kustomizationYAML("infrastructure", "./infrastructure/dev", "")+
		placeOn("infrastructure", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", "clusterNames: [dev-1]"))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)

	in.Kustomizations[0].Spec.Path = "./infrastructure/missing"
	plan, err = tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	kp, ok := plan.Kustomization(kkey("dev-1", "infrastructure"))
	require.True(t, ok)
	require.Error(t, kp.Err)
	assert.Contains(t, kp.Err.Error(), "member dev-1: kustomization flux-system/infrastructure")
	item, ok := plan.Item(fleet.Key{Cluster: "dev-1", Namespace: "monitoring", Name: "addon"})
	require.True(t, ok)
	assert.Equal(t, reconcile.ActionNone, item.Action)
	assert.Contains(t, item.Reason, "failed, so what it produces is unknown")
	_, err = tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	assert.Equal(t, []string{"addon 6.6.0-rc.1 deployed"}, helmListIn(t, tf.members["dev-1"], "monitoring"))
}
