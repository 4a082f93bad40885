package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values/valuestest"
)

// The canary suite of one release: a valuesFrom Secret's value is used by
// a chart in each way that leaks it into Helm's errors, or rendered into
// a Secret and a ConfigMap. Neither the value nor a form of it reaches
// the reconcile's error, the status (conditions, history), the Result,
// the plan (its error, JSON and fmt); the withheld error names the
// release, the chart and the template file and line.
func TestSecretCanaryHelmErrorsReachNoOutput(t *testing.T) {
	for _, tc := range fixture.CanaryCases() {
		t.Run(tc.Name, func(t *testing.T) {
			ctx := context.Background()
			reader := valuestest.NewReader().Secret("apps", "canary-values", map[string][]byte{"values.yaml": tc.SecretValues()})
			rec, err := reconcile.New(reconcile.Config{Charts: tc.Charts(), Values: reader, PollInterval: time.Millisecond})
			require.NoError(t, err)
			c := memory.New("dev-1")
			rel := tc.Release()
			outputs := map[string]string{}
			show := func(what string, v any) {
				outputs[what] = fmt.Sprintf("%v | %+v | %#v | %s", v, v, v, v)
				if data, err := json.Marshal(v); err == nil {
					outputs[what+" JSON"] = string(data)
				}
			}

			plan := rec.Plan(ctx, c, rel)
			show("plan", plan)
			show("plan value", *plan)
			show("plan error", plan.Err)
			res, err := rec.Reconcile(ctx, c, rel)
			show("reconcile error", err)
			show("result", res)
			show("status", rel.Status)
			for _, cond := range rel.Status.Conditions {
				outputs["condition "+cond.Type] = cond.Reason + ": " + cond.Message
			}
			for i, s := range rel.Status.History {
				show(fmt.Sprintf("history[%d]", i), *s)
			}
			fixture.AssertNoCanary(t, tc.Secret, outputs)

			if !tc.Fails() {
				require.NoError(t, plan.Err)
				require.NoError(t, err)
				secret, err := c.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespace: "apps", Name: "canary"})
				require.NoError(t, err)
				assert.Contains(t, fmt.Sprint(secret.Object), tc.Secret, "what is applied stays real")
				assert.Contains(t, outputs["plan JSON"], `"password":"(sha256:`, "the Secret object shows a digest")
				return
			}
			for what, e := range map[string]error{"plan": plan.Err, "reconcile": err} {
				require.Error(t, e, what)
				assert.ErrorIs(t, e, release.ErrWithheld, what)
				for _, want := range tc.Withheld() {
					assert.Contains(t, e.Error(), want, what)
				}
			}
			var w *release.WithheldError
			require.True(t, errors.As(err, &w))
			assert.Equal(t, "install", w.Step)
			assert.Contains(t, rel.Status.GetCondition(release.ConditionReady).Message, "withheld")
		})
	}
}

// A release whose values hold no Secret data keeps Helm's full error
// text, and so does one with Config.InsecureHelmErrorText.
func TestHelmErrorTextKeptWithoutSecretValues(t *testing.T) {
	tc := fixture.CanaryCases()[0]
	ctx := context.Background()
	cases := []struct {
		name     string
		insecure bool
		from     bool
	}{
		{name: "inline values", from: false},
		{name: "Secret values, insecure opt-out", insecure: true, from: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reader := valuestest.NewReader().Secret("apps", "canary-values", map[string][]byte{"values.yaml": tc.SecretValues()})
			rec, err := reconcile.New(reconcile.Config{Charts: tc.Charts(), Values: reader, PollInterval: time.Millisecond, InsecureHelmErrorText: c.insecure})
			require.NoError(t, err)
			rel := tc.Release()
			if !c.from {
				rel.Spec.ValuesFrom = nil
				rel.Spec.Values = map[string]any{"canary": "inline-value"}
			}
			plan := rec.Plan(ctx, memory.New("dev-1"), rel)
			_, err = rec.Reconcile(ctx, memory.New("dev-1"), rel)
			want := "inline-value"
			if c.from {
				want = tc.Secret
			}
			for _, e := range []error{plan.Err, err} {
				require.Error(t, e)
				assert.NotErrorIs(t, e, release.ErrWithheld)
				assert.Contains(t, e.Error(), "execution error at ("+fixture.CanaryFile+":5:")
				assert.True(t, strings.Contains(e.Error(), want), "Helm's text: %v", e)
			}
		})
	}
}

// A readiness wait and a health check report what the cluster says of
// the objects, which may quote a rendered Secret value: for a release
// with Secret-derived values both are withheld, naming the chart and
// the wait (an upgrade's here); without, the objects' messages show.
func TestSecretCanaryReadinessWithheld(t *testing.T) {
	cases := []struct {
		name   string
		secret bool
	}{
		{name: "Secret values", secret: true},
		{name: "inline values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			reader := valuestest.NewReader().Secret("apps", "ui", map[string][]byte{"values.yaml": []byte("ui:\n  message: x\n")})
			rec := fixture.Reconciler(t, reader)
			broken := false
			c := memory.New("dev-1", memory.WithHealth(func(u *unstructured.Unstructured) memory.Health {
				if broken && u.GetKind() == "Deployment" {
					return memory.Health{Failed: true, Message: "crash: bad config " + fixture.Canary}
				}
				return memory.Health{Ready: true}
			}))
			rel := fixture.Release()
			if tc.secret {
				rel.Spec.ValuesFrom = []release.ValuesReference{{Kind: "Secret", Name: "ui"}}
			}
			_, err := rec.Reconcile(ctx, c, rel)
			require.NoError(t, err)
			broken = true
			health := rec.Health(ctx, c, rel)
			require.Error(t, health)
			rel.Spec.Values["replicaCount"] = 3
			rel.Generation++
			_, err = rec.Reconcile(ctx, c, rel)
			require.Error(t, err)
			if !tc.secret {
				assert.Contains(t, err.Error(), fixture.Canary, "a release without Secret values keeps the text")
				var nr *release.NotReadyError
				assert.ErrorAs(t, health, &nr)
				assert.Contains(t, health.Error(), fixture.Canary)
				return
			}
			outputs := map[string]string{"reconcile": err.Error(), "health": health.Error(), "status": fmt.Sprintf("%+v", rel.Status)}
			for _, cond := range rel.Status.Conditions {
				outputs["condition "+cond.Type] = cond.Message
			}
			fixture.AssertNoCanary(t, fixture.Canary, outputs)
			assert.Contains(t, err.Error(), "HelmRelease apps/podinfo: upgrade failed at chart podinfo 6.5.0, while waiting for readiness (5m0s)")
			assert.Contains(t, health.Error(), "HelmRelease apps/podinfo: health failed at chart podinfo 6.5.0, while checking readiness")
		})
	}
}
