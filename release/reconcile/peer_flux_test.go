package reconcile_test

// Flux helm-controller's own test data, ported as a peer suite (issue 16).
// The cases live in testdata/peer/flux/*.yaml, each file naming the
// repository, file, test and commit it comes from (fluxcd/helm-controller
// v1.6.3, commit 372c34e2b4a455d24ef6cbb8321c82c4533dbbd8). Flux's inputs
// and expected outputs are the oracle; the code that runs them is ours and
// drives the public API: pure snapshot functions, ShortenName, and
// Reconciler.Plan / Reconcile on an in-memory cluster with real Helm.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	helmrelease "helm.sh/helm/v3/pkg/release"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/peertally"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// peerSource names where a group of cases comes from.
type peerSource struct {
	Repo   string `json:"repo"`
	File   string `json:"file"`
	Test   string `json:"test"`
	Commit string `json:"commit"`
}

// peerSkip is a case of the peer's suite that is not ported, and why.
type peerSkip struct {
	Name   string `json:"name"`
	Test   string `json:"test"`
	Reason string `json:"reason"`
	// Count is how many of the peer's cases the entry stands for (a
	// whole test: "name: all"); 0 means one.
	Count int `json:"count"`
}

func loadPeer(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "peer", "flux", name))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(b, into), name)
}

// logSkips logs the skipped cases and counts them in tl.
func logSkips(t *testing.T, tl *peertally.Tally, skips []peerSkip) {
	for _, s := range skips {
		require.NotEmpty(t, s.Reason, "a skipped case says why: %s %s", s.Test, s.Name)
		t.Logf("skipped %s %s: %s", s.Test, s.Name, s.Reason)
		tl.Skipped += max(s.Count, 1)
	}
}

type snapshotCase struct {
	Name        string            `json:"name"`
	In          release.Snapshots `json:"in"`
	IgnoreTests bool              `json:"ignoreTests"`
	Want        release.Snapshots `json:"want"`
}

type snapshotGroup struct {
	Test  string         `json:"test"`
	Cases []snapshotCase `json:"cases"`
}

func peerFluxSnapshots(t *testing.T, tl *peertally.Tally) {
	var data struct {
		Source        peerSource    `json:"source"`
		Sort          snapshotGroup `json:"sort"`
		Latest        snapshotGroup `json:"latest"`
		Previous      snapshotGroup `json:"previous"`
		Truncate      snapshotGroup `json:"truncate"`
		HasBeenTested struct {
			Test  string `json:"test"`
			Cases []struct {
				Name string           `json:"name"`
				In   release.Snapshot `json:"in"`
				Want bool             `json:"want"`
			} `json:"cases"`
		} `json:"hasBeenTested"`
		Skipped []peerSkip `json:"skipped"`
	}
	loadPeer(t, "snapshots.yaml", &data)
	logSkips(t, tl, data.Skipped)
	run := func(g snapshotGroup, f func(c snapshotCase) release.Snapshots) {
		for _, c := range g.Cases {
			countCase(tl, false, t.Run(g.Test+"/"+c.Name, func(t *testing.T) {
				got := f(c)
				if len(c.Want) == 0 {
					assert.Empty(t, got)
					return
				}
				assert.Equal(t, c.Want, got)
			}))
		}
	}
	run(data.Sort, func(c snapshotCase) release.Snapshots { c.In.SortByVersion(); return c.In })
	run(data.Latest, func(c snapshotCase) release.Snapshots { return single(c.In.Latest()) })
	run(data.Previous, func(c snapshotCase) release.Snapshots { return single(c.In.Previous(c.IgnoreTests)) })
	run(data.Truncate, func(c snapshotCase) release.Snapshots { c.In.Truncate(c.IgnoreTests); return c.In })
	for _, c := range data.HasBeenTested.Cases {
		countCase(tl, false, t.Run(data.HasBeenTested.Test+"/"+c.Name, func(t *testing.T) {
			assert.Equal(t, c.Want, c.In.HasBeenTested())
		}))
	}
}

func single(s *release.Snapshot) release.Snapshots {
	if s == nil {
		return nil
	}
	return release.Snapshots{s}
}

func peerFluxReleaseName(t *testing.T, tl *peertally.Tally) {
	var data struct {
		Source peerSource `json:"source"`
		Cases  []struct {
			Name string `json:"name"`
			Want string `json:"want"`
		} `json:"cases"`
	}
	loadPeer(t, "names.yaml", &data)
	for _, c := range data.Cases {
		countCase(tl, false, t.Run(c.Name, func(t *testing.T) {
			got := release.ShortenName(c.Name)
			assert.Equal(t, c.Want, got, c.Name)
			assert.LessOrEqual(t, len(got), release.MaxReleaseNameLength)

			// The same name reached through the Release's defaults.
			rel := fixture.Release()
			rel.Spec.ReleaseName = c.Name
			if c.Name != "" {
				assert.Equal(t, c.Want, rel.GetReleaseName())
			}
		}))
	}
}

