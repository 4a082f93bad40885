package reconcile_test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch"
	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/peertally"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// TestDriftHelmOwnershipMetadata follows helm-controller v1.6.3
// (internal/action/diff.go setHelmMetadata, tested by TestDiff "configures
// Helm metadata"): the objects of a release carry Helm's ownership label
// and annotations, and a live object that lost them has drifted; the
// correction puts them back.
func TestDriftHelmOwnershipMetadata(t *testing.T) {
	for _, eng := range peerEngines {
		t.Run(eng.Name, func(t *testing.T) { driftHelmOwnershipMetadata(t, eng) })
	}
}

// installForDrift installs the test chart with drift detection enabled,
// on eng with the override managers, and returns the reconciler, the
// release and a reference to its ConfigMap.
func installForDrift(t *testing.T, c *memory.Cluster, eng peerEngine, override []string) (*reconcile.Reconciler, *release.Release, release.ObjectRef) {
	t.Helper()
	rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: 2 * time.Millisecond, OverrideManagers: override, Engine: eng.Engine})
	require.NoError(t, err)
	rel := fixture.Release()
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled}
	_, err = rec.Reconcile(context.Background(), c, rel)
	require.NoError(t, err)
	return rec, rel, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"}
}

func driftHelmOwnershipMetadata(t *testing.T, eng peerEngine) {
	ctx := context.Background()
	c := newHealthyCluster(&health{})
	rec, rel, ref := installForDrift(t, c, eng, nil)
	cm, err := c.Get(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, "Helm", cm.GetLabels()["app.kubernetes.io/managed-by"], "Helm labels what it creates")
	wantName := cm.GetAnnotations()["meta.helm.sh/release-name"]
	require.NotEmpty(t, wantName)

	// Someone strips the ownership metadata.
	unstructured.RemoveNestedField(cm.Object, "metadata", "labels", "app.kubernetes.io/managed-by")
	unstructured.RemoveNestedField(cm.Object, "metadata", "annotations", "meta.helm.sh/release-name")
	_, err = c.Update(ctx, cm, "kubectl-edit")
	require.NoError(t, err)

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionCorrectDrift}, res.Actions)
	require.NotNil(t, res.Drift)
	assert.Equal(t, 1, res.Drift.Count("Modified"))
	cm, err = c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, "Helm", cm.GetLabels()["app.kubernetes.io/managed-by"], "corrected")
	assert.Equal(t, wantName, cm.GetAnnotations()["meta.helm.sh/release-name"], "corrected")

	// An edit by a field manager that Flux does not override by default
	// (kubectl), adding a key the chart does not set, is not drift.
	cm.Object["data"].(map[string]any)["extra"] = "x"
	_, err = c.Update(ctx, cm, "kubectl")
	require.NoError(t, err)
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions)
}

// TestDriftOverrideManagers follows helm-controller's --override-manager
// (internal/action/diff.go replaceDisallowedFieldManagers): a key the
// chart does not set, added by a field manager in
// Config.OverrideManagers, is drift and its correction removes it; added
// by any other manager, it is that manager's business. The list is empty
// by default, as the flag's.
func TestDriftOverrideManagers(t *testing.T) {
	for _, tc := range []struct {
		name      string
		override  []string
		manager   string
		corrected bool
	}{
		{"listed manager", []string{"kubectl-edit"}, "kubectl-edit", true},
		{"manager not listed", []string{"kubectl-edit"}, "kubectl", false},
		{"default overrides none", nil, "kubectl-edit", false},
	} {
		for _, eng := range peerEngines {
			t.Run(eng.Name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				c := newHealthyCluster(&health{})
				rec, rel, ref := installForDrift(t, c, eng, tc.override)
				cm, err := c.Get(ctx, ref)
				require.NoError(t, err)
				cm.Object["data"].(map[string]any)["edited"] = "by hand"
				_, err = c.Update(ctx, cm, tc.manager)
				require.NoError(t, err)

				res, err := rec.Reconcile(ctx, c, rel)
				require.NoError(t, err)
				cm, err = c.Get(ctx, ref)
				require.NoError(t, err)
				_, kept := cm.Object["data"].(map[string]any)["edited"]
				if tc.corrected {
					assert.Equal(t, []reconcile.Action{reconcile.ActionCorrectDrift}, res.Actions)
					assert.False(t, kept, "the overridden manager's key is removed")
				} else {
					assert.Empty(t, res.Actions)
					assert.True(t, kept, "another manager's key is left alone")
				}
			})
		}
	}
}

// diffCase is one case of testdata/peer/flux/diff.yaml.
type diffCase struct {
	Name    string                      `json:"name"`
	Test    string                      `json:"test"`
	Note    string                      `json:"note"`
	Ignore  []release.IgnoreRule        `json:"ignore"`
	Desired []diffObject                `json:"desired"`
	Edit    map[string][]map[string]any `json:"edit"`
	Delete  []string                    `json:"delete"`
	// Correct runs a Reconcile with drift detection enabled instead of
	// Reconciler.Drift; Corrected is then each object's data afterwards
	// (nil data: the object exists).
	Correct   bool                         `json:"correct"`
	Corrected map[string]map[string]string `json:"corrected"`
	Want      []struct {
		Object  string       `json:"object"`
		Status  string       `json:"status"`
		Changes []diffChange `json:"changes"`
	} `json:"want"`
}

