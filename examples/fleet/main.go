// Command fleet runs a realistic platform fleet from a directory of YAML:
// the layout Flux's multi-cluster examples recommend (cluster add-ons,
// then apps, with dev clusters on pre-release charts) spread over dev and prod
// clusters with Karmada policies, and its manual "dev first, then prod"
// workflow turned into one call.
//
// The directory (fleet/, embedded; -dir reads another one) holds Flux
// HelmReleases and HelmRepositories and Karmada policies:
//
//   - cert-manager, whose chart brings a CustomResourceDefinition in
//     crds/, and an ingress controller, on every dev and prod cluster;
//   - a database on a data cluster of its own;
//   - podinfo, which depends on both add-ons on its own cluster and on the
//     database on the data cluster (a dependency across clusters);
//   - override policies: dev clusters get pre-release chart versions (a
//     plaintext override of /spec/chart/spec/version, what a Flux repository does
//     with a Kustomize patch per environment), prod clusters get more
//     replicas and a host per region (helmfleet's valuesOverrider).
//
// The program decodes the directory, builds an in-memory fleet of five
// clusters, prints the plan, then applies it as one two-wave rollout —
// dev (with the shared data cluster) first, prod after a bake time and a
// gate that checks the app is available on every cluster of the wave —
// and prints the rollout report, the dependency graph as Mermaid and what
// Helm lists on each member. It needs no cluster, network or flags and
// finishes in about a second:
//
//	go run ./examples/fleet
//	go run ./examples/fleet -dir path/to/yaml
package main

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

//go:embed fleet/*.yaml
var embedded embed.FS

func main() {
	dir := flag.String("dir", "", "directory of YAML files to run (default: the embedded fleet/ directory)")
	flag.Parse()
	fsys, err := fs.Sub(embedded, "fleet")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
	if *dir != "" {
		fsys = os.DirFS(*dir)
	}
	if err := run(context.Background(), fsys, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

// member is one in-memory cluster of the fleet and its placement facts.
type member struct {
	name, env, region, role string
}

// members are the fleet: one dev cluster, a data cluster shared by every
// environment, and two prod clusters.
var members = []member{
	{name: "dev-eu-1", env: "dev", region: "eu-west-1", role: "apps"},
	{name: "data-eu-1", env: "shared", region: "eu-west-1", role: "data"},
	{name: "prod-eu-1", env: "prod", region: "eu-west-1", role: "apps"},
	{name: "prod-us-1", env: "prod", region: "us-east-1", role: "apps"},
}

// rollout is a platform team's "dev first, then prod" workflow as data. The data cluster goes with the
// first wave: every app depends on its database, and a release waits for
// dependencies only in its own or an earlier wave.
func rollout(gate func(context.Context, fleet.WaveReport) error) *fleet.Rollout {
	return &fleet.Rollout{
		Waves: []fleet.Wave{
			{Name: "dev", Selector: "env in (dev,shared)"},
			{Name: "prod", Selector: "env=prod"},
		},
		BakeTime:       100 * time.Millisecond,
		MaxFailures:    0,
		RollbackFailed: true,
		Gate:           gate,
	}
}

func run(ctx context.Context, fsys fs.FS, out io.Writer) error {
	objs, files, err := load(fsys)
	if err != nil {
		return err
	}
	in := fleet.InputsOf(objs)
	fmt.Fprintf(out, "== fleet: %d releases, %d helm repositories, %d policies from %s\n",
		len(objs.Releases), len(objs.HelmRepositories), policyCount(objs.Policies), strings.Join(files, ", "))

	schemas := memory.NewSchemas() // one for the whole fl
	clusters := map[string]*memory.Cluster{}
	var ms []release.Member
	for _, m := range members {
		c := memory.New(m.name, memory.WithSchemas(schemas))
		clusters[m.name] = c
		ms = append(ms, release.Member{Cluster: c, Facts: policy.Cluster{
			Labels: map[string]string{"env": m.env, "role": m.role}, Region: m.region,
		}})
		fmt.Fprintf(out, "member %-10s env=%-6s role=%-4s region=%s\n", m.name, m.env, m.role, m.region)
	}
	rec, err := reconcile.New(reconcile.Config{Charts: charts(), PollInterval: 5 * time.Millisecond})
	if err != nil {
		return err
	}
	fl, err := fleet.New(fleet.Config{Members: ms, Reconciler: rec, Concurrency: 8, ClusterConcurrency: 2})
	if err != nil {
		return err
	}

	plan, err := fl.Plan(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== plan (nothing written yet)\n%s", plan.Table())
	// A release that cannot be placed stops the rollout; a release that
	// fails on some member (an *ItemError, shown in the table) is left to
	// the waves, which halt on it.
	if placement := plan.PlacementErrors(); len(placement) > 0 {
		return fmt.Errorf("plan: %w", errors.Join(placement...))
	}

	fmt.Fprintf(out, "\n== rollout: wave dev, then wave prod after a bake time and a gate\n")
	gate := func(ctx context.Context, w fleet.WaveReport) error {
		err := appAvailable(ctx, clusters, w.Clusters)
		verdict := "go on"
		if err != nil {
			verdict = "stop: " + err.Error()
		}
		fmt.Fprintf(out, "gate after wave %s %v: %d succeeded, %d failed: %s\n", w.Name, w.Clusters, w.Succeeded, w.Failed, verdict)
		return err
	}
	rep, applyErr := fl.Apply(ctx, plan, fleet.ApplyOptions{Rollout: rollout(gate)})
	if rep != nil {
		fmt.Fprintf(out, "\n%s", rep.Table())
		fmt.Fprintf(out, "\n== dependency graph (Mermaid)\n%s", rep.Mermaid())
	}
	if applyErr != nil {
		return applyErr
	}

	fmt.Fprintf(out, "\n== helm ls on each member\n")
	for _, m := range members {
		lines, err := helmList(ctx, clusters[m.name], in.Releases)
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintf(out, "%-10s %s\n", m.name, l)
		}
	}
	fmt.Fprintf(out, "\n== what each member runs\n")
	for _, m := range members {
		line, err := describe(ctx, clusters[m.name])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-10s %s\n", m.name, line)
	}
	return nil
}

var (
	crdGVK     = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	ingressGVK = schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}
)

// describe says what runs on a member: the CRDs, podinfo's replicas,
// image and ingress host, or the database.
func describe(ctx context.Context, c *memory.Cluster) (string, error) {
	crds, err := c.List(ctx, crdGVK, "", nil)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, crd := range crds {
		parts = append(parts, "crd "+crd.GetName())
	}
	dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: "apps", Name: "podinfo"})
	switch {
	case err == nil:
		n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		cs, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
		image, _, _ := unstructured.NestedString(cs[0].(map[string]any), "image")
		parts = append(parts, fmt.Sprintf("podinfo %d replicas %s", n, image))
		ing, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: ingressGVK, Namespace: "apps", Name: "podinfo"})
		if err != nil {
			return "", err
		}
		rules, _, _ := unstructured.NestedSlice(ing.Object, "spec", "rules")
		host, _, _ := unstructured.NestedString(rules[0].(map[string]any), "host")
		parts = append(parts, "host "+host)
	case errors.Is(err, release.ErrNotFound):
	default:
		return "", err
	}
	if _, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: statefulSetGVK, Namespace: "data", Name: "database"}); err == nil {
		parts = append(parts, "database statefulset data/database")
	}
	return strings.Join(parts, ", "), nil
}

