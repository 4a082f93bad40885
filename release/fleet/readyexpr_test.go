package fleet_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/depgraph"
	"github.com/helmfleet/helmfleet/release/fleet"
)

const (
	// depNotReady accepts a dependency whose Ready condition is False.
	depNotReady = "dep.status.conditions.exists(c, c.type == 'Ready' && c.status == 'False')"
	// depReady accepts a dependency whose Ready condition is True.
	depReady = "dep.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')"
)

// readyExprInputs places, on prod-eu-1, the release database (chart
// version dbVersion, failing fast), the release podinfo and the
// Kustomization apps, both depending on database with readyExpr expr,
// and the release web, depending on apps with a readyExpr that holds
// when apps is Ready (reading self too).
func readyExprInputs(t *testing.T, dbVersion, expr string) fleet.Inputs {
	t.Helper()
	on := "clusterNames: [prod-eu-1]"
	return decodeInputs(t,
		strings.Replace(hrYAML("database", "  timeout: 50ms\n"), `"6.5.0"`, fmt.Sprintf("%q", dbVersion), 1)+
			placeOn("database", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", on)+
			hrYAML("podinfo", fmt.Sprintf("  dependsOn: [{name: database, readyExpr: %q}]\n", expr))+
			placeOn("podinfo", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", on)+
			kustomizationYAML("apps", "./apps", fmt.Sprintf("  dependsOn: [{kind: HelmRelease, name: database, namespace: apps, readyExpr: %q}]\n", expr))+
			placeOn("apps", "kustomize.toolkit.fluxcd.io/v1", "Kustomization", "flux-system", on)+
			hrYAML("web", fmt.Sprintf("  dependsOn: [{kind: Kustomization, name: apps, namespace: flux-system, readyExpr: %q}]\n",
				depReady+" && self.metadata.name == 'web'"))+
			placeOn("web", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", on))
}

// TestFleetReadyExpr: a dependsOn entry's readyExpr decides whether the
// dependency is ready, over its status after apply, for HelmReleases and
// Kustomizations on either side, as helm-controller and
// kustomize-controller do: it replaces the Ready check, or with
// AdditiveCELDependencyCheck must hold as well.
func TestFleetReadyExpr(t *testing.T) {
	db := fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "database"}
	podinfo := fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "podinfo"}
	web := fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "web"}
	apps := kkey("prod-eu-1", "apps")
	for name, tc := range map[string]struct {
		dbVersion, expr string
		additive        bool
		dbState         depgraph.State
		state           depgraph.State // of podinfo, apps and web
		errs            []string       // in podinfo's and apps' errors
	}{
		"accepts a dependency that is not Ready": {
			dbVersion: "9.9.9", expr: depNotReady, dbState: depgraph.Failed, state: depgraph.Succeeded,
		},
		"additive: the dependency must be Ready too": {
			dbVersion: "9.9.9", expr: depNotReady, additive: true, dbState: depgraph.Failed, state: depgraph.Skipped,
			errs: []string{"skipped: dependency prod-eu-1:apps/database failed"},
		},
		"rejects a Ready dependency": {
			dbVersion: "6.5.0", expr: depNotReady, dbState: depgraph.Succeeded, state: depgraph.Skipped,
			errs: []string{"skipped: dependency prod-eu-1:apps/database is not ready according to spec.dependsOn[0].readyExpr: " + depNotReady},
		},
		"additive: a rejecting expression holds back a Ready dependency": {
			dbVersion: "6.5.0", expr: depNotReady, additive: true, dbState: depgraph.Succeeded, state: depgraph.Skipped,
			errs: []string{"spec.dependsOn[0].readyExpr: " + depNotReady},
		},
		"additive: both hold": {
			dbVersion: "6.5.0", expr: depReady, additive: true, dbState: depgraph.Succeeded, state: depgraph.Succeeded,
		},
		"an expression error names object, field, expression and CEL's message": {
			dbVersion: "6.5.0", expr: "dep.status.nope == 'x'", dbState: depgraph.Succeeded, state: depgraph.Skipped,
			errs: []string{`dependency prod-eu-1:apps/database: spec.dependsOn[0].readyExpr: evaluating "dep.status.nope == 'x'": no such key: nope`},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tf := kustTestFleet(t, nil, nil, func(c *fleet.Config) { c.AdditiveCELDependencyCheck = tc.additive })
			plan, err := tf.fleet.Plan(ctx, readyExprInputs(t, tc.dbVersion, tc.expr))
			require.NoError(t, err)
			var warnings []string
			for _, it := range plan.Items {
				warnings = append(warnings, it.Warnings...)
			}
			for _, it := range plan.Kustomizations {
				warnings = append(warnings, it.Warnings...)
			}
			for _, w := range warnings {
				assert.NotContains(t, w, "readyExpr", "acted on, not warned")
			}
			rep, _ := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{})
			items := map[fleet.Key]fleet.ItemReport{}
			for _, it := range rep.Items {
				items[it.Key] = it
			}
			assert.Equal(t, tc.dbState, items[db].State, rep.Table())
			for _, k := range []fleet.Key{podinfo, apps, web} {
				assert.Equal(t, tc.state, items[k].State, "%s: %s", k, rep.Table())
			}
			for _, k := range []fleet.Key{podinfo, apps} {
				for _, want := range tc.errs {
					require.Error(t, items[k].Err, k)
					assert.Contains(t, items[k].Err.Error(), want, k)
				}
			}
			if strings.Contains(name, "expression error") {
				assert.Contains(t, items[podinfo].Err.Error(), "HelmRelease apps/podinfo: ")
				assert.Contains(t, items[apps].Err.Error(), "Kustomization flux-system/apps: ")
			}
		})
	}
}

// TestFleetReadyExprAcrossWaves: a dependency in an earlier wave, on
// another member, is judged by the readyExpr too: one rejecting the
// Ready database holds podinfo back on the members of the later wave.
func TestFleetReadyExprAcrossWaves(t *testing.T) {
	ctx := context.Background()
	tf := kustTestFleet(t, nil, nil)
	in := decodeInputs(t, hrYAML("database", "")+
		placeOn("database", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [prod-eu-1]")+
		hrYAML("podinfo", fmt.Sprintf("  dependsOn: [{name: database, readyExpr: %q}]\n", depNotReady))+
		placeOn("podinfo", "helm.toolkit.fluxcd.io/v2", "HelmRelease", "apps", "clusterNames: [dev-1]"))
	plan, err := tf.fleet.Plan(ctx, in)
	require.NoError(t, err)
	rep, err := tf.fleet.Apply(ctx, plan, fleet.ApplyOptions{Rollout: &fleet.Rollout{
		Waves: []fleet.Wave{{Name: "prod", Selector: "env=prod"}, {Name: "dev", Selector: "env=dev"}},
	}})
	require.Error(t, err)
	items := map[fleet.Key]fleet.ItemReport{}
	for _, it := range rep.Items {
		items[it.Key] = it
	}
	assert.Equal(t, depgraph.Succeeded, items[fleet.Key{Cluster: "prod-eu-1", Namespace: "apps", Name: "database"}].State, rep.Table())
	app := items[fleet.Key{Cluster: "dev-1", Namespace: "apps", Name: "podinfo"}]
	assert.Equal(t, depgraph.Failed, app.State, rep.Table())
	require.Error(t, app.Err)
	assert.Equal(t, "dependency prod-eu-1:apps/database is not ready according to spec.dependsOn[0].readyExpr: "+depNotReady, app.Err.Error())
}
