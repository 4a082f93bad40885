package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
)

// crd is a CustomResourceDefinition of a namespaced kind that keeps any
// fields, as the platform admin installs it on the hub.
func crd(group, version, kind string) string {
	lower := strings.ToLower(kind)
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[4]ss.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[3]s, listKind: %[3]sList, plural: %[4]ss, singular: %[4]s}
  versions:
    - name: %[2]s
      served: true
      storage: true
      subresources: {status: {}}
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}`, group, version, kind, lower)
}

// crds are the kinds the hub serves: the ones the controller watches.
func crds() string {
	docs := make([]string, len(watched))
	for i, gvk := range watched {
		docs[i] = crd(gvk.Group, gvk.Version, gvk.Kind)
	}
	return strings.Join(docs, "\n---\n")
}

// teamYAML is what the platform team applies to the hub.
const teamYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: 1
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector:
        matchExpressions: [{key: env, operator: In, values: [dev, prod]}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-prod, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {env: prod}}}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 3}
`

// applyYAML server-side applies every document of y to c as manager.
func applyYAML(ctx context.Context, c release.ObjectWriter, manager, y string) error {
	for _, doc := range strings.Split(y, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			return err
		}
		if _, err := c.Apply(ctx, u, release.ApplyOptions{FieldManager: manager}); err != nil {
			return err
		}
	}
	return nil
}

// newHub returns a hub serving the CRDs, holding the team's objects y.
func newHub(ctx context.Context, y string) (*memory.Cluster, error) {
	hub := memory.New("hub")
	if err := applyYAML(ctx, hub, "platform-admin", crds()); err != nil {
		return nil, fmt.Errorf("install CRDs on the hub: %w", err)
	}
	if err := applyYAML(ctx, hub, "platform-team", y); err != nil {
		return nil, fmt.Errorf("apply the team's objects to the hub: %w", err)
	}
	return hub, nil
}

// newFleet returns a fleet of members labelled env=<value>, installing
// the embedded test chart at the version each release asks for.
func newFleet(now func() time.Time, envs map[*memory.Cluster]string) (*fleet.Fleet, error) {
	charts := release.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*release.Chart, error) {
		ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
		return &release.Chart{Chart: ch}, err
	})
	rec, err := release.NewReconciler(release.ReconcilerConfig{Charts: charts, Now: now, PollInterval: time.Millisecond})
	if err != nil {
		return nil, err
	}
	var members []release.Member
	for c, env := range envs {
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": env}}})
	}
	return fleet.New(fleet.Config{Reconciler: rec, Members: members})
}

// run is the demo: a hub, two members, four polls, and changes between
// them.
func run(ctx context.Context, out io.Writer, poll time.Duration, now func() time.Time) error {
	hub, err := newHub(ctx, teamYAML)
	if err != nil {
		return err
	}

	dev, prod := memory.New("dev-1"), memory.New("prod-1")
	prod.SetUnreachable(errors.New("dial tcp 10.0.3.1:6443: connect: connection refused"))
	fleet, err := newFleet(now, map[*memory.Cluster]string{dev: "dev", prod: "prod"})
	if err != nil {
		return err
	}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var scriptErr error
	c := &Controller{Hub: hub, Fleet: fleet, Poll: poll, Now: now, Log: out}
	c.AfterPoll = func(n int) {
		switch n {
		case 1:
			fmt.Fprintln(out, "-- prod-1 is reachable again")
			prod.SetUnreachable(nil)
		case 2:
			fmt.Fprintln(out, "-- the team bumps the chart to 6.5.1 on the hub")
			scriptErr = applyYAML(ctx, hub, "platform-team", strings.Replace(teamYAML, `version: "6.5.0"`, `version: "6.5.1"`, 1))
		case 4:
			cancel()
		}
		if scriptErr != nil {
			cancel()
		}
	}
	if err := c.Run(runCtx); err != nil {
		return err
	}
	if scriptErr != nil {
		return scriptErr
	}
	return printHub(ctx, out, hub)
}

// printHub shows the hub's HelmReleases with the status the controller
// wrote and who owns which part.
func printHub(ctx context.Context, out io.Writer, hub *memory.Cluster) error {
	hrs, err := hub.List(ctx, helmReleaseGVK, "", nil)
	if err != nil {
		return err
	}
	for _, hr := range hrs {
		gen := hr.GetGeneration()
		obs, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
		conds, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
		fmt.Fprintf(out, "hub %s/%s: generation %d, observedGeneration %d\n", hr.GetNamespace(), hr.GetName(), gen, obs)
		for _, c := range conds {
			m := c.(map[string]any)
			fmt.Fprintf(out, "  %s=%s %s: %s\n", m["type"], m["status"], m["reason"], m["message"])
		}
		for _, mf := range hr.GetManagedFields() {
			fmt.Fprintf(out, "  managed by %s (%s)\n", mf.Manager, mf.Operation)
		}
	}
	return nil
}
