// Command controller is a minimal controller built on helmfleet: it
// reconciles the Releases a platform team keeps on a hub cluster onto a
// fleet of member clusters, the way a Karmada control plane with Flux
// would, in under three hundred lines (main.go; demo.go sets up the hub,
// the members and the story).
//
// The hub is a release/memory cluster that serves the HelmRelease,
// PropagationPolicy and OverridePolicy kinds once their
// CustomResourceDefinitions are stored, exactly as a real API server
// would. The controller is a polling loop (a ticker, bound to ctx):
//
//  1. list the HelmReleases and policies on the hub;
//  2. skip the poll when no release is due: a release is due when its
//     generation changed since the last apply, or when its requeue time
//     has come — the reconciler's Next hints: NextDone waits
//     spec.interval, NextRequeue retries at the next poll, NextStalled
//     waits for the release to change. Fleet.Apply does not hand back each
//     member's Result, so the hint is read from the member's status as
//     the reconciler left it (Stalled, else Ready False, else done) and
//     the least advanced member decides;
//  3. decode them, Fleet.Plan, Fleet.Apply;
//  4. write each release's Ready condition (all members ready, or which
//     are not and why) and observedGeneration back into the hub object's
//     status, by server-side apply as its own field manager.
//
// It stops cleanly when ctx is cancelled. The demo runs four polls over a
// hub and two members, and changes the world between them: a member
// that is unreachable at first comes back, and the platform team edits
// the release on the hub. No cluster, network or flags needed:
//
//	go run ./examples/controller
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
)

