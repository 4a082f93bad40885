package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// TestSecretFieldsAnnotation: release.SecretFieldsAnnotation on a
// HelmRelease whose inline values hold the canary (which the chart puts
// in its fail message) makes the release's values Secret-sourced and
// its Helm errors withheld; it can only add marking: a value that does
// not read as a list of pointers marks all of spec.values, and a
// pointer outside spec.values (the chart version) withholds Helm's
// errors too. Without the annotation the inline values are not Secret
// data and Helm's text is kept.
func TestSecretFieldsAnnotation(t *testing.T) {
	tc := fixture.CanaryCases()[0] // fail .Values.canary
	require.Equal(t, "fail", tc.Name)
	cases := []struct {
		name       string
		annotation *string
		withheld   bool
		masked     bool // the plan's values and Release mask the canary
		whole      bool // and every other value
	}{
		{name: "no annotation"},
		{name: "a values pointer", annotation: new(`["/spec/values/canary"]`), withheld: true, masked: true},
		{name: "all of spec.values", whole: true, annotation: new(`["/spec/values"]`), withheld: true, masked: true},
		{name: "the whole object", whole: true, annotation: new(`[""]`), withheld: true, masked: true},
		{name: "not JSON", whole: true, annotation: new(`canary`), withheld: true, masked: true},
		{name: "empty", whole: true, annotation: new(``), withheld: true, masked: true},
		{name: "not a pointer", whole: true, annotation: new(`["canary"]`), withheld: true, masked: true},
		{name: "the chart version", annotation: new(`["/spec/chart/spec/version"]`), withheld: true},
		{name: "nothing named", annotation: new(`[]`), withheld: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			rec, err := reconcile.New(reconcile.Config{Charts: tc.Charts(), PollInterval: time.Millisecond})
			require.NoError(t, err)
			rel := tc.Release()
			rel.Spec.ValuesFrom = nil
			rel.Spec.Values = map[string]any{"canary": tc.Secret, "other": "shown"}
			if c.annotation != nil {
				rel.Annotations = map[string]string{release.SecretFieldsAnnotation: *c.annotation}
			}
			plan := rec.Plan(ctx, memory.New("dev-1"), rel)
			require.Error(t, plan.Err)
			j, err := json.Marshal(plan)
			require.NoError(t, err)
			values := fmt.Sprint(plan.Values) + string(j)
			if c.masked {
				fixture.AssertNoCanary(t, tc.Secret, map[string]string{"plan": values})
				if c.whole {
					assert.NotContains(t, values, "shown", "all of spec.values is masked")
				} else {
					assert.Contains(t, values, "shown", "what is not marked stays")
				}
			} else {
				assert.Contains(t, string(j), `"canary":"s3\"CANA\\RY,k=1zq"`, "unmarked values are shown")
			}
			_, rerr := rec.Reconcile(ctx, memory.New("dev-1"), rel)
			for what, e := range map[string]error{"plan": plan.Err, "reconcile": rerr} {
				if !c.withheld {
					assert.NotErrorIs(t, e, release.ErrWithheld, what)
					continue
				}
				assert.ErrorIs(t, e, release.ErrWithheld, what)
				fixture.AssertNoCanary(t, tc.Secret, map[string]string{what: e.Error()})
				assert.Contains(t, e.Error(), "HelmRelease apps/canary", what)
			}
		})
	}
}

// TestMarkSecretFields: marking adds to what the annotation lists (sorted,
// without repeats), keeps a value it cannot read as all of spec.values,
// and KeepSecretFields carries the marks of an original to its copy.
func TestMarkSecretFields(t *testing.T) {
	rel := &release.Release{}
	release.MarkSecretFields(rel)
	assert.NotContains(t, rel.Annotations, release.SecretFieldsAnnotation, "nothing to mark")
	release.MarkSecretFields(rel, "/spec/values/b", "/spec/values/a")
	release.MarkSecretFields(rel, "/spec/values/a")
	assert.Equal(t, `["/spec/values/a","/spec/values/b"]`, rel.Annotations[release.SecretFieldsAnnotation])

	bad := &release.Release{}
	bad.Annotations = map[string]string{release.SecretFieldsAnnotation: "not JSON"}
	release.MarkSecretFields(bad, "/spec/values/a")
	assert.Equal(t, `["/spec/values","/spec/values/a"]`, bad.Annotations[release.SecretFieldsAnnotation])

	cp := &release.Release{}
	cp.Annotations = map[string]string{release.SecretFieldsAnnotation: `["/spec/values/z"]`}
	release.KeepSecretFields(cp, rel)
	assert.Equal(t, `["/spec/values/a","/spec/values/b","/spec/values/z"]`, cp.Annotations[release.SecretFieldsAnnotation])
}
