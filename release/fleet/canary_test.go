package fleet_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// canary is Secret text that must reach no output: it carries a quote,
// a backslash and a comma, the characters that defeated redaction by
// filtering.
const canary = `x"CANA\RY,b=1`

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

// The canary suite: a Secret that valuesFrom reads is broken in each way
// that once leaked its text (YAML a tag refuses, a value at a bad
// targetPath, a comma in a value at a targetPath), or is rendered by the
// chart into a ConfigMap. Every output a fleet gives people — the plan's
// table, diff, JSON and errors, the apply's report, error and Mermaid
// picture, the release's status conditions, fmt of all of them — holds
// no part of it.
func TestSecretCanaryReachesNoOutput(t *testing.T) {
	quoted := strings.ReplaceAll(strings.ReplaceAll(canary, `\`, `\\`), `"`, `\"`)
	cases := []struct {
		name       string
		data       string
		targetPath string
		failing    bool
	}{
		{name: "a tag the text does not fit", data: "a: !!int '" + strings.ReplaceAll(canary, "'", "''") + "'\n", failing: true},
		{name: "a value at a bad targetPath", data: canary, targetPath: `ui.message\`, failing: true},
		{name: "a comma in a value at a targetPath", data: canary, targetPath: "ui.message", failing: true},
		{name: "rendered into a ConfigMap", data: "ui:\n  message: \"" + quoted + "\"\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			reader := valuestest.NewReader().Secret("apps", "ui", map[string][]byte{"values.yaml": []byte(tc.data)})
			rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), Values: reader, PollInterval: time.Millisecond})
			require.NoError(t, err)
			var members []release.Member
			for _, name := range []string{"dev-1", "prod-1"} {
				members = append(members, release.Member{Cluster: memory.New(name), Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}})
			}
			fl, err := fleet.New(fleet.Config{Members: members, Reconciler: rec})
			require.NoError(t, err)
			in := decodeInputs(t, fleetYAML)
			in.Releases[0].Spec.ValuesFrom = []release.ValuesReference{{Kind: "Secret", Name: "ui", TargetPath: tc.targetPath}}

			var outputs []string
			show := func(what string, v any) { outputs = append(outputs, fmt.Sprintf("%s: %v | %+v | %#v", what, v, v, v)) }
			plan, err := fl.Plan(ctx, in)
			require.NoError(t, err)
			data, err := json.Marshal(plan)
			require.NoError(t, err)
			outputs = append(outputs, plan.Table(), plan.Diff(), string(data), plan.Mermaid())
			for _, it := range plan.Items {
				show("plan error", it.Err)
				show("plan item", *it)
				show("plan values", it.Values)
				if tc.failing {
					assert.Error(t, it.Err, "the broken Secret fails the plan of %s", it.Cluster)
				}
			}
			rep, err := fl.Apply(ctx, plan, fleet.ApplyOptions{})
			if tc.failing {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			show("apply error", err)
			outputs = append(outputs, rep.Table(), rep.Mermaid())
			for _, it := range rep.Items {
				show("item error", it.Err)
				st, ok := fl.Status(it.Key)
				if !tc.failing {
					require.True(t, ok, "%s was reconciled", it.Key)
				}
				for _, c := range st.Conditions {
					outputs = append(outputs, c.Reason+": "+c.Message)
				}
				show("status", st)
			}
			if !tc.failing {
				cm, err := members[0].Cluster.Get(ctx, release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: "apps", Name: "podinfo"})
				require.NoError(t, err)
				assert.Equal(t, canary, cm.Object["data"].(map[string]any)["PODINFO_UI_MESSAGE"], "what is applied stays real")
			}
			for _, out := range outputs {
				for _, part := range []string{"CANA", `x"`, "RY,b"} {
					assert.NotContains(t, out, part)
				}
			}
		})
	}
}

const canaryFleetYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: canary, namespace: apps}
spec:
  interval: 10m
  chart:
    spec:
      chart: canary
      version: "1.0.0"
      sourceRef: {kind: HelmRepository, name: canary}
  valuesFrom:
    - {kind: Secret, name: canary-values}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: canary, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: canary}
  placement:
    clusterAffinity:
      labelSelector:
        matchLabels: {tier: apps}
`

// The canary suite of a fleet: a chart uses a valuesFrom Secret's value
// in each way that leaks it into Helm's errors (fail, required, %q,
// quote, toJson, upper, b64enc, a broken tpl fragment, a YAML anchor) or
// renders it into a Secret. Neither the value nor a form of it reaches
// the fleet plan (table, diff, JSON, errors, items in fmt and JSON), the
// apply's error, report (table, JSON, items), events, or the releases'
// status; the withheld error names the release, the chart and the
// template file and line.
func TestSecretCanaryHelmErrorsReachNoFleetOutput(t *testing.T) {
	for _, tc := range fixture.CanaryCases() {
		t.Run(tc.Name, func(t *testing.T) {
			ctx := context.Background()
			reader := valuestest.NewReader().Secret("apps", "canary-values", map[string][]byte{"values.yaml": tc.SecretValues()})
			rec, err := reconcile.New(reconcile.Config{Charts: tc.Charts(), Values: reader, PollInterval: time.Millisecond})
			require.NoError(t, err)
			var events []fleet.Event
			fl, err := fleet.New(fleet.Config{
				Members:    []release.Member{{Cluster: memory.New("dev-1"), Facts: policy.Cluster{Labels: map[string]string{"tier": "apps"}}}},
				Reconciler: rec,
				Events:     func(e fleet.Event) { events = append(events, e) },
			})
			require.NoError(t, err)
			outputs := map[string]string{}
			show := func(what string, v any) {
				outputs[what] = fmt.Sprintf("%v | %+v | %#v | %s", v, v, v, v)
				if data, err := json.Marshal(v); err == nil {
					outputs[what+" JSON"] = string(data)
				}
			}

			plan, err := fl.Plan(ctx, decodeInputs(t, canaryFleetYAML))
			require.NoError(t, err)
			require.Len(t, plan.Items, 1)
			outputs["plan table"], outputs["plan diff"] = plan.Table(), plan.Diff()
			show("plan", plan)
			show("plan errors", plan.Errors)
			show("plan item", plan.Items[0])
			show("plan item value", *plan.Items[0])
			rep, applyErr := fl.Apply(ctx, plan, fleet.ApplyOptions{})
			show("apply error", applyErr)
			require.NotNil(t, rep)
			outputs["report table"], outputs["report mermaid"] = rep.Table(), rep.Mermaid()
			show("report", rep)
			for i, it := range rep.Items {
				show(fmt.Sprintf("report item %d", i), it)
				st, _ := fl.Status(it.Key)
				show(fmt.Sprintf("status %d", i), st)
				for _, c := range st.Conditions {
					outputs["condition "+c.Type] = c.Reason + ": " + c.Message
				}
			}
			for i, e := range events {
				show(fmt.Sprintf("event %d", i), e)
			}
			fixture.AssertNoCanary(t, tc.Secret, outputs)

			if !tc.Fails() {
				require.NoError(t, applyErr)
				return
			}
			require.Error(t, applyErr)
			for what, e := range map[string]error{"plan": plan.Items[0].Err, "apply": applyErr, "report": rep.Items[0].Err} {
				assert.ErrorIs(t, e, release.ErrWithheld, what)
				for _, want := range tc.Withheld() {
					assert.Contains(t, e.Error(), want, what)
				}
			}
		})
	}
}
