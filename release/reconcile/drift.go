package reconcile

import (
	"context"
	"fmt"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
)

// DriftOptions are the options of Reconciler.Drift.
type DriftOptions struct {
	// Correct patches drifted objects back and recreates missing ones
	// (in place, not by a Helm upgrade).
	Correct bool
	// Cache, when set, is shared by the checks of several releases on
	// the same cluster, so that each kind is listed once per namespace.
	// Nil lists afresh.
	Cache *ListCache
}

// ListCache keeps the objects of each List a drift check made on one
// cluster, by kind and namespace, for the next checks on that cluster to
// reuse. Make one with NewListCache per cluster and per pass; it is not
// safe for concurrent use.
type ListCache struct{ lists liveCache }

// NewListCache returns an empty ListCache.
func NewListCache() *ListCache { return &ListCache{lists: liveCache{}} }

// Drift checks one installed release for drift on cluster, under the
// release's own ignore rules whatever its driftDetection mode (disabled
// counts as warn), and with opts.Correct corrects what drifted. It
// returns the report and whether a correction was made. rel's spec is
// not changed; a release that is not installed is an error.
func (r *Reconciler) Drift(ctx context.Context, cluster release.Cluster, rel *release.Release, opts DriftOptions) (*drift.Report, bool, error) {
	rel = rel.DeepCopy()
	if rel.GetDriftDetection().GetMode() == release.DriftDetectionDisabled {
		if rel.Spec.DriftDetection == nil {
			rel.Spec.DriftDetection = &release.DriftDetection{}
		}
		rel.Spec.DriftDetection.Mode = release.DriftDetectionWarn
	}
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: &Result{}}
	if opts.Cache != nil {
		ru.lists = opts.Cache.lists
	}
	cfg, err := ru.helmConfig(ru.scopeOf(rel.GetStorageNamespace(), rel.GetTargetNamespace(), rel.GetReleaseName()))
	if err != nil {
		return nil, false, err
	}
	ru.cfg = cfg
	last, err := lastRelease(cfg.Releases, rel.GetReleaseName())
	if err != nil {
		return nil, false, errStorage(rel, cluster.Name(), err)
	}
	if last == nil {
		return nil, false, fmt.Errorf("release %s on cluster %s: not installed", refOf(rel), cluster.Name())
	}
	report, err := ru.driftReport(last)
	if err != nil || !opts.Correct || !report.Drifted() {
		return report, false, err
	}
	ru.res.Helm = last
	// Corrections are planned only in mode enabled.
	rel.Spec.DriftDetection.Mode = release.DriftDetectionEnabled
	if report, err = ru.driftReport(last); err != nil {
		return nil, false, err
	}
	if err := ru.correctDrift(report); err != nil {
		return report, false, err
	}
	return report, true, nil
}
