package reconcile_test

// Flux helm-controller's per-action suites (internal/reconcile
// install_test.go, upgrade_test.go, test_test.go,
// rollback_remediation_test.go, uninstall_test.go,
// uninstall_remediation_test.go, release_test.go and the rest of
// atomic_release_test.go at v1.6.3), ported as cases in
// testdata/peer/flux/*.yaml. Flux calls one action on records it builds
// by hand; here the steps bring an in-memory cluster to that situation
// with real Helm actions and the state machine runs the action (see each
// file's header for how its cases map).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/peertally"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// subchartCRDVersion is the chart version a case names to get Flux's
// BuildChartWithSubchartWithCRD, ported to testdata (named podinfo so
// that moving to it is an upgrade, as in Flux's test).
const subchartCRDVersion = "flux-subchart-crd"

// failingHookVersion is the chart version a case names to get Flux's
// BuildChart(ChartWithFailingHook()), ported to testdata: its hook Pod
// (post-install, pre-delete, post-upgrade) fails once a step marks the
// Pods of podinfo-0.2.0 broken.
const failingHookVersion = "flux-failing-hook"

// ociDigestAnnotation makes peerCharts serve the test chart as an OCI
// artifact with the annotation's digest (step ociDigest).
const ociDigestAnnotation = "peer.helmfleet.test/oci-digest"

// peerCharts serves the test chart, and Flux's chart with a CRD in a
// conditional subchart for the version subchartCRDVersion, and Flux's
// chart with a failing hook for failingHookVersion.
func peerCharts(t *testing.T) reconcile.ChartGetter {
	base := fixture.Charts()
	return reconcile.ChartGetterFunc(func(ctx context.Context, rel *release.Release) (*reconcile.Chart, error) {
		if d := rel.GetAnnotations()[ociDigestAnnotation]; d != "" {
			ch, err := base.GetChart(ctx, rel)
			if ch != nil {
				ch.Digest = d
			}
			return ch, err
		}
		switch rel.Spec.Chart.Spec.Version {
		case subchartCRDVersion:
			ch, err := loader.LoadDir(filepath.Join("testdata", "peer", "flux", "charts", "subchart-crd"))
			return &reconcile.Chart{Chart: ch}, err
		case failingHookVersion:
			ch, err := loader.LoadDir(filepath.Join("testdata", "peer", "flux", "charts", "failing-hook"))
			return &reconcile.Chart{Chart: ch}, err
		}
		return base.GetChart(ctx, rel)
	})
}

// checkCluster compares Helm's storage and the cluster's objects with the
// case's expectations.
func checkCluster(t *testing.T, ctx context.Context, c *memory.Cluster, sc scenario, rel *release.Release) {
	t.Helper()
	if sc.Want.Storage != nil {
		hist, err := c.Storage("apps").History("podinfo")
		if err != nil {
			hist = nil
		}
		sort.Slice(hist, func(i, j int) bool { return hist[i].Version > hist[j].Version })
		var got []string
		for _, h := range hist {
			got = append(got, fmt.Sprintf("v%d %s", h.Version, h.Info.Status))
		}
		if len(sc.Want.Storage) == 0 {
			assert.Empty(t, got, "storage")
		} else {
			assert.Equal(t, sc.Want.Storage, got, "storage")
		}
	}
	for key, want := range sc.Want.Objects {
		kind, name, ok := strings.Cut(key, " ")
		require.True(t, ok, "object key %q", key)
		ref := release.ObjectRef{}
		switch kind {
		case "ConfigMap":
			ref.GroupVersionKind = schema.GroupVersionKind{Version: "v1", Kind: kind}
		case "CustomResourceDefinition":
			ref.GroupVersionKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: kind}
		default:
			require.FailNow(t, "unknown object kind", "%s", kind)
		}
		if ns, n, ok := strings.Cut(name, "/"); ok {
			ref.Namespace, ref.Name = ns, n
		} else {
			ref.Name = name
		}
		_, err := c.Get(ctx, ref)
		assert.Equal(t, want, err == nil, "object %s exists (err %v)", key, err)
	}
}

// digestsOfFreshInstall returns the post-renderers and common metadata
// digests a fresh install of rel's spec records: what a Release observes
// when it reconciled this spec.
func digestsOfFreshInstall(t *testing.T, rel *release.Release) [2]string {
	t.Helper()
	fresh := fixture.Release()
	fresh.Spec = rel.DeepCopy().Spec
	c := memory.New("fresh")
	rec := fixture.Reconciler(t, nil)
	_, err := rec.Reconcile(context.Background(), c, fresh)
	require.NoError(t, err)
	return [2]string{fresh.Status.ObservedPostRenderersDigest, fresh.Status.ObservedCommonMetadataDigest}
}

