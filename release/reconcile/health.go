package reconcile

import (
	"context"
	"fmt"

	"github.com/helmfleet/helmfleet/release"
)

// Health checks that the release's latest revision is the one its status
// records, is deployed, and that its objects are Current by kstatus: what
// a rollout gate must look at (never the previous revision's health).
func (r *Reconciler) Health(ctx context.Context, cluster release.Cluster, rel *release.Release) error {
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: &Result{}}
	cfg, err := ru.helmConfig(ru.scopeOf(rel.GetStorageNamespace(), rel.GetTargetNamespace(), rel.GetReleaseName()))
	if err != nil {
		return err
	}
	last, err := lastRelease(cfg.Releases, rel.GetReleaseName())
	if err != nil {
		return errStorage(rel, cluster.Name(), err)
	}
	cur := rel.Status.History.Latest()
	switch {
	case last == nil:
		return fmt.Errorf("release %s on cluster %s: not installed", refOf(rel), cluster.Name())
	case cur == nil || cur.Version != last.Version:
		return fmt.Errorf("release %s on cluster %s: revision %d is not the one applied", refOf(rel), cluster.Name(), last.Version)
	case last.Info.Status.String() != release.SnapshotStatusDeployed:
		return fmt.Errorf("release %s on cluster %s: revision %d is %s", refOf(rel), cluster.Name(), last.Version, last.Info.Status)
	}
	objs, err := objectsOf(cfg.KubeClient, last.Manifest)
	if err != nil {
		return ru.helmErr("health", err)
	}
	refs := make([]release.ObjectRef, len(objs))
	for i, o := range objs {
		refs[i] = release.RefOf(o)
	}
	cc := cfg.KubeClient.(*contextClient)
	pending, failed, err := cc.pending(ctx, refs)
	if err != nil {
		return ru.helmErr("health", err)
	}
	if len(pending)+len(failed) > 0 {
		// The objects' names and condition messages come from the
		// rendered manifest and the cluster.
		return ru.helmErr("health", &release.NotReadyError{Cluster: cluster.Name(), Objects: append(failed, pending...)})
	}
	return nil
}

// RollbackToPrevious rolls the release back to the revision before its
// latest (the previous good one in its history) and records it in the
// status: what a halted rollout does to the members that failed.
func (r *Reconciler) RollbackToPrevious(ctx context.Context, cluster release.Cluster, rel *release.Release) error {
	ru := &run{r: r, ctx: ctx, cluster: cluster, rel: rel, res: &Result{}}
	cfg, err := ru.helmConfig(ru.scopeOf(rel.GetStorageNamespace(), rel.GetTargetNamespace(), rel.GetReleaseName()))
	if err != nil {
		return err
	}
	ru.cfg = cfg
	prev := rel.Status.History.Previous(true)
	if prev == nil {
		return ru.stalled(release.ReasonMissingRollbackTarget, "no previous revision to roll back to")
	}
	spec := rel.GetRollback()
	o := RollbackOptions{WaitOptions: ru.waitOptions(spec.GetTimeout(rel.GetTimeout()).Duration, spec.DisableWait, true), Version: prev.Version, MaxHistory: rel.GetMaxHistory(), ServerSideApply: spec.ServerSideApply}
	before := rel.Status.History.Latest()
	err = ru.helmErr("rollback", ru.engine().Rollback(ctx, cfg, rel.GetReleaseName(), o))
	if last, lerr := lastRelease(cfg.Releases, rel.GetReleaseName()); lerr == nil && last != nil {
		rel.Status.History = upsertSnapshot(rel.Status.History, snapshotOf(last, ""))
		if before == nil || last.Version > before.Version {
			// The rollback wrote it (status.history[].action).
			ru.markAction(ActionRollback)
		}
	}
	if err != nil {
		// The rollout judged the release failed and the rollback may
		// have left a failed revision: Ready says so.
		ru.setCondition(release.ConditionRemediated, "False", release.ReasonRollbackFailed, fmt.Sprintf("rollout halted: rolling back to revision %d failed: %v", prev.Version, err))
		rel.SummarizeReady()
		return ru.actionErr(ActionRollback, err)
	}
	msg := fmt.Sprintf("rollout halted: rolled back to revision %d", prev.Version)
	if c := rel.Status.GetCondition(release.ConditionReady); c != nil && c.Status != "True" && c.Message != "" {
		// Keep saying why the rollout judged the release failed.
		msg += ": " + c.Message
	}
	ru.setCondition(release.ConditionRemediated, "True", release.ReasonRollbackSucceeded, msg)
	// The desired revision no longer runs: Ready says so, as after the
	// reconciler's own remediation, with why.
	rel.SummarizeReady()
	return nil
}
