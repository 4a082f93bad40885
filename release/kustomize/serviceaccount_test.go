package kustomize_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

// objectsOnly is a cluster client without the release.Impersonator role.
type objectsOnly struct{ release.ObjectClient }

// TestServiceAccount: spec.serviceAccountName, else the reconciler's
// DefaultServiceAccount, is acted as for every write of Plan, Reconcile
// and Delete; a cluster client that cannot impersonate fails the
// Kustomization, which is never applied with the client's own
// credentials.
func TestServiceAccount(t *testing.T) {
	for _, tc := range []struct {
		name, spec, def string
		want            string // the user every write is made as; "" for none
	}{
		{"spec", "deployer", "", "system:serviceaccount:apps:deployer"},
		{"default", "", "tenant", "system:serviceaccount:apps:tenant"},
		{"spec over default", "deployer", "tenant", "system:serviceaccount:apps:deployer"},
		{"neither", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &changingTree{}
			src.set("main@sha1:1", appTree("a"))
			r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) { cfg.DefaultServiceAccount = tc.def })
			c := memory.New("dev")
			k := ks("./app", func(k *release.Kustomization) { k.Spec.ServiceAccountName = tc.spec; k.Spec.Prune = true })

			_, err := r.Plan(t.Context(), c, k)
			require.NoError(t, err)
			_, err = r.Reconcile(t.Context(), c, k)
			require.NoError(t, err)
			assert.Equal(t, metav1.ConditionTrue, ready(t, k).Status)
			require.NoError(t, r.Delete(t.Context(), c, k))

			users := map[string]bool{}
			calls := map[string]bool{}
			for _, im := range c.Impersonations() {
				users[im.User] = true
				calls[im.Call] = true
			}
			if tc.want == "" {
				assert.Empty(t, users)
				return
			}
			assert.Equal(t, map[string]bool{tc.want: true}, users)
			assert.True(t, calls["Apply"], "applied as %s", tc.want)
			assert.True(t, calls["Delete"], "deleted as %s", tc.want)
		})
	}

	t.Run("a cluster that cannot impersonate", func(t *testing.T) {
		src := &changingTree{}
		src.set("main@sha1:1", appTree("a"))
		r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) { cfg.DefaultServiceAccount = "tenant" })
		c := memory.New("dev")
		before := snapshot(c)
		k := ks("./app")

		_, err := r.Plan(t.Context(), objectsOnly{c}, k)
		require.ErrorIs(t, err, release.ErrCannotImpersonate)
		_, err = r.Reconcile(t.Context(), objectsOnly{c}, k)
		require.ErrorIs(t, err, release.ErrCannotImpersonate)
		assert.Contains(t, err.Error(), "Kustomization apps/app: spec.serviceAccountName (empty: the reconciler's DefaultServiceAccount): the cluster client cannot act as system:serviceaccount:apps:tenant")
		cond := ready(t, k)
		assert.Equal(t, metav1.ConditionFalse, cond.Status)
		assert.Equal(t, release.ReasonReconciliationFailed, cond.Reason)
		assert.Equal(t, before, snapshot(c), "nothing applied with the client's own credentials")
	})
}