// load decodes every *.yaml file of fsys, in name order, into one set of
// objects; a problem names its file.
func load(fsys fs.FS) (*release.Objects, []string, error) {
	files, err := fs.Glob(fsys, "*.yaml")
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, errors.New("no *.yaml files in the fleet directory")
	}
	all := &release.Objects{}
	for _, name := range files {
		f, err := fsys.Open(name)
		if err != nil {
			return nil, nil, err
		}
		objs, err := release.Decode(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		all.Releases = append(all.Releases, objs.Releases...)
		all.HelmRepositories = append(all.HelmRepositories, objs.HelmRepositories...)
		all.OCIRepositories = append(all.OCIRepositories, objs.OCIRepositories...)
		all.HelmCharts = append(all.HelmCharts, objs.HelmCharts...)
		all.Policies.Propagation = append(all.Policies.Propagation, objs.Policies.Propagation...)
		all.Policies.ClusterPropagation = append(all.Policies.ClusterPropagation, objs.Policies.ClusterPropagation...)
		all.Policies.Override = append(all.Policies.Override, objs.Policies.Override...)
		all.Policies.ClusterOverride = append(all.Policies.ClusterOverride, objs.Policies.ClusterOverride...)
	}
	all.Default()
	if err := all.Validate(); err != nil {
		return nil, nil, err
	}
	return all, files, nil
}

func policyCount(s policy.Set) int {
	return len(s.Propagation) + len(s.ClusterPropagation) + len(s.Override) + len(s.ClusterOverride)
}

var (
	deploymentGVK  = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	statefulSetGVK = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
)

// appAvailable is the rollout gate's probe, standing in for a metrics
// query: podinfo's Deployment on every app cluster of the wave has all
// its replicas available (on the new revision: the fleet already checked
// the revision's health during the bake).
func appAvailable(ctx context.Context, clusters map[string]*memory.Cluster, names []string) error {
	for _, name := range names {
		c := clusters[name]
		dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: deploymentGVK, Namespace: "apps", Name: "podinfo"})
		if errors.Is(err, release.ErrNotFound) {
			continue // the data cluster runs no app
		}
		if err != nil {
			return err
		}
		want, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		got, _, _ := unstructured.NestedInt64(dep.Object, "status", "availableReplicas")
		if got < want {
			return fmt.Errorf("%s: podinfo has %d of %d replicas available", name, got, want)
		}
	}
	return nil
}

// helmList lists the Helm releases of a member the way `helm ls -A` would,
// one line per release: namespace/name, chart-version, status, revision.
func helmList(ctx context.Context, c *memory.Cluster, rels []*release.Release) ([]string, error) {
	namespaces := map[string]bool{}
	for _, r := range rels {
		namespaces[r.Namespace] = true
	}
	var out []string
	for ns := range namespaces {
		cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: ns, Namespace: ns})
		if err != nil {
			return nil, err
		}
		list := action.NewList(cfg)
		list.All = true
		hs, err := list.Run()
		if err != nil {
			return nil, fmt.Errorf("member %s: helm ls -n %s: %w", c.Name(), ns, err)
		}
		for _, h := range hs {
			out = append(out, fmt.Sprintf("%s/%s %s-%s %s revision %d",
				h.Namespace, h.Name, h.Chart.Metadata.Name, h.Chart.Metadata.Version, h.Info.Status, h.Version))
		}
	}
	sort.Strings(out)
	return out, nil
}
