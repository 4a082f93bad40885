// Command fluxrepo runs a Flux repository in the layout Flux's examples
// recommend, as a platform keeps its fleet of clusters, on an in-memory
// fleet, unchanged: nothing flattened, nothing rewritten as
// policies.
//
// The repository (repo/, embedded; -repo reads another checkout):
//
//	clusters/{dev,prod}/                 what a cluster's Flux reads, three Flux Kustomizations:
//	  infrastructure-crds.yaml             ./infrastructure/crds, first
//	  infrastructure.yaml                  ./infrastructure/<env>, after the CRDs; wait: true
//	  apps.yaml                            ./apps/<env>, after infrastructure; ${vars} from the
//	                                       cluster's cluster-vars ConfigMap
//	infrastructure/crds/                 cert-manager's CRDs, plain manifests
//	infrastructure/base/cert-manager/    HelmRepository + HelmRelease (no chart version); the
//	                                     release depends on the infrastructure-crds
//	                                     Kustomization (across kinds) and reads its values
//	                                     from the cluster's cert-manager-values ConfigMap
//	infrastructure/{dev,prod}/cert-manager/  patch the HelmRelease: a pre-release chart on dev,
//	                                     the stable line with more replicas on prod
//	apps/base/podinfo/, apps/{dev,prod}/ podinfo and its Certificate, patched per env
//
// bootstrap.yaml is what Cluster API creates on each new cluster
// beside Flux (as flux bootstrap --path=clusters/<env> would): the
// flux-system Kustomization reading clusters/dev, placed on every member,
// with prod members reading clusters/prod. The fleet builds each member's
// copy from the repository (release/kustomize), runs the Kustomizations
// clusters/<env> holds and the HelmReleases they build as units of its
// own on that member, in dependency order across kinds, and rolls out in
// two waves: dev (dev-1, dev-2), then prod (prod-1).
// Each member starts with the per-cluster ConfigMaps Cluster API puts
// there (ClusterResourceSets). It prints the plan, the rollout
// report, the dependency graph as Mermaid, the order in which each
// member's units became ready, each Kustomization's Flux status, what each
// member runs, and what planning again (Flux's next interval) would
// change: nothing. It needs no cluster, network or flags:
//
//	go run ./examples/fluxrepo
//	go run ./examples/fluxrepo -repo path/to/checkout
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
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

//go:embed all:repo
var embedded embed.FS

//go:embed bootstrap.yaml
var bootstrapYAML string

