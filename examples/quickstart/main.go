// Command quickstart runs one HelmRelease on an in-memory fleet of three
// clusters: it decodes the release from YAML, installs it on every cluster
// with values of its own, upgrades it to a new chart version, and prints
// what each cluster runs and holds. No cluster, network or flags needed:
//
//	go run ./examples/quickstart
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/values"
)

// releaseYAML is a Flux HelmRelease as a platform team writes it.
const releaseYAML = `
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
      sourceRef:
        kind: HelmRepository
        name: podinfo
  install:
    remediation:
      retries: 3
  values:
    replicaCount: 2
    ui:
      message: "hello from helmfleet"
`

// member is one cluster of the fleet and the values only it gets.
type member struct {
	cluster *memory.Cluster
	values  map[string]any
}

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer) error {
	objs, err := release.Decode(strings.NewReader(releaseYAML))
	if err != nil {
		return err
	}
	base := objs.Releases[0]

	fleet := []member{
		{memory.New("dev-1"), map[string]any{"ui": map[string]any{"color": "#e0a030"}, "ingress": map[string]any{"host": "podinfo.dev.example.com"}}},
		{memory.New("prod-eu-1"), map[string]any{"replicaCount": 4, "ingress": map[string]any{"host": "podinfo.eu.example.com"}}},
		{memory.New("prod-us-1"), map[string]any{"replicaCount": 6, "ingress": map[string]any{"host": "podinfo.us.example.com"}}},
	}

	// The chart comes from the embedded test chart at the version the
	// release asks for; a real program would use package source.
	charts := release.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*release.Chart, error) {
		ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
		return &release.Chart{Chart: ch}, err
	})
	rec, err := release.NewReconciler(release.ReconcilerConfig{Charts: charts})
	if err != nil {
		return err
	}

	// One copy of the release per cluster, each with its own values.
	rels := make([]*release.Release, len(fleet))
	for i, m := range fleet {
		r := base.DeepCopy()
		r.Spec.Values = values.Merge(r.Spec.Values, m.values)
		rels[i] = r
	}

	step := func(title string) error {
		fmt.Fprintf(out, "== %s\n", title)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CLUSTER\tRELEASE\tACTION\tREVISION\tCHART\tSTATUS\tREPLICAS")
		for i, m := range fleet {
			res, err := rec.Reconcile(ctx, m.cluster, rels[i])
			if err != nil {
				return fmt.Errorf("cluster %s: %w", m.cluster.Name(), err)
			}
			h := res.Helm
			fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%d\t%s-%s\t%s\t%v\n", m.cluster.Name(), h.Namespace, h.Name, res.Action,
				h.Version, h.Chart.Metadata.Name, h.Chart.Metadata.Version, h.Info.Status, res.Values.Values["replicaCount"])
		}
		return tw.Flush()
	}

	if err := step("install on every cluster, values per cluster"); err != nil {
		return err
	}
	if err := step("reconcile again: everything in sync"); err != nil {
		return err
	}
	for _, r := range rels {
		r.Spec.Chart.Spec.Version = "6.5.1"
		r.Spec.Values = values.Merge(r.Spec.Values, map[string]any{"ui": map[string]any{"message": "upgraded by helmfleet"}})
		r.Generation++
	}
	if err := step("upgrade to chart 6.5.1 with a new message"); err != nil {
		return err
	}

	fmt.Fprintln(out, "== objects per cluster")
	for _, m := range fleet {
		fmt.Fprintf(out, "%s:\n", m.cluster.Name())
		for _, line := range m.cluster.Summary() {
			fmt.Fprintf(out, "  %s\n", line)
		}
	}
	return nil
}
