package controller

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
)

// TestDependencyReadyExpr: as helm-controller, a dependsOn entry with a
// readyExpr (self the dependent, dep the dependency) is ready when the
// expression holds, in place of the dependency's Ready condition; with
// AdditiveCELDependencyCheck the dependency must be Ready too.
func TestDependencyReadyExpr(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		additive   bool
		want, msg  string
	}{
		{"expression holds: Ready not needed", "dep.spec.releaseName == 'backend' && self.metadata.name == 'frontend'", false, "True InstallSucceeded", ""},
		{"expression false", "dep.spec.releaseName == 'other'", false, "False DependencyNotReady", "dependency 'apps/backend' is not ready according to readyExpr eval"},
		{"additive: Ready needed too", "dep.spec.releaseName == 'backend'", true, "False DependencyNotReady", "dependency 'apps/backend' is not ready"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep := strings.Replace(podinfoYAML, "name: podinfo,", "name: backend,", 1)
			dep = strings.Replace(dep, "  values:", "  releaseName: backend\n  values:", 1)
			app := strings.Replace(podinfoYAML, "name: podinfo,", "name: frontend,", 1) +
				"  releaseName: frontend\n  dependsOn:\n    - name: backend\n      readyExpr: \"" + tc.expr + "\"\n"
			e := newEnv(t, Config{AdditiveCELDependencyCheck: tc.additive}, hr(t, dep), hr(t, app))

			_, err := e.reconcile("frontend")
			require.NoError(t, err)
			_, st := e.get("frontend")
			assert.Equal(t, tc.want, condition(st, release.ConditionReady))
			if tc.msg != "" {
				assert.Equal(t, tc.msg, st.GetCondition(release.ConditionReady).Message)
				assert.Empty(t, st.History, "nothing installed")
			}
		})
	}
}
