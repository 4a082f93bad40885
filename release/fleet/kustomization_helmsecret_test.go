package fleet_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// substitutedReleaseRepo holds a HelmRelease whose spec.values take
// ${TOKEN} plain, as the chart reads it (.Values.canary) and nested.
var substitutedReleaseRepo = fstest.MapFS{
	"app/kustomization.yaml": {Data: []byte("resources: [hr.yaml]\n")},
	"app/hr.yaml": {Data: []byte(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: canary, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: canary
      version: "1.0.0"
      sourceRef: {kind: HelmRepository, name: canary}
  values:
    canary: '${TOKEN}'
    db: {password: 'pw-${TOKEN}', user: app}
`)},
}

// TestFleetKustomizationSecretValuesOfProducedRelease: a Kustomization
// whose substituteFrom Secret holds the canary produces a HelmRelease
// that uses it in spec.values, plain and in a chart's fail message (or
// rendered). Neither the canary nor a common form of it shows in the
// fleet's plan (table, diff, JSON, errors, each release plan in JSON and
// fmt, its values), the apply's error and report (and JSON) or the
// events; Helm's failure is withheld and names the release.
func TestFleetKustomizationSecretValuesOfProducedRelease(t *testing.T) {
	for _, tc := range fixture.CanaryCases() {
		if tc.Name != "fail" && tc.Name != "rendered Secret" {
			continue
		}
		t.Run(tc.Name, func(t *testing.T) {
			ctx := t.Context()
			member := memory.New("dev-1")
			setSecret(t, member, tc.Secret)
			var events []fleet.Event
			rec, err := reconcile.New(reconcile.Config{Charts: tc.Charts(), PollInterval: time.Millisecond})
			require.NoError(t, err)
			f, err := fleet.New(fleet.Config{
				Members:    []release.Member{{Cluster: member, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}}},
				Reconciler: rec,
				KustomizeConfig: &kustomize.ReconcilerConfig{
					Sources:      kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: substitutedReleaseRepo, Revision: "main@sha1:0123abc"}},
					PollInterval: time.Millisecond,
				},
				Events: func(e fleet.Event) { events = append(events, e) },
			})
			require.NoError(t, err)
			in := decodeInputs(t, kustomizationYAML("canary", "./app", "  postBuild:\n    substituteFrom: [{kind: Secret, name: creds}]\n")+
				placeOn("canary", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere))

			outputs := map[string]string{}
			show := func(what string, v any) {
				outputs[what] = fmt.Sprintf("%v | %+v | %#v | %s", v, v, v, v)
				if data, err := json.Marshal(v); err == nil {
					outputs[what+" JSON"] = string(data)
				}
			}
			plan, err := f.Plan(ctx, in)
			require.NoError(t, err)
			require.Len(t, plan.Items, 1, "the produced release is planned")
			outputs["plan table"], outputs["plan diff"] = plan.Table(), plan.Diff()
			show("plan", plan)
			show("plan errors", plan.Errors)
			for i, it := range plan.Items {
				show(fmt.Sprintf("release plan %d", i), it)
				show(fmt.Sprintf("release plan value %d", i), *it)
				show(fmt.Sprintf("release plan values %d", i), it.Values)
				if it.Values != nil {
					outputs[fmt.Sprintf("provenance %d", i)] = it.Values.Provenance().String()
				}
			}
			rep, applyErr := f.Apply(ctx, plan, fleet.ApplyOptions{})
			show("apply error", applyErr)
			require.NotNil(t, rep)
			outputs["report table"] = rep.Table()
			show("report", rep)
			for i, it := range rep.Items {
				show(fmt.Sprintf("report item %d", i), it)
			}
			for i, e := range events {
				show(fmt.Sprintf("event %d", i), e)
			}
			fixture.AssertNoCanary(t, tc.Secret, outputs)

			it := plan.Items[0]
			if !tc.Fails() {
				require.NoError(t, applyErr)
				require.NotNil(t, it.Values)
				for _, o := range it.Values.Provenance().Origins() {
					assert.Equal(t, o.Path != "db.user", o.Sensitive, "%s is Secret data", o.Path)
				}
				assert.Equal(t, []string{"pw-" + tc.Secret, tc.Secret}, it.Values.SecretValues(), "what the chart renders is masked")
				return
			}
			require.Error(t, applyErr)
			for what, e := range map[string]error{"plan": it.Err, "apply": applyErr} {
				assert.ErrorIs(t, e, release.ErrWithheld, what)
				assert.Contains(t, e.Error(), "HelmRelease apps/canary", what)
			}
		})
	}
}

// TestFleetKustomizationMarksSecretFields: the HelmRelease a
// Kustomization produces lists, in release.SecretFieldsAnnotation, the
// JSON pointers of what was substituted from its substituteFrom Secret:
// values, the map holding a key from the Secret (never the key), and
// fields outside spec.values; what the source's annotation lists stays
// listed, an override policy cannot remove it, and nothing of the
// Secret's values is in it.
func TestFleetKustomizationMarksSecretFields(t *testing.T) {
	repo := fstest.MapFS{
		"app/kustomization.yaml": {Data: []byte("resources: [hr.yaml]\n")},
		"app/hr.yaml": {Data: []byte(`apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: canary
  namespace: apps
  annotations: {kustomize.helmfleet.io/secret-fields: '["/spec/values/user"]'}
spec:
  interval: 10m
  chart:
    spec:
      chart: canary
      version: '${VERSION}'
      sourceRef: {kind: HelmRepository, name: canary}
  values:
    canary: '${TOKEN}'
    user: app
    list: [plain, 'x-${TOKEN}']
    extra: {'${TOKEN:0:8}-key': literal}
    a/b: {c: '${TOKEN}'}
    shown: '${PLAIN}'
`)},
	}
	tc := fixture.CanaryCases()[len(fixture.CanaryCases())-1] // renders
	member := memory.New("dev-1")
	s := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "creds", "namespace": "flux-system"},
		"stringData": map[string]any{"TOKEN": newSecretCanary, "VERSION": "1.0.0"}}}
	_, err := member.Apply(t.Context(), s, release.ApplyOptions{FieldManager: "test", Force: true})
	require.NoError(t, err)
	rec, err := reconcile.New(reconcile.Config{Charts: tc.Charts(), PollInterval: time.Millisecond})
	require.NoError(t, err)
	f, err := fleet.New(fleet.Config{
		Members:    []release.Member{{Cluster: member, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}}},
		Reconciler: rec,
		KustomizeConfig: &kustomize.ReconcilerConfig{
			Sources:      kustomize.MapSources{"GitRepository/flux-system/fleet": {FS: repo, Revision: "main@sha1:0123abc"}},
			PollInterval: time.Millisecond,
		},
	})
	require.NoError(t, err)
	in := decodeInputs(t, kustomizationYAML("canary", "./app",
		"  postBuild:\n    substitute: {PLAIN: visible}\n    substituteFrom: [{kind: Secret, name: creds}]\n")+
		placeOn("canary", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", everywhere)+`---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: unmark, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: canary}
  overrideRules:
    - overriders:
        plaintext:
          - {path: /metadata/annotations, operator: remove}
`)
	plan, err := f.Plan(t.Context(), in)
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	require.Len(t, plan.Items, 1)
	// An override policy that removes the annotation unmarks nothing.
	got := plan.Items[0].Release.Annotations[release.SecretFieldsAnnotation]
	assert.JSONEq(t, `["/spec/chart/spec/version","/spec/values/a~1b/c","/spec/values/canary","/spec/values/extra","/spec/values/list/1","/spec/values/user"]`, got)
	fixture.AssertNoSecretCanary(t, "the annotation", got)
	require.NotNil(t, plan.Items[0].Values)
	for _, o := range plan.Items[0].Values.Provenance().Origins() {
		assert.Equal(t, o.Path != "list[0]" && o.Path != "shown", o.Sensitive, "%s is Secret data", o.Path)
	}
}
