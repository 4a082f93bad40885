// Command quickstart spreads one HelmRelease over an in-memory fleet of
// three clusters, the way a platform team would with real ones:
//
//   - decode a Flux HelmRelease and Karmada policies from one YAML stream;
//   - plan: what every cluster would get (each its own values, through a
//     values overrider), computed without writing anything;
//   - apply in two waves, dev first, then prod behind a bake time;
//   - upgrade the chart, with the plan's diff of what changes;
//   - notice that someone scaled a Deployment by hand, and correct it.
//
// No cluster, network or flags needed:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// fleetYAML is what a platform team keeps in Git: a Flux HelmRelease and
// the Karmada policies that place it and give each cluster its values.
const fleetYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: podinfo
  namespace: apps
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  driftDetection:
    mode: enabled
  values:
    replicaCount: 2
    ui:
      message: "hello from helmfleet"
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
        matchExpressions:
          - {key: env, operator: In, values: [dev, prod]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-per-cluster, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {clusterNames: [dev-1]}
      overriders:
        valuesOverrider:
          - merge: {ui: {color: "#e0a030"}, ingress: {host: podinfo.dev.example.com}}
    - targetCluster: {clusterNames: [prod-eu-1]}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 4, ingress: {host: podinfo.eu.example.com}}
    - targetCluster: {clusterNames: [prod-us-1]}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 6, ingress: {host: podinfo.us.example.com}}
`

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	objs, err := release.Decode(strings.NewReader(fleetYAML))
	if err != nil {
		return err
	}

	// Three in-memory member clusters with the facts policies decide on,
	// sharing what they know of kinds.
	schemas := memory.NewSchemas()
	clusters := map[string]*memory.Cluster{}
	var members []release.Member
	for _, m := range []struct{ name, env, region string }{
		{"dev-1", "dev", "eu-west"}, {"prod-eu-1", "prod", "eu-west"}, {"prod-us-1", "prod", "us-east"},
	} {
		c := memory.New(m.name, memory.WithSchemas(schemas))
		clusters[m.name] = c
		members = append(members, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env}, Region: m.region}})
	}

	// The chart is release/fleettest's small podinfo chart; a real
	// program resolves charts with package source.
	charts := fleettest.NewCharts(fleettest.Podinfo("6.5.0"), fleettest.Podinfo("6.5.1"))
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	fl, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
	if err != nil {
		return err
	}
	rollout := &fleet.Rollout{
		Waves:    []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod", Selector: "env=prod"}},
		BakeTime: 50 * time.Millisecond,
	}

	step := func(title string) error {
		plan, err := fl.Plan(ctx, fleet.InputsOf(objs))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "== %s\n-- plan\n%s", title, plan.Table())
		if it, ok := plan.Item(fleet.Key{Cluster: "dev-1", Namespace: "apps", Name: "podinfo"}); ok && it.State != reconcile.StateAbsent && it.Diff != "" {
			fmt.Fprintf(out, "-- diff on dev-1 (Deployment)\n%s", deploymentDiff(it.Diff))
		}
		rep, err := fl.Apply(ctx, plan, fleet.ApplyOptions{Rollout: rollout})
		fmt.Fprintf(out, "-- apply, dev then prod\n%s", rep.Table())
		return err
	}

	if err := step("install: each cluster its own values"); err != nil {
		return err
	}
	objs.Releases[0].Spec.Chart.Spec.Version = "6.5.1"
	if err := step("upgrade to chart 6.5.1"); err != nil {
		return err
	}

	// Someone scales prod-eu-1 by hand; the fleet notices and corrects it.
	c := clusters["prod-eu-1"]
	ref := release.ObjectRef{Namespace: "apps", Name: "podinfo"}
	ref.Group, ref.Version, ref.Kind = "apps", "v1", "Deployment"
	dep, err := c.Get(ctx, ref)
	if err != nil {
		return err
	}
	delete(dep.Object, "status")
	dep.Object["spec"].(map[string]any)["replicas"] = int64(1)
	if _, err := c.Update(ctx, dep, "kubectl-scale"); err != nil {
		return err
	}
	drift, err := fl.Drift(ctx, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== drift after a manual scale on prod-eu-1\n%s", drift)

	fmt.Fprintln(out, "== what each cluster runs")
	for _, name := range []string{"dev-1", "prod-eu-1", "prod-us-1"} {
		dep, err := clusters[name].Get(ctx, ref)
		if err != nil {
			return err
		}
		spec := dep.Object["spec"].(map[string]any)
		fmt.Fprintf(out, "%s: Deployment apps/podinfo replicas=%v labels[helm.sh/chart]=%s\n", name, spec["replicas"], dep.GetLabels()["helm.sh/chart"])
		for _, line := range clusters[name].Summary() {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	return nil
}

// deploymentDiff keeps the Deployment's part of a plan diff.
func deploymentDiff(diff string) string {
	var sb strings.Builder
	keep := false
	for _, line := range strings.SplitAfter(diff, "\n") {
		if strings.HasPrefix(line, "--- ") {
			keep = strings.Contains(line, "Deployment/")
		}
		if keep {
			sb.WriteString(line)
		}
	}
	return sb.String()
}