// scenario is one case of state.yaml, actions.yaml or requests.yaml.
type scenario struct {
	Name     string            `json:"name"`
	Mode     string            `json:"mode"`
	Steps    []json.RawMessage `json:"steps"`
	Metadata json.RawMessage   `json:"metadata"`
	Spec     json.RawMessage   `json:"spec"`
	Status   json.RawMessage   `json:"status"`
	Want     struct {
		State      string            `json:"state"`
		Action     string            `json:"action"`
		Stalled    string            `json:"stalled"`
		Error      string            `json:"error"`
		Conditions map[string]string `json:"conditions"`
		Status     map[string]any    `json:"status"`
		// Actions, Next, RequeueAfter and History (the status history,
		// newest first, as "vN status", "+tests" when test results are
		// recorded) are checked in mode reconcile.
		Actions      []string `json:"actions"`
		Next         string   `json:"next"`
		RequeueAfter string   `json:"requeueAfter"`
		History      []string `json:"history"`
		// Storage is Helm's records of the release after the run,
		// newest first, as "vN status".
		Storage []string `json:"storage"`
		// Objects says, per "Kind namespace/name" (cluster-scoped:
		// "Kind name"), whether the object exists after the run.
		Objects map[string]bool `json:"objects"`
		// OCIDigests are the history's OCI digests, newest first.
		OCIDigests []string `json:"ociDigests"`
		// CurrentDigests: status.observedPostRenderersDigest and
		// observedCommonMetadataDigest are those of the spec run.
		CurrentDigests bool `json:"currentDigests"`
		// TargetChanged says whether the run began by uninstalling the
		// release the history records (mode reconcile).
		TargetChanged *bool `json:"targetChanged"`
		// Messages are, per condition type, text its message contains.
		Messages map[string]string `json:"messages"`
	} `json:"want"`
	// Difference, when set, says how Flux's expected output differs from
	// helmfleet's (Want): a documented difference.
	Difference string `json:"difference"`
}

type scenarioFile struct {
	Source  peerSource `json:"source"`
	Cases   []scenario `json:"cases"`
	Skipped []peerSkip `json:"skipped"`
}

func runScenarios(t *testing.T, tl *peertally.Tally, file string, eng peerEngine) {
	var data scenarioFile
	loadPeer(t, file, &data)
	require.NotEmpty(t, data.Source.Commit)
	logSkips(t, tl, data.Skipped)
	for _, sc := range data.Cases {
		countCase(tl, sc.Difference != "", t.Run(sc.Name, func(t *testing.T) {
			if sc.Difference != "" {
				t.Logf("documented difference: %s", sc.Difference)
			}
			runScenario(t, sc, eng)
		}))
	}
}

