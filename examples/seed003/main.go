// Command seed003 runs a Flux repository laid out as seed 003 keeps its
// EKS fleet (the layout of Flux's flux2-kustomize-helm-example) on an
// in-memory fleet, unchanged: no flattening, no policies written for it.
//
// The repository (repo/, embedded; -repo reads another checkout):
//
//	clusters/dev, clusters/prod      what each cluster's Flux reads: three Flux Kustomizations,
//	  infrastructure-crds.yaml         cert-manager's CRDs (plain manifests), first;
//	  infrastructure.yaml              infrastructure/<env>, after the CRDs, wait: true;
//	  apps.yaml                        apps/<env>, after infrastructure, with ${vars} from
//	                                   the cluster's cluster-vars ConfigMap
//	infrastructure/crds              the CRDs
//	infrastructure/base/cert-manager   HelmRepository + HelmRelease (no version); the release
//	                                   depends on the infrastructure-crds Kustomization (a
//	                                   dependency across kinds) and reads its values from the
//	                                   cluster's cert-manager-values ConfigMap
//	infrastructure/dev/cert-manager    patches the HelmRelease to a pre-release chart
//	infrastructure/prod/cert-manager   patches it to the stable line, with its own values
//	apps/base/podinfo, apps/{dev,prod} podinfo and its cert-manager Certificate, per env
//
// Each cluster's Flux reads one directory (flux bootstrap
// --path=clusters/<env>), so the program keeps one fleet per directory:
// dev-1 and dev-2 (env=dev) run clusters/dev, prod-1 (env=prod) runs
// clusters/prod. It builds the directory with release/kustomize, places
// its Kustomizations on the environment's members, prints the fleet's
// plan and applies it; dev first, and prod only once dev is ready. The
// Kustomizations apply their plain objects themselves and hand the
// HelmReleases they build to the fleet, which installs them in
// dependency order, across kinds. Each member starts with the
// per-cluster ConfigMaps seed 003's ClusterAPI puts there
// (ClusterResourceSets). It needs no cluster, network or flags:
//
//	go run ./examples/seed003
//	go run ./examples/seed003 -repo path/to/checkout
package main

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

//go:embed all:repo
var embedded embed.FS

func main() {
	dir := flag.String("repo", "", "checkout of a repository in seed 003's layout (default: the embedded repo/)")
	flag.Parse()
	repo, err := fs.Sub(embedded, "repo")
	if *dir != "" {
		repo, err = os.DirFS(*dir), nil
	}
	if err == nil {
		err = run(context.Background(), repo, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "seed003:", err)
		os.Exit(1)
	}
}

// member is one in-memory cluster, its environment and what ClusterAPI
// creates it with.
type member struct {
	name, env, domain, email string
}

// members are the fleet: two dev clusters and one prod cluster.
var members = []member{
	{name: "dev-1", env: "dev", domain: "dev-1.dev.example.com", email: "platform-dev@example.com"},
	{name: "dev-2", env: "dev", domain: "dev-2.dev.example.com", email: "platform-dev@example.com"},
	{name: "prod-1", env: "prod", domain: "prod-1.example.com", email: "platform@example.com"},
}

// environments, in rollout order: each is the directory its members'
// Flux reads.
var environments = []string{"dev", "prod"}

// gitRepository is the Flux source every Kustomization of the repository
// names (flux bootstrap creates it): the repository itself.
const gitRepository = "GitRepository/flux-system/flux-system"

