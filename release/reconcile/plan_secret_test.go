package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

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

// A value taken from a Secret by valuesFrom and rendered by the chart
// into a ConfigMap is masked in the plan's diff, also after the Secret
// is rotated (the old value is as secret as the new), while the planned
// objects, which are what gets applied, keep it.
func TestPlanMasksSecretDerivedValues(t *testing.T) {
	ctx := context.Background()
	const second = "rotated-CANARY-2"
	reader := valuestest.NewReader().Secret("apps", "ui-secret", map[string][]byte{"values.yaml": []byte("ui:\n  message: 's3cr3t-\"first,value'\n")})
	rec := fixture.Reconciler(t, reader)
	c := memory.New("dev-1")
	rel := fixture.Release()
	rel.Spec.ValuesFrom = []release.ValuesReference{{Kind: "Secret", Name: "ui-secret"}}

	plan := rec.Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Contains(t, plan.Diff, "PODINFO_UI_MESSAGE: (secret sha256:", "the change shows")
	assert.NotContains(t, plan.Diff, "s3cr3t")
	assert.Contains(t, configMapMessage(t, plan), "s3cr3t-\"first,value", "what is applied stays real")

	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	reader.Secret("apps", "ui-secret", map[string][]byte{"values.yaml": []byte("ui:\n  message: " + second + "\n")})
	rel.Generation++
	plan = rec.Plan(ctx, c, rel)
	require.NoError(t, plan.Err)
	assert.Equal(t, reconcile.ActionUpgrade, plan.Action)
	assert.Contains(t, plan.Diff, "-  PODINFO_UI_MESSAGE: (secret sha256:")
	assert.Contains(t, plan.Diff, "+  PODINFO_UI_MESSAGE: (secret sha256:")
	for _, secret := range []string{"s3cr3t", "CANARY"} {
		assert.NotContains(t, plan.Diff, secret)
		data, err := json.Marshal(plan.Values)
		require.NoError(t, err)
		assert.NotContains(t, string(data), secret)
	}
}

func configMapMessage(t *testing.T, p *reconcile.Plan) string {
	t.Helper()
	for _, o := range p.Objects {
		if o.GetKind() == "ConfigMap" {
			data, _ := o.Object["data"].(map[string]any)
			s, _ := data["PODINFO_UI_MESSAGE"].(string)
			return s
		}
	}
	t.Fatal("no ConfigMap planned")
	return ""
}

// A ConfigMap value that came from a Secret and was edited on the
// cluster: the drift report, the Drifted condition and Reconciler.Drift
// show neither the desired (Secret) value nor leak it through a patch,
// while the correction writes the real value back.
func TestDriftMasksSecretDerivedValues(t *testing.T) {
	ctx := context.Background()
	const secret = "drift-CANARY-value"
	reader := valuestest.NewReader().Secret("apps", "ui-secret", map[string][]byte{"values.yaml": []byte("ui:\n  message: " + secret + "\n")})
	rec := fixture.Reconciler(t, reader)
	c := memory.New("dev-1")
	rel := fixture.Release()
	rel.Spec.ValuesFrom = []release.ValuesReference{{Kind: "Secret", Name: "ui-secret"}}
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionWarn}
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	ref := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"}
	cm, err := c.Get(ctx, ref)
	require.NoError(t, err)
	delete(cm.Object, "status")
	require.NoError(t, unstructured.SetNestedField(cm.Object, "edited by hand", "data", "PODINFO_UI_MESSAGE"))
	_, err = c.Update(ctx, cm, "kubectl-edit")
	require.NoError(t, err)

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	require.NotNil(t, res.Drift)
	require.True(t, res.Drift.Drifted())
	drifted := rel.Status.GetCondition(release.ConditionDrifted)
	require.NotNil(t, drifted)
	assert.Contains(t, drifted.Message, "edited by hand", "the change shows")
	report, corrected, err := rec.Drift(ctx, c, rel, reconcile.DriftOptions{Correct: true})
	require.NoError(t, err)
	assert.True(t, corrected)
	for _, out := range []string{drifted.Message, res.Drift.String(), report.String(), fmt.Sprintf("%+v %#v", res.Drift, report)} {
		assert.NotContains(t, out, "CANARY")
	}
	data, err := json.Marshal(report)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "CANARY")

	cm, err = c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, secret, cm.Object["data"].(map[string]any)["PODINFO_UI_MESSAGE"], "the correction writes the real value")
}