func runScenario(t *testing.T, sc scenario, eng peerEngine) {
	ctx := context.Background()
	h := &scriptedHealth{}
	c := memory.New("member1", memory.WithHealth(h.fn))
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	rec, err := reconcile.New(reconcile.Config{Charts: peerCharts(t), Now: func() time.Time { return now },
		PollInterval: 2 * time.Millisecond, Engine: eng.Engine})
	require.NoError(t, err)
	rel := fixture.Release()
	for _, raw := range sc.Steps {
		applyStep(t, ctx, c, h, rec, rel, raw)
	}
	mergeInto(t, &rel.ObjectMeta, sc.Metadata)
	mergeInto(t, &rel.Spec, sc.Spec)
	mergeInto(t, &rel.Status, sc.Status)

	var (
		state   reconcile.State
		action  = reconcile.ActionNone
		decided *release.Release
	)
	switch sc.Mode {
	case "uninstall":
		res, uerr := rec.Uninstall(ctx, c, rel)
		state, err, action = res.State, uerr, res.Last()
		// The conditions are read from the status the Result returns.
		decided = rel.DeepCopy()
		decided.Status = res.Status
	case "reconcile":
		var res *reconcile.Result
		res, err = rec.Reconcile(ctx, c, rel)
		assertOutcome(t, res, err)
		state, decided = res.State, rel
		if len(res.Actions) > 0 {
			action = res.Actions[0]
		}
		if sc.Want.Actions != nil {
			var got []string
			for _, a := range res.Actions {
				got = append(got, string(a))
			}
			assert.Equal(t, sc.Want.Actions, append([]string{}, got...), "actions")
		}
		if sc.Want.TargetChanged != nil {
			assert.Equal(t, *sc.Want.TargetChanged, len(res.Actions) > 0 && res.Actions[0] == reconcile.ActionUninstall,
				"the run began by uninstalling the recorded release (actions %v)", res.Actions)
		}
		if sc.Want.Next != "" {
			assert.Equal(t, sc.Want.Next, string(res.Next), "next")
		}
		if sc.Want.RequeueAfter != "" {
			d, perr := time.ParseDuration(sc.Want.RequeueAfter)
			require.NoError(t, perr)
			assert.Equal(t, d, res.RequeueAfter, "requeueAfter")
		}
	default:
		p := rec.Plan(ctx, c, rel)
		state, action, err, decided = p.State, p.Action, p.Err, p.Release
	}
	if sc.Want.History != nil {
		var got []string
		for _, s := range rel.Status.History {
			e := fmt.Sprintf("v%d %s", s.Version, s.Status)
			if s.TestHooks != nil {
				e += " +tests"
			}
			got = append(got, e)
		}
		if len(sc.Want.History) == 0 {
			assert.Empty(t, got, "history")
		} else {
			assert.Equal(t, sc.Want.History, got, "history")
		}
	}
	checkCluster(t, ctx, c, sc, rel)
	checkApplyMethod(t, c, eng)
	if sc.Want.CurrentDigests {
		assert.Equal(t, digestsOfFreshInstall(t, rel), [2]string{rel.Status.ObservedPostRenderersDigest, rel.Status.ObservedCommonMetadataDigest}, "observed digests")
	}

	if sc.Want.State != "" {
		assert.Equal(t, sc.Want.State, string(state), "state")
	}
	if sc.Want.Action != "" {
		assert.Equal(t, sc.Want.Action, string(action), "action")
	}
	var stalled *reconcile.StalledError
	switch {
	case sc.Want.Stalled != "":
		require.ErrorAs(t, err, &stalled)
		assert.Equal(t, sc.Want.Stalled, stalled.Reason)
	case sc.Want.Error != "":
		require.Error(t, err)
		assert.Contains(t, err.Error(), sc.Want.Error)
	default:
		assert.NoError(t, err)
	}
	for typ, want := range sc.Want.Conditions {
		assert.Equal(t, want, cond(decided, typ), "condition %s", typ)
	}
	for typ, want := range sc.Want.Messages {
		c := decided.Status.GetCondition(typ)
		if assert.NotNil(t, c, "condition %s", typ) {
			assert.Contains(t, c.Message, want, "condition %s message", typ)
		}
	}
	if len(sc.Want.Status) > 0 {
		b, err := json.Marshal(decided.Status)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(b, &got))
		for k, want := range sc.Want.Status {
			g, ok := got[k]
			if !ok {
				// omitempty: an absent field is its zero value.
				switch want.(type) {
				case float64:
					g = float64(0)
				case string:
					g = ""
				}
			}
			assert.Equal(t, want, g, "status.%s", k)
		}
	}
}

// mergeInto applies a JSON merge patch to v.
func mergeInto(t *testing.T, v any, patch json.RawMessage) {
	t.Helper()
	if len(patch) == 0 || string(patch) == "null" {
		return
	}
	doc, err := json.Marshal(v)
	require.NoError(t, err)
	merged, err := jsonpatch.MergePatch(doc, patch)
	require.NoError(t, err)
	// Start from the zero value: json.Unmarshal leaves a field the merged
	// document no longer has (a null in the patch) as it was.
	p := reflect.ValueOf(v).Elem()
	p.Set(reflect.Zero(p.Type()))
	require.NoError(t, json.Unmarshal(merged, v))
}