// storageOps maps a step's op name to the Helm storage write it fails.
var storageOps = map[string]memory.Operation{
	"create": memory.OpStorageCreate,
	"update": memory.OpStorageUpdate,
	"delete": memory.OpStorageDelete,
}

// applyActionStep runs the steps of the per-action suites; it reports
// false for an unknown step.
//
//	failStorage {op, always}: Helm storage writes of op fail ("storage
//	  <op> error"), every time (Flux's storage.Failing) or only the first;
//	failHelmDelete: every delete of an object by Helm fails;
//	ociDigest D: the chart comes from an OCI artifact of digest D;
//	clearFaults;
//	helm {action: upgrade|rollback, version}: a Helm action run by someone
//	  else (values replicaCount 4 for upgrade);
//	deleteRecord N: revision N disappears from Helm's storage;
//	dropSnapshot N: revision N is forgotten by the status history;
//	reconcileWith <spec patch>: the spec is patched and reconciled (its
//	  failure is part of the setup);
//	uninstall: Reconciler.Uninstall.
func applyActionStep(t *testing.T, ctx context.Context, c *memory.Cluster, rec *reconcile.Reconciler, rel *release.Release, name string, arg json.RawMessage) bool {
	t.Helper()
	switch name {
	case "failStorage":
		var a struct {
			Op     string `json:"op"`
			Always bool   `json:"always"`
		}
		require.NoError(t, json.Unmarshal(arg, &a))
		op, ok := storageOps[a.Op]
		require.True(t, ok, "storage op %q", a.Op)
		injected := fmt.Errorf("storage %s error", a.Op)
		if a.Always {
			c.SetFaults(func(o memory.Operation, _ release.ObjectRef) error {
				if o == op {
					return injected
				}
				return nil
			})
		} else {
			c.SetFaults(memory.FailNth(op, nil, 1, injected))
		}
	case "failHelmDelete":
		c.SetFaults(func(o memory.Operation, _ release.ObjectRef) error {
			if o == memory.OpHelmDelete {
				return errors.New("delete error")
			}
			return nil
		})
	case "ociDigest":
		var d string
		require.NoError(t, json.Unmarshal(arg, &d))
		if rel.Annotations == nil {
			rel.Annotations = map[string]string{}
		}
		rel.Annotations[ociDigestAnnotation] = d
	case "clearFaults":
		c.SetFaults(nil)
	case "helm":
		var a struct {
			Action  string `json:"action"`
			Version int    `json:"version"`
		}
		require.NoError(t, json.Unmarshal(arg, &a))
		cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
		require.NoError(t, err)
		switch a.Action {
		case "upgrade":
			ch, err := fixture.Charts().GetChart(ctx, rel)
			require.NoError(t, err)
			u := action.NewUpgrade(cfg)
			u.Namespace = "apps"
			_, err = u.Run("podinfo", ch.Chart, map[string]any{"replicaCount": 4})
			require.NoError(t, err)
		case "rollback":
			rb := action.NewRollback(cfg)
			rb.Version = a.Version
			require.NoError(t, rb.Run("podinfo"))
		default:
			require.FailNow(t, "unknown helm action", "%s", a.Action)
		}
	case "deleteRecord":
		var v int
		require.NoError(t, json.Unmarshal(arg, &v))
		_, err := c.Storage("apps").Delete("podinfo", v)
		require.NoError(t, err)
	case "dropSnapshot":
		var v int
		require.NoError(t, json.Unmarshal(arg, &v))
		var kept release.Snapshots
		for _, s := range rel.Status.History {
			if s.Version != v {
				kept = append(kept, s)
			}
		}
		rel.Status.History = kept
	case "reconcileWith":
		mergeInto(t, &rel.Spec, arg)
		_, _ = rec.Reconcile(ctx, c, rel)
	case "uninstall":
		_, err := rec.Uninstall(ctx, c, rel)
		require.NoError(t, err)
	default:
		return false
	}
	return true
}

