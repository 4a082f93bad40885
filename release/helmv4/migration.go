package helmv4

import (
	"context"
	"errors"
	"fmt"
	"sort"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Migration is what moving one release on one cluster from the Helm v3
// engine to the Helm v4 engine changes: the two engines' plans, the
// objects they render differently, and the apply method before and
// after. A platform plans a fleet's switch member by member with it and
// moves the members wave by wave (reconcile.Config.EngineFor).
type Migration struct {
	// Cluster names the cluster.
	Cluster string
	// V3 and V4 are the plans of the two engines.
	V3, V4 *reconcile.Plan
	// Objects lists each rendered object whose rendering differs, as
	// "only v3: kind/namespace/name", "only v4: …" or "differs: …",
	// sorted; empty when both engines render the same objects.
	Objects []string
	// ApplyMethodNow is how the running revision was applied: "csa"
	// (client-side, every Helm v3 revision) or "ssa"; "" when the release
	// is not installed.
	ApplyMethodNow string
	// ApplyMethodNext is how the Helm v4 engine's next install or
	// upgrade would apply ("ssa" or "csa"), ApplyMethodNow when it would
	// run neither.
	ApplyMethodNext string
}

// PlanMigration plans rel on cluster with the Helm v3 engine and with
// the Helm v4 engine (cfg with each engine; cfg.Engine and cfg.EngineFor
// are ignored) and compares them. Nothing is written. A plan that fails
// is returned in the Migration with its error (Plan.Err) as well.
func PlanMigration(ctx context.Context, cfg reconcile.Config, cluster release.Cluster, rel *release.Release) (*Migration, error) {
	m := &Migration{Cluster: cluster.Name()}
	cfg.EngineFor = nil
	for _, e := range []struct {
		engine reconcile.Engine
		plan   **reconcile.Plan
	}{{reconcile.HelmV3{}, &m.V3}, {Engine{}, &m.V4}} {
		cfg.Engine = e.engine
		r, err := reconcile.New(cfg)
		if err != nil {
			return nil, err
		}
		*e.plan = r.Plan(ctx, cluster, rel)
	}
	if err := errors.Join(m.V3.Err, m.V4.Err); err != nil {
		return m, fmt.Errorf("release %s/%s on cluster %s: migration plan: %w", rel.Namespace, rel.Name, cluster.Name(), err)
	}
	m.Objects = objectDiffs(m.V3.Objects, m.V4.Objects)
	last, err := latestRecord(ctx, cluster, rel)
	if err != nil {
		return m, fmt.Errorf("release %s/%s on cluster %s: migration plan: %w", rel.Namespace, rel.Name, cluster.Name(), err)
	}
	if last != nil {
		m.ApplyMethodNow = "csa"
		if last.Labels[ApplyMethodLabel] == "ssa" {
			m.ApplyMethodNow = "ssa"
		}
	}
	m.ApplyMethodNext = nextApplyMethod(rel, m.V4.Action, m.ApplyMethodNow)
	return m, nil
}

// nextApplyMethod is the apply method of the Helm v4 engine's action a
// on rel, whose running revision was applied with now.
func nextApplyMethod(rel *release.Release, a reconcile.Action, now string) string {
	switch a {
	case reconcile.ActionInstall:
		if ssa := rel.GetInstall().ServerSideApply; ssa != nil && !*ssa {
			return "csa"
		}
		return "ssa"
	case reconcile.ActionUpgrade:
		switch rel.GetUpgrade().ServerSideApply {
		case release.ServerSideApplyEnabled:
			return "ssa"
		case release.ServerSideApplyDisabled:
			return "csa"
		}
	}
	return now
}

// latestRecord is the latest Helm record of rel on cluster, nil if none.
func latestRecord(ctx context.Context, cluster release.Cluster, rel *release.Release) (*helmrelease.Release, error) {
	cfg, err := cluster.HelmConfig(ctx, release.HelmScope{StorageNamespace: rel.GetStorageNamespace(), Namespace: rel.GetTargetNamespace(),
		ReleaseNamespace: rel.Namespace, ReleaseObjectName: rel.Name, HelmReleaseName: rel.GetReleaseName()})
	if err != nil {
		return nil, err
	}
	last, err := cfg.Releases.Last(rel.GetReleaseName())
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	return last, err
}

// objectDiffs compares two sets of rendered objects by kind, namespace
// and name.
func objectDiffs(v3, v4 []*unstructured.Unstructured) []string {
	key := func(u *unstructured.Unstructured) string {
		return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
	}
	by4 := make(map[string]*unstructured.Unstructured, len(v4))
	for _, o := range v4 {
		by4[key(o)] = o
	}
	var out []string
	seen := map[string]bool{}
	for _, o := range v3 {
		k := key(o)
		seen[k] = true
		switch b, ok := by4[k]; {
		case !ok:
			out = append(out, "only v3: "+k)
		case !equality.Semantic.DeepEqual(o.Object, b.Object):
			out = append(out, "differs: "+k)
		}
	}
	for _, o := range v4 {
		if k := key(o); !seen[k] {
			out = append(out, "only v4: "+k)
		}
	}
	sort.Strings(out)
	return out
}