// applyStep brings the cluster, its Helm storage or the status one step
// closer to the situation a Flux test builds by hand.
func applyStep(t *testing.T, ctx context.Context, c *memory.Cluster, h *scriptedHealth, rec *reconcile.Reconciler, rel *release.Release, raw json.RawMessage) {
	t.Helper()
	var name string
	var arg json.RawMessage
	if err := json.Unmarshal(raw, &name); err != nil {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &m))
		require.Len(t, m, 1, "a step has one key")
		for k, v := range m {
			name, arg = k, v
		}
	}
	store := c.Storage("apps")
	latestRecord := func() *helmrelease.Release {
		last, err := store.Last("podinfo")
		require.NoError(t, err)
		return last
	}
	switch name {
	case "install":
		_, err := rec.Reconcile(ctx, c, rel)
		require.NoError(t, err)
	case "upgrade":
		n, _ := rel.Spec.Values["replicaCount"].(int)
		rel.Spec.Values = map[string]any{"replicaCount": max(n, 2) + 1}
		rel.Generation++
		res, err := rec.Reconcile(ctx, c, rel)
		require.NoError(t, err)
		require.Equal(t, []reconcile.Action{reconcile.ActionUpgrade}, res.Actions)
	case "forgetHistory":
		rel.Status.History = nil
	case "snapshotPatch":
		// Fields of the latest snapshot change (a JSON merge patch).
		mergeInto(t, rel.Status.History.Latest(), arg)
	case "chartName":
		// The history records the release as made from another chart.
		var n string
		require.NoError(t, json.Unmarshal(arg, &n))
		rel.Status.History.Latest().ChartName = n
	case "purgeStorage":
		hist, err := store.History("podinfo")
		require.NoError(t, err)
		for _, h := range hist {
			_, err := store.Delete(h.Name, h.Version)
			require.NoError(t, err)
		}
	case "snapshotDigest":
		var a struct {
			Index int    `json:"index"`
			Value string `json:"value"`
		}
		require.NoError(t, json.Unmarshal(arg, &a))
		rel.Status.History.SortByVersion()
		rel.Status.History[a.Index].Digest = a.Value
	case "recordStatus":
		var s string
		require.NoError(t, json.Unmarshal(arg, &s))
		last := latestRecord()
		last.Info.Status = helmrelease.Status(s)
		require.NoError(t, store.Update(last))
		for _, snap := range rel.Status.History {
			if snap.Version == last.Version {
				snap.Status = s
			}
		}
	case "testHooks":
		var hooks map[string]*release.TestHookStatus
		require.NoError(t, json.Unmarshal(arg, &hooks))
		rel.Status.History.Latest().SetTestHooks(hooks)
	case "recordTestHook":
		var a struct {
			Name  string `json:"name"`
			Phase string `json:"phase"`
		}
		require.NoError(t, json.Unmarshal(arg, &a))
		last := latestRecord()
		now := helmtime.Time{Time: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
		last.Hooks = append(last.Hooks, &helmrelease.Hook{
			Name: a.Name, Kind: "Pod", Events: []helmrelease.HookEvent{helmrelease.HookTest},
			LastRun: helmrelease.HookExecution{StartedAt: now, CompletedAt: now, Phase: helmrelease.HookPhase(a.Phase)},
		})
		require.NoError(t, store.Update(last))
	case "drift":
		dep, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
		require.NoError(t, err)
		delete(dep.Object, "status")
		require.NoError(t, unstructured.SetNestedField(dep.Object, int64(9), "spec", "replicas"))
		_, err = c.Update(ctx, dep, "kubectl-edit")
		require.NoError(t, err)
	case "failStorageUpdate":
		c.SetFaults(memory.FailNth(memory.OpStorageUpdate, nil, 1, errors.New("storage update error")))
	case "broken":
		// Flux's ChartWithFailingHook / ChartWithFailingTestHook: objects
		// of kind of one chart version fail.
		var a struct {
			Version string `json:"version"`
			Kind    string `json:"kind"`
		}
		require.NoError(t, json.Unmarshal(arg, &a))
		h.broken = append(h.broken, [2]string{a.Version, a.Kind})
	default:
		if !applyActionStep(t, ctx, c, rec, rel, name, arg) {
			require.FailNow(t, "unknown step", "%s", name)
		}
	}
}

// scriptedHealth fails the objects of a kind rendered from a chart
// version, for each pair of broken; everything else is ready.
type scriptedHealth struct {
	broken [][2]string
}

func (h *scriptedHealth) fn(u *unstructured.Unstructured) memory.Health {
	for _, b := range h.broken {
		if u.GetKind() == b[1] && u.GetLabels()["helm.sh/chart"] == "podinfo-"+b[0] {
			return memory.Health{Failed: true, Message: "scripted failure of " + b[1] + " of podinfo-" + b[0]}
		}
	}
	return memory.Health{Ready: true}
}

// assertOutcome checks that a Result's Next and RequeueAfter agree with
// the error Reconcile returned, as Result documents: a caller reads the
// outcome from any one of them.
func assertOutcome(t *testing.T, res *reconcile.Result, err error) {
	t.Helper()
	var se *reconcile.StalledError
	stalled := errors.As(err, &se)
	switch res.Next {
	case reconcile.NextStalled:
		assert.True(t, stalled, "Next stalled comes with a *StalledError, got %v", err)
		assert.Zero(t, res.RequeueAfter, "a stalled release is not requeued")
	case reconcile.NextDone:
		assert.NoError(t, err, "Next done comes with no error")
	case reconcile.NextRequeue:
		assert.False(t, stalled, "Next requeue never comes with a *StalledError")
	default:
		t.Errorf("unknown Next %q", res.Next)
	}
	if len(res.Actions) == 0 {
		assert.Equal(t, reconcile.ActionNone, res.Last())
	} else {
		assert.Equal(t, res.Actions[len(res.Actions)-1], res.Last())
	}
}