func main() {
	if err := run(context.Background(), os.Stdout, 20*time.Millisecond, time.Now); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// FieldManager is the controller's field manager on the hub: it owns the
// status it writes, and only that.
const FieldManager = "helmfleet-controller"

// watched are the kinds the controller reads from the hub.
var (
	helmReleaseGVK = schema.GroupVersionKind{Group: "helm.toolkit.fluxcd.io", Version: "v2", Kind: "HelmRelease"}
	watched        = []schema.GroupVersionKind{
		helmReleaseGVK,
		{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "PropagationPolicy"},
		{Group: "policy.karmada.io", Version: "v1alpha1", Kind: "OverridePolicy"},
	}
)

// Controller reconciles the hub's Releases onto a fleet.
type Controller struct {
	// Hub holds the HelmReleases and policies.
	Hub release.ObjectClient
	// Fleet runs them.
	Fleet *fleet.Fleet
	// Poll is the polling period.
	Poll time.Duration
	// Now is the clock of requeue times and conditions.
	Now func() time.Time
	// Log receives one block per poll.
	Log io.Writer
	// AfterPoll, if set, runs after each poll with its number (from 1):
	// the demo changes the world there, or stops the controller.
	AfterPoll func(n int)

	applied map[string]int64     // namespace/name: generation last applied
	due     map[string]time.Time // namespace/name: requeue time; absent while stalled
}

// Run polls until ctx is cancelled, then returns nil. A poll that fails
// is logged and retried at the next tick.
func (c *Controller) Run(ctx context.Context) error {
	c.applied, c.due = map[string]int64{}, map[string]time.Time{}
	tick := time.NewTicker(c.Poll)
	defer tick.Stop()
	for n := 1; ; n++ {
		if err := c.poll(ctx, n); err != nil && ctx.Err() == nil {
			fmt.Fprintf(c.Log, "poll %d: error: %v\n", n, err)
		}
		if c.AfterPoll != nil {
			c.AfterPoll(n)
		}
		select {
		case <-ctx.Done():
			fmt.Fprintf(c.Log, "stopped: %v\n", ctx.Err())
			return nil
		case <-tick.C:
		}
	}
}

// poll is one iteration: list, decide what is due, plan, apply, write
// status back.
func (c *Controller) poll(ctx context.Context, n int) error {
	now := c.Now()
	lists := map[schema.GroupVersionKind][]*unstructured.Unstructured{}
	for _, gvk := range watched {
		objs, err := c.Hub.List(ctx, gvk, "", nil)
		if err != nil {
			return fmt.Errorf("list %s: %w", gvk.Kind, err)
		}
		lists[gvk] = objs
	}
	var due, waiting []string
	for _, u := range lists[helmReleaseGVK] {
		ref := u.GetNamespace() + "/" + u.GetName()
		at, requeue := c.due[ref]
		switch {
		case c.applied[ref] != u.GetGeneration():
			due = append(due, ref+" (generation "+fmt.Sprint(u.GetGeneration())+")")
		case requeue && !now.Before(at):
			due = append(due, ref+" (requeue)")
		case requeue:
			waiting = append(waiting, fmt.Sprintf("%s in %s", ref, at.Sub(now).Round(time.Second)))
		default:
			waiting = append(waiting, ref+" stalled until it changes")
		}
	}
	if len(due) == 0 {
		fmt.Fprintf(c.Log, "poll %d: nothing due; next: %s\n", n, strings.Join(waiting, ", "))
		return nil
	}
	fmt.Fprintf(c.Log, "poll %d: due: %s\n", n, strings.Join(due, ", "))

	objs, err := decode(lists)
	if err != nil {
		return err
	}
	plan, err := c.Fleet.Plan(ctx, fleet.InputsOf(objs))
	if err != nil {
		return err
	}
	for _, it := range plan.Items {
		switch {
		case it.Err != nil:
			fmt.Fprintf(c.Log, "  plan %s %s/%s: error: %s\n", it.Cluster, it.Release.Namespace, it.Release.Name, firstLine(it.Err.Error()))
		case it.Action != release.ActionNone:
			fmt.Fprintf(c.Log, "  plan %s %s/%s: %s %s@%s\n", it.Cluster, it.Release.Namespace, it.Release.Name, it.Action, it.Chart, it.Version)
		}
	}
	rep, applyErr := c.Fleet.Apply(ctx, plan, fleet.ApplyOptions{})
	if rep == nil {
		return applyErr
	}
	members := map[string][]fleet.ItemReport{}
	for _, it := range rep.Items {
		ref := it.Key.Namespace + "/" + it.Key.Name
		members[ref] = append(members[ref], it)
	}
	for _, r := range objs.Releases {
		ref := r.Namespace + "/" + r.Name
		cond, next := c.summarize(r, members[ref], now)
		if err := c.writeStatus(ctx, r, cond); err != nil {
			return err
		}
		c.applied[ref] = r.Generation
		switch next {
		case release.NextDone:
			c.due[ref] = now.Add(r.Spec.Interval.Duration)
		case release.NextRequeue:
			c.due[ref] = now // the next poll
		case release.NextStalled:
			delete(c.due, ref)
		}
		fmt.Fprintf(c.Log, "  status %s: Ready=%s %s: %s; next: %s\n", ref, cond.Status, cond.Reason, cond.Message, next)
	}
	return nil
}

// decode turns the hub's objects into helmfleet's: each is stripped of
// what the API server adds (status, managed fields, uid, …) and the
// stream is decoded strictly, as if read from Git.
func decode(lists map[schema.GroupVersionKind][]*unstructured.Unstructured) (*release.Objects, error) {
	var sb strings.Builder
	for _, gvk := range watched {
		for _, u := range lists[gvk] {
			clean := map[string]any{
				"apiVersion": u.GetAPIVersion(),
				"kind":       u.GetKind(),
				"metadata": map[string]any{
					"name": u.GetName(), "namespace": u.GetNamespace(), "generation": u.GetGeneration(),
					"labels": u.GetLabels(), "annotations": u.GetAnnotations(),
				},
				"spec": u.Object["spec"],
			}
			data, err := json.Marshal(clean)
			if err != nil {
				return nil, err
			}
			sb.WriteString("---\n")
			sb.Write(data)
			sb.WriteString("\n")
		}
	}
	return release.Load(strings.NewReader(sb.String()))
}

// summarize folds the members' statuses of one release into one Ready
// condition and the Next hint of the least advanced member: stalled
// anywhere stalls, not ready anywhere requeues, else done.
func (c *Controller) summarize(r *release.Release, items []fleet.ItemReport, now time.Time) (metav1.Condition, release.Next) {
	cond := metav1.Condition{Type: release.ConditionReady, Status: metav1.ConditionTrue, Reason: release.ReasonReconciliationSucceeded,
		ObservedGeneration: r.Generation, LastTransitionTime: metav1.NewTime(now)}
	next := release.NextDone
	var ready, problems []string
	for _, it := range items {
		k := it.Key
		st, ok := c.Fleet.Status(k)
		rc := st.GetCondition(release.ConditionReady)
		switch {
		case ok && rc != nil && rc.Status == metav1.ConditionTrue:
			ready = append(ready, k.Cluster)
			continue
		case ok && st.GetCondition(release.ConditionStalled) != nil && st.GetCondition(release.ConditionStalled).Status == metav1.ConditionTrue:
			next = release.NextStalled
		case next != release.NextStalled:
			next = release.NextRequeue
		}
		msg := "not reconciled"
		switch {
		case it.Err != nil:
			msg = it.Err.Error()
		case rc != nil:
			msg = rc.Message
		}
		problems = append(problems, k.Cluster+": "+firstLine(msg))
	}
	sort.Strings(problems)
	if len(problems) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, release.ReasonReconciliationFailed
		cond.Message = fmt.Sprintf("ready on %d/%d members; %s", len(ready), len(items), strings.Join(problems, "; "))
		return cond, next
	}
	cond.Message = fmt.Sprintf("ready on %d/%d members: %s", len(ready), len(items), strings.Join(ready, ", "))
	return cond, next
}

// writeStatus server-side applies the release's status to the hub's
// status subresource as the controller's field manager: only
// status.observedGeneration and the Ready condition. The HelmRelease CRD
// enables the status subresource (as Flux's does), so an API server,
// real or in-memory, takes status only there: an apply to the object
// would drop it. Writing through the subresource also leaves the spec and
// its generation alone, so it never fights the team's writes of the spec.
func (c *Controller) writeStatus(ctx context.Context, r *release.Release, cond metav1.Condition) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(helmReleaseGVK)
	u.SetNamespace(r.Namespace)
	u.SetName(r.Name)
	condJSON, err := json.Marshal(cond)
	if err != nil {
		return err
	}
	var condMap map[string]any
	if err := json.Unmarshal(condJSON, &condMap); err != nil {
		return err
	}
	u.Object["status"] = map[string]any{"observedGeneration": r.Generation, "conditions": []any{condMap}}
	if _, err := c.Hub.Apply(ctx, u, release.ApplyOptions{FieldManager: FieldManager, Force: true, Subresource: release.SubresourceStatus}); err != nil {
		return fmt.Errorf("write status of %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