// peerFluxSummarize runs Flux's Test_summarize
// (internal/reconcile/release_test.go, v1.6.3) against
// Release.SummarizeReady.
func peerFluxSummarize(t *testing.T, tl *peertally.Tally) {
	var data struct {
		Source peerSource `json:"source"`
		Cases  []struct {
			Name       string             `json:"name"`
			Generation int64              `json:"generation"`
			Spec       json.RawMessage    `json:"spec"`
			Conditions []metav1.Condition `json:"conditions"`
			Want       []metav1.Condition `json:"want"`
		} `json:"cases"`
		Skipped []peerSkip `json:"skipped"`
	}
	loadPeer(t, "summarize.yaml", &data)
	require.NotEmpty(t, data.Source.Commit)
	logSkips(t, tl, data.Skipped)
	for _, c := range data.Cases {
		countCase(tl, false, t.Run(c.Name, func(t *testing.T) {
			rel := &release.Release{}
			rel.Generation = c.Generation
			mergeInto(t, &rel.Spec, c.Spec)
			rel.Status.Conditions = c.Conditions
			rel.SummarizeReady()
			// Flux's MatchConditions: the same set, compared by type,
			// status, reason, message and observed generation.
			type cmp struct {
				Type, Status, Reason, Message string
				Generation                    int64
			}
			norm := func(cs []metav1.Condition) map[string]cmp {
				out := map[string]cmp{}
				for _, x := range cs {
					out[x.Type] = cmp{x.Type, string(x.Status), x.Reason, x.Message, x.ObservedGeneration}
				}
				return out
			}
			assert.Equal(t, norm(c.Want), norm(rel.Status.Conditions))
		}))
	}
}

// peerFluxPostRender runs Flux's common and origin-label post-renderer
// cases (postrender.yaml) through an install: Helm's stored manifest must
// hold Flux's expected objects.
func peerFluxPostRender(t *testing.T, tl *peertally.Tally, eng peerEngine) {
	var data struct {
		Source peerSource `json:"source"`
		// Rendered is the manifest a case renders unless it names its own;
		// the other manifests are YAML anchors the cases share.
		Rendered      string `json:"rendered"`
		Image         string `json:"image"`
		JSON6902      string `json:"json6902"`
		JSON6902Patch string `json:"json6902Patch"`
		JSON6902Want  string `json:"json6902Want"`
		Cases         []struct {
			Name          string            `json:"name"`
			Test          string            `json:"test"`
			Rendered      string            `json:"rendered"`
			PostRenderers json.RawMessage   `json:"postRenderers"`
			OriginLabels  bool              `json:"originLabels"`
			Labels        map[string]string `json:"labels"`
			Annotations   map[string]string `json:"annotations"`
			Want          string            `json:"want"`
		} `json:"cases"`
	}
	loadPeer(t, "postrender.yaml", &data)
	require.NotEmpty(t, data.Source.Commit)
	for _, c := range data.Cases {
		countCase(tl, false, t.Run(c.Name, func(t *testing.T) {
			rendered := data.Rendered
			if c.Rendered != "" {
				rendered = c.Rendered
			}
			ch := &chart.Chart{
				Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "mixed", Version: "0.1.0"},
				Templates: []*chart.File{{Name: "templates/manifest.yaml", Data: []byte(rendered)}},
			}
			ctx := context.Background()
			rec, err := reconcile.New(reconcile.Config{
				Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
					return &reconcile.Chart{Chart: ch}, nil
				}),
				PollInterval: 2 * time.Millisecond, OriginLabels: c.OriginLabels, Engine: eng.Engine,
			})
			require.NoError(t, err)
			cl := newHealthyCluster(&health{})
			rel := fixture.Release()
			rel.Name, rel.Namespace = "name", "namespace"
			if c.PostRenderers != nil {
				mergeInto(t, &rel.Spec, json.RawMessage(`{"postRenderers":`+string(c.PostRenderers)+`}`))
			}
			if c.Labels != nil || c.Annotations != nil {
				rel.Spec.CommonMetadata = &release.CommonMetadata{Labels: c.Labels, Annotations: c.Annotations}
			}
			_, err = rec.Reconcile(ctx, cl, rel)
			require.NoError(t, err)
			last, err := cl.Storage("namespace").Last(rel.GetReleaseName())
			require.NoError(t, err)
			assert.Equal(t, manifestObjects(t, c.Want), manifestObjects(t, last.Manifest))
		}))
	}
}

// manifestObjects reads a multi-document manifest into its objects, by
// kind and name.
func manifestObjects(t *testing.T, manifest string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(manifest, "\n---") {
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(doc), &obj))
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		out[u.GetKind()+"/"+u.GetName()] = obj
	}
	return out
}