// diffObject is a ConfigMap by name and data, or any object.
type diffObject struct {
	Name   string            `json:"name"`
	Data   map[string]string `json:"data"`
	Object map[string]any    `json:"object"`
}

type diffChange struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	Live    any    `json:"live,omitempty"`
	Desired any    `json:"desired,omitempty"`
}

// peerFluxDiff runs helm-controller's TestDiff cases (diff.yaml) through
// Reconciler.Drift: the chart renders the desired objects, the install
// creates them, the case edits the live ones, and the report must be
// Flux's DiffSet.
func peerFluxDiff(t *testing.T, tl *peertally.Tally, eng peerEngine) {
	var data struct {
		Source  peerSource `json:"source"`
		Cases   []diffCase `json:"cases"`
		Skipped []peerSkip `json:"skipped"`
	}
	loadPeer(t, "diff.yaml", &data)
	require.NotEmpty(t, data.Source.Commit)
	logSkips(t, tl, data.Skipped)
	for _, c := range data.Cases {
		countCase(tl, false, t.Run(c.Name, func(t *testing.T) { runDiffCase(t, c, eng) }))
	}
}

func runDiffCase(t *testing.T, c diffCase, eng peerEngine) {
	ctx := context.Background()
	var manifest strings.Builder
	for _, d := range c.Desired {
		obj := d.Object
		if obj == nil {
			obj = map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": d.Name}, "data": d.Data}
		}
		b, err := yaml.Marshal(obj)
		require.NoError(t, err)
		manifest.WriteString("---\n")
		manifest.Write(b)
	}
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "diff", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/manifest.yaml", Data: []byte(manifest.String())}},
	}
	rec, err := reconcile.New(reconcile.Config{
		Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
			return &reconcile.Chart{Chart: ch}, nil
		}),
		PollInterval: 2 * time.Millisecond, Engine: eng.Engine,
	})
	require.NoError(t, err)
	c1 := newHealthyCluster(&health{})
	rel := fixture.Release()
	rel.Name, rel.Namespace = "rel", "test"
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionWarn, Ignore: c.Ignore}
	_, err = rec.Reconcile(ctx, c1, rel)
	require.NoError(t, err)

	ref := func(key string) release.ObjectRef {
		kind, name, ok := strings.Cut(key, "/")
		require.True(t, ok, "object %q is Kind/name", key)
		return release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: kind}, Namespace: "test", Name: name}
	}
	for key, ops := range c.Edit {
		live, err := c1.Get(ctx, ref(key))
		require.NoError(t, err)
		doc, err := json.Marshal(live.Object)
		require.NoError(t, err)
		p, err := json.Marshal(ops)
		require.NoError(t, err)
		patch, err := jsonpatch.DecodePatch(p)
		require.NoError(t, err)
		doc, err = patch.Apply(doc)
		require.NoError(t, err)
		edited := &unstructured.Unstructured{}
		require.NoError(t, json.Unmarshal(doc, &edited.Object))
		_, err = c1.Update(ctx, edited, "kubectl-edit")
		require.NoError(t, err)
	}
	for _, key := range c.Delete {
		require.NoError(t, c1.Delete(ctx, ref(key), release.DeleteOptions{}))
	}

	if c.Correct {
		rel.Spec.DriftDetection.Mode = release.DriftDetectionEnabled
		res, err := rec.Reconcile(ctx, c1, rel)
		require.NoError(t, err)
		assert.Equal(t, []reconcile.Action{reconcile.ActionCorrectDrift}, res.Actions)
		for key, data := range c.Corrected {
			live, err := c1.Get(ctx, ref(key))
			require.NoError(t, err, key)
			if data != nil {
				got, _, _ := unstructured.NestedStringMap(live.Object, "data")
				assert.Equal(t, data, got, key)
			}
		}
		assert.True(t, strings.HasPrefix(cond(rel, "Ready"), "True/"), "ready after the correction: %s", cond(rel, "Ready"))
		return
	}
	report, _, err := rec.Drift(ctx, c1, rel, reconcile.DriftOptions{})
	require.NoError(t, err)
	type result struct {
		Object  string
		Status  string
		Changes []diffChange
	}
	var got, want []result
	for _, o := range report.Objects {
		r := result{Object: o.Object.Kind + "/" + o.Object.Name, Status: string(o.Status)}
		require.Equal(t, "test", o.Object.Namespace, r.Object)
		for _, ch := range o.Changes {
			r.Changes = append(r.Changes, diffChange{Op: ch.Op, Path: ch.Path, Live: ch.Live, Desired: ch.Desired})
		}
		got = append(got, r)
	}
	for _, w := range c.Want {
		want = append(want, result{Object: w.Object, Status: w.Status, Changes: w.Changes})
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Object < got[j].Object })
	sort.Slice(want, func(i, j int) bool { return want[i].Object < want[j].Object })
	assert.Equal(t, normalizeJSON(t, want), normalizeJSON(t, got))
}

// normalizeJSON makes values from YAML and from a report comparable.
func normalizeJSON(t *testing.T, v any) any {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}