func run(ctx context.Context, repo fs.FS, out io.Writer) error {
	rev, err := revision(repo)
	if err != nil {
		return err
	}
	krec, err := kustomize.NewReconciler(kustomize.ReconcilerConfig{
		Sources:      kustomize.MapSources{gitRepository: {FS: repo, Revision: rev}},
		Exclude:      kustomize.FleetUnit,
		PollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		return err
	}
	_ = krec // TEMP until fleet.Config.Kustomize lands
	schemas := memory.NewSchemas()
	clusters := map[string]*memory.Cluster{}
	for _, m := range members {
		c := memory.New(m.name, memory.WithSchemas(schemas))
		if err := bootstrap(ctx, c, m); err != nil {
			return err
		}
		clusters[m.name] = c
		fmt.Fprintf(out, "member %-6s env=%-4s cluster-vars: cluster_name=%s cluster_domain=%s\n", m.name, m.env, m.name, m.domain)
	}
	fmt.Fprintf(out, "repository revision %s\n", rev)

	for _, env := range environments {
		dir := "clusters/" + env
		res, err := kustomize.Build(ctx, repo, dir, kustomize.Options{})
		if err != nil {
			return err
		}
		in := fleet.InputsOf(res.Objects)
		placement, err := readsDirectory(env)
		if err != nil {
			return err
		}
		in.Policies.Propagation = append(in.Policies.Propagation, placement...)
		var ms []release.Member
		var names []string
		for _, m := range members {
			if m.env == env {
				ms = append(ms, release.Member{Cluster: clusters[m.name], Facts: policy.Cluster{Labels: map[string]string{"env": m.env}}})
				names = append(names, m.name)
			}
		}
		fmt.Fprintf(out, "\n== %s: %s on %s: %s\n", env, dir, strings.Join(names, ", "), kustomizationNames(res.Objects.Kustomizations))

		// Member mode for valuesFrom needs the reconciler's config: the
		// fleet makes one reconciler per member that reads there.
		fl, err := fleet.New(fleet.Config{
			Members:          ms,
			ReconcilerConfig: &release.ReconcilerConfig{Charts: charts(), PollInterval: 5 * time.Millisecond},
			// Kustomize:        krec,
		})
		if err != nil {
			return err
		}
		plan, err := fl.Plan(ctx, in)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "-- plan (nothing written yet)\n%s", plan.Table())
		if len(plan.Errors) > 0 {
			return fmt.Errorf("%s: plan: %w", env, errors.Join(plan.Errors...))
		}
		rep, err := fl.Apply(ctx, plan, fleet.ApplyOptions{})
		if rep != nil {
			fmt.Fprintf(out, "-- apply\n%s", rep.Table())
		}
		if err != nil {
			return fmt.Errorf("%s: %w (the environments after it are left alone)", env, err)
		}
		fmt.Fprintf(out, "-- what each member runs\n")
		for _, name := range names {
			lines, err := describe(ctx, clusters[name])
			if err != nil {
				return err
			}
			for _, l := range lines {
				fmt.Fprintf(out, "%-6s %s\n", name, l)
			}
		}
	}
	return nil
}

// readsDirectory is the placement that stands for flux bootstrap
// --path=clusters/<env>: every Kustomization the directory holds goes to
// every member labelled env=<env>.
func readsDirectory(env string) ([]policy.PropagationPolicy, error) {
	objs, err := release.Decode(strings.NewReader(fmt.Sprintf(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: clusters-%[1]s, namespace: flux-system}
spec:
  resourceSelectors:
    - {apiVersion: kustomize.toolkit.fluxcd.io/v1, kind: Kustomization}
  placement:
    clusterAffinity:
      labelSelector:
        matchLabels: {env: %[1]s}
`, env)))
	if err != nil {
		return nil, err
	}
	return objs.Policies.Propagation, nil
}

// bootstrap gives a new member what seed 003's ClusterAPI gives each
// cluster with ClusterResourceSets: the ConfigMaps of its own values.
func bootstrap(ctx context.Context, c *memory.Cluster, m member) error {
	for _, cm := range []*unstructured.Unstructured{
		configMap("flux-system", "cluster-vars", map[string]any{"cluster_name": m.name, "cluster_domain": m.domain}),
		configMap("kube-system", "cert-manager-values", map[string]any{
			"values.yaml": fmt.Sprintf("clusterIssuer:\n  email: %s\n  dnsZone: %s\n", m.email, m.domain),
		}),
	} {
		if _, err := c.Apply(ctx, cm, release.ApplyOptions{FieldManager: "cluster-api"}); err != nil {
			return fmt.Errorf("member %s: %w", m.name, err)
		}
	}
	return nil
}

func configMap(namespace, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"data":     data,
	}}
}

// revision stands for the Git commit Flux would report: a digest of
// every file of the tree, in path order.
func revision(repo fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(repo, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(repo, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "main@sha256:" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func kustomizationNames(ks []*release.Kustomization) string {
	var names []string
	for _, k := range ks {
		names = append(names, k.Name)
	}
	return strings.Join(names, ", ")
}