func main() {
	dir := flag.String("repo", "", "checkout of a repository in this layout (default: the embedded repo/)")
	flag.Parse()
	repo, err := fs.Sub(embedded, "repo")
	if *dir != "" {
		repo, err = os.DirFS(*dir), nil
	}
	if err == nil {
		err = run(context.Background(), repo, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fluxrepo:", err)
		os.Exit(1)
	}
}

// member is one in-memory cluster, its environment and the values
// ClusterAPI creates it with.
type member struct {
	name, env, domain, email string
}

// members are the fleet: two dev clusters and one prod cluster.
var members = []member{
	{name: "dev-1", env: "dev", domain: "dev-1.dev.example.com", email: "platform-dev@example.com"},
	{name: "dev-2", env: "dev", domain: "dev-2.dev.example.com", email: "platform-dev@example.com"},
	{name: "prod-1", env: "prod", domain: "prod-1.example.com", email: "platform@example.com"},
}

// gitRepository is the Flux source the repository's Kustomizations name
// (ClusterAPI creates it, as flux bootstrap would): the repository
// itself.
const gitRepository = "GitRepository/flux-system/flux-system"

func run(ctx context.Context, repo fs.FS, out io.Writer) error {
	in, err := bootstrap()
	if err != nil {
		return err
	}
	rev, err := revision(repo)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== repository %s (source %s)\n", rev, gitRepository)

	schemas := memory.NewSchemas()
	clusters := map[string]*memory.Cluster{}
	var ms []release.Member
	for _, m := range members {
		c := memory.New(m.name, memory.WithSchemas(schemas))
		if err := clusterResourceSets(ctx, c, m); err != nil {
			return err
		}
		clusters[m.name] = c
		ms = append(ms, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env}}})
		fmt.Fprintf(out, "member %-6s env=%-4s cluster_domain=%s\n", m.name, m.env, m.domain)
	}
	// Per-cluster values are read on each member: cert-manager's
	// valuesFrom (its annotation fleet.helmfleet.io/values-from: member)
	// and the apps' postBuild.substituteFrom. The fleet makes a release
	// and a Kustomization reconciler per member from these configs.
	ready := map[string][]string{} // per member, its units in the order they became ready
	var mu sync.Mutex
	fl, err := fleet.New(fleet.Config{
		Members: ms,
		Events: func(e fleet.Event) {
			if e.Kind == fleet.EventReady {
				mu.Lock()
				ready[e.Key.Cluster] = append(ready[e.Key.Cluster], unit(e.Key))
				mu.Unlock()
			}
		},
		ReconcilerConfig: &reconcile.Config{Charts: charts(), PollInterval: 5 * time.Millisecond},
		KustomizeConfig: &kustomize.ReconcilerConfig{
			Sources:      kustomize.MapSources{gitRepository: {FS: repo, Revision: rev}},
			PollInterval: 5 * time.Millisecond,
		},
	})
	if err != nil {
		return err
	}

	plan, err := fl.Plan(ctx, in)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== plan (nothing written yet)\n%s", plan.Table())
	if placement := plan.PlacementErrors(); len(placement) > 0 {
		return fmt.Errorf("plan: %w", errors.Join(placement...))
	}

	fmt.Fprintf(out, "\n== rollout: wave dev, then wave prod\n")
	// Seed 003's "dev first, then prod" workflow as data.
	rollout := &fleet.Rollout{
		Waves:    []fleet.Wave{{Name: "dev", Selector: "env=dev"}, {Name: "prod", Selector: "env=prod"}},
		BakeTime: 50 * time.Millisecond,
	}
	rep, applyErr := fl.Apply(ctx, plan, fleet.ApplyOptions{Rollout: rollout})
	if rep != nil {
		fmt.Fprintf(out, "%s", rep.Table())
		fmt.Fprintf(out, "\n== dependency graph (Mermaid)\n%s", rep.Mermaid())
	}
	if applyErr != nil {
		return applyErr
	}
	fmt.Fprintf(out, "\n== order in which each member's units became ready\n")
	for _, m := range members {
		fmt.Fprintf(out, "%-6s %s\n", m.name, strings.Join(ready[m.name], " -> "))
	}

	fmt.Fprintf(out, "\n== the Kustomizations' status\n")
	for _, kp := range plan.Kustomizations {
		k := kp.Key()
		st, _ := fl.KustomizationStatus(k)
		ready := "no Ready condition"
		if c := st.GetCondition(release.ConditionReady); c != nil {
			ready = fmt.Sprintf("Ready=%s %s", c.Status, c.Reason)
		}
		n := 0
		if st.Inventory != nil {
			n = len(st.Inventory.Entries)
		}
		fmt.Fprintf(out, "%-6s %-31s %s, %d objects, revision %s\n", k.Cluster, k.Namespace+"/"+k.Name, ready, n, st.LastAppliedRevision)
	}

	fmt.Fprintf(out, "\n== what each member runs\n")
	for _, m := range members {
		lines, err := describe(ctx, clusters[m.name])
		if err != nil {
			return err
		}
		for _, l := range lines {
			fmt.Fprintf(out, "%-6s %s\n", m.name, l)
		}
	}

	// Flux reconciles again every interval; the fleet's next plan says
	// what that would change.
	again, err := fl.Plan(ctx, in)
	if err != nil {
		return err
	}
	changes := pending(again)
	fmt.Fprintf(out, "\n== plan again: %d units, %d to change\n", len(again.Items)+len(again.Kustomizations), len(changes))
	for _, c := range changes {
		fmt.Fprintln(out, c)
	}
	return nil
}

// pending lists the units of a plan that would change something: a
// release with an action, a Kustomization out of sync (its objects differ
// or it would prune), and any error.
func pending(p *fleet.Plan) []string {
	var out []string
	for _, it := range p.Items {
		if it.Action != reconcile.ActionNone || it.Err != nil {
			out = append(out, fmt.Sprintf("%s %s/%s: %s %s %v", it.Cluster, it.Release.Namespace, it.Release.Name, it.State, it.Action, it.Err))
		}
	}
	for _, k := range p.Kustomizations {
		if k.State != reconcile.StateInSync || k.Err != nil {
			out = append(out, fmt.Sprintf("%s: %s %s %v", k.Key(), k.State, k.Action, k.Err))
		}
	}
	return out
}

// unit names a fleet unit by kind, namespace and name.
func unit(k fleet.Key) string {
	if k.IsKustomization() {
		return "Kustomization " + k.Namespace + "/" + k.Name
	}
	return "HelmRelease " + k.Namespace + "/" + k.Name
}

// bootstrap decodes bootstrap.yaml: the flux-system Kustomization and the
// policies that give each member its copy.
func bootstrap() (fleet.Inputs, error) {
	objs, err := release.Decode(strings.NewReader(bootstrapYAML))
	if err != nil {
		return fleet.Inputs{}, fmt.Errorf("bootstrap.yaml: %w", err)
	}
	return fleet.InputsOf(objs), nil
}

// clusterResourceSets gives a new member what Cluster API gives
// each cluster with ClusterResourceSets: the ConfigMaps of its own values.
func clusterResourceSets(ctx context.Context, c *memory.Cluster, m member) error {
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

// revision stands for the Git commit Flux would report for the main
// branch: "main@" and a digest of every file of the tree.
func revision(repo fs.FS) (string, error) {
	d, err := kustomize.TreeDigest(repo)
	if err != nil {
		return "", err
	}
	return "main@" + d, nil
}
