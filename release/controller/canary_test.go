package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
)

// The canary suite of the controller: a chart uses a valuesFrom Secret's
// value in each way that leaks it into Helm's errors, or renders it into
// a Secret. Neither the value nor a form of it reaches the Reconcile
// error, the status written through the status subresource (every
// condition, the history), the events, the logs or the metrics; the
// withheld error names the release, the chart and the template file and
// line.
func TestSecretCanaryReachesNoControllerOutput(t *testing.T) {
	for _, tc := range fixture.CanaryCases() {
		// With RetryOnFailure a failed install is logged and retried
		// after its interval; with the default strategy it is returned.
		for _, retry := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s retry=%v", tc.Name, retry), func(t *testing.T) {
				rel := tc.Release()
				if retry {
					rel.Spec.Install = &release.Install{Strategy: &release.InstallStrategy{Name: release.ActionStrategyRetryOnFailure}}
				}
				checkControllerCanary(t, tc, rel, retry)
			})
		}
	}
}

func checkControllerCanary(t *testing.T, tc fixture.CanaryCase, rel *release.Release, retry bool) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "canary-values"}, Data: map[string][]byte{"values.yaml": tc.SecretValues()}}
	e := newEnv(t, Config{Charts: tc.Charts()}, rel, secret)
	var logs strings.Builder
	ctx := ctrl.LoggerInto(context.Background(), funcr.New(func(prefix, args string) {
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10}))
	outputs := map[string]string{}
	var errs []error
	// Twice: the second reconcile meets the failure (or the installed
	// release) the first left.
	for i := 0; i < 2; i++ {
		res, err := e.r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "canary"}})
		outputs[fmt.Sprintf("reconcile %d", i)] = fmt.Sprintf("%v %+v %v %+v", res, res, err, err)
		errs = append(errs, err)
	}
	got, st := e.get("canary")
	data, err := json.Marshal(got)
	require.NoError(t, err)
	outputs["HelmRelease JSON"] = string(data)
	outputs["status"] = fmt.Sprintf("%v %+v", st, st)
	for _, c := range st.Conditions {
		outputs["condition "+c.Type] = c.Reason + ": " + c.Message
	}
	events := e.drainEvents()
	require.NotEmpty(t, events)
	outputs["events"] = strings.Join(events, "\n")
	outputs["logs"] = logs.String()
	families, err := e.reg.Gather()
	require.NoError(t, err)
	outputs["metrics"] = fmt.Sprint(families)
	fixture.AssertNoCanary(t, tc.Secret, outputs)

	if !tc.Fails() {
		assert.Equal(t, "True InstallSucceeded", condition(st, release.ConditionReady))
		return
	}
	ready := st.GetCondition(release.ConditionReady)
	require.NotNil(t, ready)
	shown := map[string]string{"Ready": ready.Message, "event": events[0]}
	if retry {
		shown["logs"] = outputs["logs"]
	} else {
		assert.ErrorIs(t, errs[0], release.ErrWithheld)
		shown["error"] = fmt.Sprint(errs[0])
	}
	for what, text := range shown {
		for _, want := range tc.Withheld() {
			assert.Contains(t, text, want, what)
		}
	}
}
