package fleet

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
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

// DriftReport is the drift of every release the fleet applied.
type DriftReport struct {
	// Items sorted by key.
	Items []DriftItem
}

// Drifted returns the items with drift.
func (d *DriftReport) Drifted() []DriftItem {
	var out []DriftItem
	for _, it := range d.Items {
		if it.Report != nil && it.Report.Drifted() {
			out = append(out, it)
		}
	}
	return out
}

// String summarises the drift per release and member.
func (d *DriftReport) String() string {
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
func (f *Fleet) Drift(ctx context.Context, correct bool) (*DriftReport, error) {
	if err := f.ensureLoaded(ctx); err != nil {
		return nil, fmt.Errorf("fleet drift: %w", err)
	}
	byCluster := map[string][]Key{}
	rels := f.inv.releases()
	for k := range rels {
		byCluster[k.Cluster] = append(byCluster[k.Cluster], k)
	}
	out := &DriftReport{}
	results := make(chan DriftItem, len(rels))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(f.cfg.Concurrency)
	for cluster, keys := range byCluster {
		sort.Slice(keys, func(i, j int) bool { return keyLess(keys[i], keys[j]) })
		g.Go(func() error {
			// One list cache per identity: what one service account may
			// list is not another's.
			caches := map[string]*reconcile.ListCache{} // by user
			for _, k := range keys {
				item := DriftItem{Key: k}
				c, err := f.releaseCluster(cluster, rels[k])
				if err != nil {
					item.Err = err
					results <- item
					continue
				}
				_, user, _ := f.serviceAccount(rels[k])
				if caches[user] == nil {
					caches[user] = reconcile.NewListCache()
				}
				if err := release.Contain("release.Cluster of member "+cluster, func() (err error) {
					item.Report, item.Corrected, err = f.rec.Drift(gctx, c, rels[k], reconcile.DriftOptions{Correct: correct, Cache: caches[user]})
					return err
				}); err != nil {
					item.Err = err
				}
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
