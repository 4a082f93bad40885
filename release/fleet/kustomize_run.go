package fleet

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
)

// kustomizeRunner runs Kustomizations with kustomize.Reconcilers: one
// for every member (Config.Kustomize), or one per member built from
// Config.KustomizeConfig.
type kustomizeRunner struct {
	shared   *kustomize.Reconciler
	byMember map[string]*kustomize.Reconciler
}

var _ kustomizer = (*kustomizeRunner)(nil)

// buildKustomizers sets f.kust from cfg.Kustomize or cfg.KustomizeConfig.
func (f *Fleet) buildKustomizers(cfg Config) error {
	switch {
	case cfg.Kustomize != nil && cfg.KustomizeConfig != nil:
		return errors.New("fleet: config: set Kustomize or KustomizeConfig, not both")
	case cfg.Kustomize != nil:
		f.kust = &kustomizeRunner{shared: cfg.Kustomize}
		return nil
	case cfg.KustomizeConfig == nil:
		return nil
	}
	run := &kustomizeRunner{byMember: map[string]*kustomize.Reconciler{}}
	for _, m := range f.members {
		mc := *cfg.KustomizeConfig
		own := mc.Exclude
		mc.Exclude = func(u *unstructured.Unstructured) bool {
			return kustomize.FleetUnit(u) || (own != nil && own(u))
		}
		if f.repo != nil {
			mc.Sources = f.repo.sourcesOf(m.Facts.Name)
		}
		if mc.Variables == nil {
			mc.Variables = release.NewObjectValues(m.Cluster)
		}
		mc.NoCrossNamespaceRefs = mc.NoCrossNamespaceRefs || cfg.NoCrossNamespaceRefs
		if mc.DefaultServiceAccount == "" {
			mc.DefaultServiceAccount = cfg.DefaultServiceAccount
		}
		r, err := kustomize.NewReconciler(mc)
		if err != nil {
			return fmt.Errorf("fleet: config: KustomizeConfig: member %s: %w", m.Facts.Name, err)
		}
		run.byMember[m.Facts.Name] = r
	}
	f.kust = run
	return nil
}

func (r *kustomizeRunner) on(member string) *kustomize.Reconciler {
	if r.shared != nil {
		return r.shared
	}
	return r.byMember[member]
}

// UnitAppliedError reports a Config.Kustomize that would apply, as an
// object, a unit the fleet runs itself (a HelmRelease, a Kustomization,
// a source or a policy): it was built without
// ReconcilerConfig.Exclude = kustomize.FleetUnit.
type UnitAppliedError struct {
	// Object is the unit it would apply.
	Object release.ObjectRef
}

// Error implements error.
func (e *UnitAppliedError) Error() string {
	return fmt.Sprintf("Config.Kustomize would apply %s as an object, which the fleet runs as a unit: build it with kustomize.ReconcilerConfig.Exclude = kustomize.FleetUnit, or set Config.KustomizeConfig", e.Object)
}

func (r *kustomizeRunner) plan(ctx context.Context, member string, cluster release.ObjectClient, k *release.Kustomization) (*kustomizePlan, error) {
	rec := r.on(member)
	built, err := rec.Build(ctx, k)
	if err != nil {
		return nil, err
	}
	p, err := rec.Plan(ctx, cluster, k)
	if err != nil {
		return nil, err
	}
	for _, o := range p.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(o.Object.GroupVersionKind)
		if kustomize.FleetUnit(u) {
			return nil, &UnitAppliedError{Object: o.Object}
		}
	}
	return &kustomizePlan{plan: p, produced: built.Objects, plain: built.Plain}, nil
}

func (r *kustomizeRunner) reconcile(ctx context.Context, member string, cluster release.ObjectClient, k *release.Kustomization) error {
	_, err := r.on(member).Reconcile(ctx, cluster, k)
	return err
}

func (r *kustomizeRunner) delete(ctx context.Context, member string, cluster release.ObjectClient, k *release.Kustomization) error {
	return r.on(member).Delete(ctx, cluster, k)
}
