package fleet_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// ownIdentityOnly is a cluster without the Impersonator role.
type ownIdentityOnly struct{ release.Cluster }

// A release's service account is honoured on every member, or the
// release fails there: never run with the member's own credentials.
func TestFleetServiceAccount(t *testing.T) {
	const deployer = "system:serviceaccount:apps:deployer"
	denied := errors.New("impersonation denied")
	tests := []struct {
		name       string
		specSA     string
		defaultSA  string
		allow      func(string) error
		wantUser   string // on m1 (impersonating); "" for none
		wantM1Err  string
		wantM2Err  string // m2 cannot impersonate
		m2Installs bool
	}{
		{name: "spec.serviceAccountName", specSA: "deployer", wantUser: deployer,
			wantM2Err: `release apps/podinfo on member m2: spec.serviceAccountName "deployer": cluster m2: cluster cannot impersonate`},
		{name: "DefaultServiceAccount", defaultSA: "tenant", wantUser: "system:serviceaccount:apps:tenant",
			wantM2Err: `release apps/podinfo on member m2: spec.serviceAccountName (empty: the fleet's DefaultServiceAccount) "tenant"`},
		{name: "spec wins over the default", specSA: "deployer", defaultSA: "tenant", wantUser: deployer,
			wantM2Err: `spec.serviceAccountName "deployer"`},
		{name: "member refuses the impersonation", specSA: "deployer", allow: func(string) error { return denied },
			wantM1Err: `release apps/podinfo on member m1: spec.serviceAccountName "deployer": cluster m1: impersonate ` + deployer + `: impersonation denied`,
			wantM2Err: "cluster cannot impersonate"},
		{name: "none: the members' own identity", m2Installs: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var revoked atomic.Bool // the member withdraws the impersonate permission
			m1, m2 := memory.New("m1", memory.WithImpersonation(func(user string) error {
				if revoked.Load() {
					return denied
				}
				if tc.allow != nil {
					return tc.allow(user)
				}
				return nil
			})), memory.New("m2")
			labels := map[string]string{"tier": "apps"}
			rec, err := reconcile.New(reconcile.Config{Charts: fixture.Charts(), PollInterval: time.Millisecond})
			require.NoError(t, err)
			f, err := fleet.New(fleet.Config{Reconciler: rec, DefaultServiceAccount: tc.defaultSA, Members: []release.Member{
				{Cluster: m1, Facts: policy.Cluster{Labels: labels}},
				{Cluster: ownIdentityOnly{m2}, Facts: policy.Cluster{Labels: labels}},
			}})
			require.NoError(t, err)
			in := decodeInputs(t, fleetYAML)
			in.Releases[0].Spec.ServiceAccountName = tc.specSA

			plan, err := f.Plan(ctx, in)
			require.NoError(t, err)
			rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
			if tc.wantM1Err != "" || tc.wantM2Err != "" {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			byMember := map[string]fleet.ItemReport{}
			for _, it := range rep.Items {
				byMember[it.Key.Cluster] = it
			}
			check := func(member, wantErr string, c *memory.Cluster) {
				it := byMember[member]
				if wantErr == "" {
					require.NoError(t, it.Err, member)
					assert.Equal(t, depgraph.Succeeded, it.State, member)
					assert.Equal(t, []string{"podinfo 6.5.0 deployed"}, helmList(t, c), member)
					return
				}
				require.Error(t, it.Err, member)
				assert.Contains(t, it.Err.Error(), wantErr)
				assert.Empty(t, helmList(t, c), "%s: nothing installed with the member's own credentials", member)
			}
			check("m1", tc.wantM1Err, m1)
			check("m2", tc.wantM2Err, m2)
			if tc.wantM2Err != "" {
				assert.ErrorIs(t, byMember["m2"].Err, release.ErrCannotImpersonate)
			}
			var users []string
			for _, im := range m1.Impersonations() {
				users = append(users, im.User)
			}
			if tc.wantUser == "" {
				assert.Empty(t, users)
				return
			}
			assert.Contains(t, m1.Impersonations(), memory.Impersonation{User: tc.wantUser, Call: "HelmConfig", Namespace: "apps"})
			assert.Subset(t, []string{tc.wantUser}, users, "every call acts as the service account")

			// Drift checks and the uninstall act as it too: once the
			// member refuses the impersonation, they fail.
			revoked.Store(true)
			drift, err := f.Drift(ctx, false)
			require.ErrorIs(t, err, denied)
			require.Len(t, drift.Items, 1)
			require.ErrorIs(t, drift.Items[0].Err, denied)
			in.Releases = nil
			in.Policies = policy.Set{}
			plan, err = f.Plan(ctx, in)
			require.NoError(t, err)
			_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.ErrorIs(t, err, denied)
			assert.Equal(t, []string{"podinfo 6.5.0 deployed"}, helmList(t, m1), "not uninstalled with the member's own credentials")
			revoked.Store(false)
			_, err = f.Apply(ctx, plan, fleet.ApplyOptions{})
			require.NoError(t, err, "m2 got nothing, so it has nothing to uninstall")
			assert.Empty(t, helmList(t, m1), "uninstalled from m1")
		})
	}
}
