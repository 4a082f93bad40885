package release

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/helmfleet/helmfleet/drift"
)

// DriftItem is the drift of one release on one member.
type DriftItem struct {
	// Key is the release on its member.
	Key Key
	// Report is the drift report (Secret values masked when printed).
	Report *drift.Report
	// Corrected is true when the drift was corrected.
	Corrected bool
	// Err is why the check or the correction failed.
	Err error
}

// FleetDrift is the drift of every release the fleet applied.
type FleetDrift struct {
	// Items sorted by key.
	Items []DriftItem
}

// Drifted returns the items with drift.
func (d *FleetDrift) Drifted() []DriftItem {
	var out []DriftItem
	for _, it := range d.Items {
		if it.Report != nil && it.Report.Drifted() {
			out = append(out, it)
		}
	}
	return out
}

// String summarises the drift per release and member.
func (d *FleetDrift) String() string {
	var sb strings.Builder
	for _, it := range d.Items {
		switch {
		case it.Err != nil:
			fmt.Fprintf(&sb, "%s: error: %v\n", it.Key, it.Err)
		case it.Report == nil || !it.Report.Drifted():
			fmt.Fprintf(&sb, "%s: no drift\n", it.Key)
		default:
			state := "drifted"
			if it.Corrected {
				state = "corrected"
			}
			fmt.Fprintf(&sb, "%s: %s: %d modified, %d missing\n", it.Key, state, it.Report.Count(drift.StatusModified), it.Report.Count(drift.StatusMissing))
		}
	}
	return sb.String()
}

// Drift checks every release the fleet applied for drift on its member,
// under the release's own ignore rules (whatever its driftDetection mode,
// disabled counting as warn), listing each kind once per member and
// namespace; with correct, it patches drifted objects back and recreates
// missing ones. A member that fails fails only its own items.
func (f *Fleet) Drift(ctx context.Context, correct bool) (*FleetDrift, error) {
	f.mu.Lock()
	byCluster := map[string][]Key{}
	rels := map[Key]*Release{}
	for k, r := range f.applied {
		byCluster[k.Cluster] = append(byCluster[k.Cluster], k)
		rels[k] = r.DeepCopy()
	}
	f.mu.Unlock()
	out := &FleetDrift{}
	results := make(chan DriftItem, len(rels))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cfg.Concurrency)
	for cluster, keys := range byCluster {
		sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
		g.Go(func() error {
			cache := liveCache{}
			for _, k := range keys {
				item := DriftItem{Key: k}
				item.Report, item.Corrected, item.Err = f.rec.drift(gctx, f.byName[cluster].Cluster, rels[k], correct, cache)
				results <- item
			}
			return nil
		})
	}
	_ = g.Wait()
	close(results)
	var errs []error
	for it := range results {
		out.Items = append(out.Items, it)
		if it.Err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", it.Key, it.Err))
		}
	}
	sort.Slice(out.Items, func(i, j int) bool { return keyLess(out.Items[i].Key, out.Items[j].Key) })
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("fleet drift: %w", errors.Join(errs...))
	}
	return out, nil
}

// drift checks one release (and corrects it when asked), sharing cache
// with the other releases of the same cluster.
func (r *Reconciler) drift(ctx context.Context, cluster Cluster, rel *Release, correct bool, cache liveCache) (*drift.Report, bool, error) {
	if rel.GetDriftDetection().GetMode() == DriftDetectionDisabled {
		if rel.Spec.DriftDetection == nil {
			rel.Spec.DriftDetection = &DriftDetection{}
		}
		rel.Spec.DriftDetection.Mode = DriftDetectionWarn
	}
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: &Result{}, lists: cache}
	cfg, err := ru.helmConfig(rel.GetStorageNamespace(), rel.GetTargetNamespace())
	if err != nil {
		return nil, false, err
	}
	ru.cfg = cfg
	last, err := lastRelease(cfg.Releases, rel.GetReleaseName())
	if err != nil {
		return nil, false, errStorage(rel, cluster.Name(), err)
	}
	if last == nil {
		return nil, false, fmt.Errorf("release %s on cluster %s: not installed", rel.ref(), cluster.Name())
	}
	report, err := ru.driftReport(last)
	if err != nil || !correct || !report.Drifted() {
		return report, false, err
	}
	ru.res.Helm = last
	// Corrections are planned only in mode enabled.
	rel.Spec.DriftDetection.Mode = DriftDetectionEnabled
	if report, err = ru.driftReport(last); err != nil {
		return nil, false, err
	}
	if err := ru.correctDrift(report); err != nil {
		return report, false, err
	}
	return report, true, nil
}
