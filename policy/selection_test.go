package policy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pp and cpp build propagation policy documents for table tests.
func pp(ns, name string, priority int, selectors string) string {
	return fmt.Sprintf("apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata: {name: %s, namespace: %s}\nspec:\n  priority: %d\n  resourceSelectors: %s\n", name, ns, priority, selectors)
}

func cpp(name string, priority int, selectors string) string {
	return fmt.Sprintf("apiVersion: policy.karmada.io/v1alpha1\nkind: ClusterPropagationPolicy\nmetadata: {name: %s}\nspec:\n  priority: %d\n  resourceSelectors: %s\n", name, priority, selectors)
}

const (
	selKind   = "[{apiVersion: apps/v1, kind: Deployment}]"
	selLabels = "[{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: web}}}]"
	selName   = "[{apiVersion: apps/v1, kind: Deployment, name: web}]"
)

const webDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {replicas: 3}
`

func TestSelect(t *testing.T) {
	tests := []struct {
		name     string
		policies []string
		obj      string
		want     string // winning Ref.String(); "" = none
		level    MatchLevel
		reason   string
	}{
		{"no policy", nil, webDeployment, "", MatchNone, ""},
		{"kind only", []string{pp("shop", "a", 0, selKind)}, webDeployment, "PropagationPolicy shop/a", MatchAll, "only matching policy (matched by kind)"},
		{"apiVersion must agree", []string{pp("shop", "a", 0, "[{apiVersion: apps/v1beta1, kind: Deployment}]")}, webDeployment, "", MatchNone, ""},
		{"namespaced policy selects only its own namespace", []string{pp("other", "a", 0, selKind)}, webDeployment, "", MatchNone, ""},
		{"cluster policy selects any namespace", []string{cpp("c", 0, selKind)}, webDeployment, "ClusterPropagationPolicy c", MatchAll, ""},
		{"cluster policy selector namespace restricts", []string{cpp("c", 0, "[{apiVersion: apps/v1, kind: Deployment, namespace: other}]")}, webDeployment, "", MatchNone, ""},
		{"name ignores the label selector", []string{pp("shop", "a", 0, "[{apiVersion: apps/v1, kind: Deployment, name: web, labelSelector: {matchLabels: {app: nope}}}]")}, webDeployment, "PropagationPolicy shop/a", MatchName, ""},
		{"wrong name does not fall back to labels", []string{pp("shop", "a", 0, "[{apiVersion: apps/v1, kind: Deployment, name: api, labelSelector: {matchLabels: {app: web}}}]")}, webDeployment, "", MatchNone, ""},
		{"label mismatch", []string{pp("shop", "a", 0, "[{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: api}}}]")}, webDeployment, "", MatchNone, ""},
		{"selectors are ORed and the best level counts", []string{pp("shop", "a", 0, "[{apiVersion: apps/v1, kind: Deployment}, {apiVersion: apps/v1, kind: Deployment, name: web}]"), pp("shop", "b", 0, selLabels)}, webDeployment, "PropagationPolicy shop/a", MatchName, `match by name beats match by labelSelector of PropagationPolicy shop/b`},
		{"namespaced beats cluster despite priority and level", []string{cpp("c", 100, selName), pp("shop", "z", 0, selKind)}, webDeployment, "PropagationPolicy shop/z", MatchAll, "a namespaced policy beats ClusterPropagationPolicy c"},
		{"explicit priority beats implicit", []string{pp("shop", "a", 0, selName), pp("shop", "b", 5, selKind)}, webDeployment, "PropagationPolicy shop/b", MatchAll, "priority 5 beats 0 of PropagationPolicy shop/a"},
		{"implicit priority: labels beat kind", []string{pp("shop", "a", 0, selKind), pp("shop", "b", 0, selLabels)}, webDeployment, "PropagationPolicy shop/b", MatchLabels, ""},
		{"equal: smaller name wins", []string{pp("shop", "beta", 0, selLabels), pp("shop", "alpha", 0, selLabels)}, webDeployment, "PropagationPolicy shop/alpha", MatchLabels, `name "alpha" sorts before "beta" at equal priority and match`},
		{"cluster policies compare the same way", []string{cpp("a", 0, selKind), cpp("b", 1, selKind)}, webDeployment, "ClusterPropagationPolicy b", MatchAll, ""},
		{"binding label beats selectors, namespaced or not", []string{pp("shop", "a", 10, selName), cpp("bound", 0, "[{apiVersion: v1, kind: ConfigMap}]")},
			strings.Replace(webDeployment, "labels: {app: web}", "labels: {app: web, clusterpropagationpolicy.karmada.io/name: bound}", 1),
			"ClusterPropagationPolicy bound", MatchBinding, "the object names it with label clusterpropagationpolicy.karmada.io/name"},
		{"namespaced binding wins over cluster binding", []string{pp("shop", "a", 0, selName), cpp("c", 0, selKind)},
			strings.Replace(webDeployment, "labels: {app: web}", "labels: {app: web, propagationpolicy.karmada.io/name: a, clusterpropagationpolicy.karmada.io/name: c}", 1),
			"PropagationPolicy shop/a", MatchBinding, "the object names it with label propagationpolicy.karmada.io/name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine(t, strings.Join(tt.policies, "---\n"))
			sel, err := e.Select(object(t, tt.obj))
			require.NoError(t, err)
			if tt.want == "" {
				assert.Nil(t, sel)
				return
			}
			require.NotNil(t, sel)
			assert.Equal(t, tt.want, sel.Policy.String())
			assert.Equal(t, tt.level, sel.Level)
			cands, err := e.Candidates(object(t, tt.obj))
			require.NoError(t, err)
			assert.Equal(t, tt.want, cands[0].Policy.String())
			assert.Len(t, cands, len(tt.policies)-countNonMatching(t, e, tt.obj))
			assert.Equal(t, len(cands), sel.Matches)
			if len(cands) > 1 {
				assert.Equal(t, cands[1], *sel.RunnerUp)
			} else {
				assert.Nil(t, sel.RunnerUp)
			}
			if tt.reason != "" {
				assert.Equal(t, tt.reason, sel.Reason)
			}
		})
	}
}

func countNonMatching(t *testing.T, e *Engine, obj string) int {
	cands, err := e.matchPropagation(object(t, obj))
	require.NoError(t, err)
	return len(e.props) - len(cands)
}

func TestSelectBindingErrors(t *testing.T) {
	e := engine(t, pp("shop", "a", 0, selKind))
	tests := []struct {
		name, labels, want string
	}{
		{"missing namespaced policy", "{propagationpolicy.karmada.io/name: nope}", `Deployment shop/web: label propagationpolicy.karmada.io/name="nope" names PropagationPolicy shop/nope, which does not exist`},
		{"missing cluster policy", "{clusterpropagationpolicy.karmada.io/name: gone}", `label clusterpropagationpolicy.karmada.io/name="gone" names ClusterPropagationPolicy gone`},
		{"policy of another namespace", "{propagationpolicy.karmada.io/name: a}", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := strings.Replace(webDeployment, "labels: {app: web}", "labels: "+tt.labels, 1)
			if tt.want == "" {
				doc = strings.Replace(doc, "namespace: shop", "namespace: other", 1)
			}
			_, err := e.Select(object(t, doc))
			require.Error(t, err)
			var be *BindingError
			require.True(t, errors.As(err, &be))
			assert.ErrorIs(t, err, ErrPolicyNotFound)
			if tt.want != "" {
				assert.ErrorContains(t, err, tt.want)
			}
		})
	}
}
