package fleet_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// kyvernoStandIn is a stand-in, not Kyverno: it replaces the manifests
// of oci://ghcr.io/kyverno/manifests/kyverno:v1.14.4, which the
// OCIRepository flux-system/kyverno-controller of
// infrastructure/kyverno/source.yaml serves to the Kustomization
// kyverno-controller, with only the namespace and the ClusterPolicy CRD
// that the kyverno-policies Kustomization needs.
var kyvernoStandIn = fstest.MapFS{
	"kyverno.yaml": {Data: []byte(`apiVersion: v1
kind: Namespace
metadata: {name: kyverno}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterpolicies.kyverno.io}
spec:
  group: kyverno.io
  names: {kind: ClusterPolicy, listKind: ClusterPolicyList, plural: clusterpolicies, singular: clusterpolicy}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)},
}

// edited returns tree as a MapFS with, in file name, old replaced by
// new (which must occur).
func edited(t *testing.T, tree fs.FS, name, old, new string) fstest.MapFS {
	t.Helper()
	out := fstest.MapFS{}
	require.NoError(t, fs.WalkDir(tree, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(tree, p)
		out[p] = &fstest.MapFile{Data: b}
		return err
	}))
	f, ok := out[name]
	require.True(t, ok, name)
	require.Contains(t, string(f.Data), old, name)
	f.Data = []byte(strings.Replace(string(f.Data), old, new, 1))
	return out
}

// tenantRBAC is a member that enforces what the repository's RBAC
// grants, as an API server would (the in-memory cluster enforces none):
// a service account of flux-system writes anywhere (the cluster-admin
// binding `flux bootstrap` creates, which gotk-components.yaml leaves
// out), any other only in a namespace where a RoleBinding names it as a
// subject, such as tenants/base/dev-team/rbac.yaml's apps/gotk-reconciler.
type tenantRBAC struct{ *memory.Cluster }

// Impersonate returns the member acting as user, refusing its writes
// that no RoleBinding allows.
func (c tenantRBAC) Impersonate(user string) (release.Cluster, error) {
	v, err := c.Cluster.Impersonate(user)
	if err != nil {
		return nil, err
	}
	sa := strings.Split(strings.TrimPrefix(user, "system:serviceaccount:"), ":")
	if len(sa) != 2 || sa[0] == "flux-system" {
		return v, nil
	}
	return &boundView{Cluster: v, namespace: sa[0], name: sa[1]}, nil
}

// boundView is a tenant's service account, allowed to write where a
// RoleBinding names it.
type boundView struct {
	release.Cluster
	namespace, name string
}

func (b *boundView) allow(ctx context.Context, ns string) error {
	if ns != "" {
		rbs, err := b.List(ctx, schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, ns, nil)
		if err != nil {
			return err
		}
		for _, rb := range rbs {
			subjects, _, _ := unstructured.NestedSlice(rb.Object, "subjects")
			for _, s := range subjects {
				m, _ := s.(map[string]any)
				if m["kind"] == "ServiceAccount" && m["name"] == b.name && m["namespace"] == b.namespace {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("forbidden: system:serviceaccount:%s:%s cannot write in namespace %q", b.namespace, b.name, ns)
}

func (b *boundView) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	if err := b.allow(ctx, obj.GetNamespace()); err != nil {
		return nil, err
	}
	return b.Cluster.Apply(ctx, obj, opts)
}

func (b *boundView) Patch(ctx context.Context, ref release.ObjectRef, patch []byte, opts release.PatchOptions) (*unstructured.Unstructured, error) {
	if err := b.allow(ctx, ref.Namespace); err != nil {
		return nil, err
	}
	return b.Cluster.(release.Patcher).Patch(ctx, ref, patch, opts)
}

func (b *boundView) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	if err := b.allow(ctx, ref.Namespace); err != nil {
		return err
	}
	return b.Cluster.Delete(ctx, ref, opts)
}

// multiTenancyFleet runs root (fluxcd/flux2-multi-tenancy) with tenant
// as the tree of the dev-team tenant's GitRepository apps/dev-team, on
// members that enforce the repository's RBAC (tenantRBAC), and records
// the fleet's events.
func multiTenancyFleet(t *testing.T, root, tenant fs.FS) (*fleet.Fleet, map[string]*memory.Cluster, func() []fleet.Event) {
	t.Helper()
	cs := map[string]*memory.Cluster{"staging": memory.New("staging"), "production": memory.New("production")}
	var mu sync.Mutex
	var events []fleet.Event
	f, err := fleet.New(fleet.Config{
		Members: []release.Member{
			{Cluster: tenantRBAC{cs["staging"]}, Facts: policy.Cluster{Labels: map[string]string{"env": "staging"}}},
			{Cluster: tenantRBAC{cs["production"]}, Facts: policy.Cluster{Labels: map[string]string{"env": "production"}}},
		},
		Repository: &fleet.Repository{Root: root, Revision: "main@sha1:192da05", Charts: &anyCharts{},
			Sources: kustomize.MapSources{
				"OCIRepository/flux-system/kyverno-controller": {FS: kyvernoStandIn, Revision: "v1.14.4@sha256:1"},
				"GitRepository/apps/dev-team":                  {FS: tenant, Revision: "dev-team@sha1:0b99b5c"},
			}},
		ReconcilerConfig: &reconcile.Config{PollInterval: time.Millisecond},
		// The controller flags clusters/<env>/flux-system/kustomization.yaml
		// sets, for kustomize-controller and helm-controller:
		// --no-cross-namespace-refs=true, --default-service-account=default.
		KustomizeConfig:       &kustomize.ReconcilerConfig{NoCrossNamespaceRefs: true, DefaultServiceAccount: "default"},
		NoCrossNamespaceRefs:  true,
		DefaultServiceAccount: "default",
		Events: func(e fleet.Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		},
	})
	require.NoError(t, err)
	return f, cs, func() []fleet.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]fleet.Event(nil), events...)
	}
}

// TestRepositoryFluxMultiTenancy runs fluxcd/flux2-multi-tenancy
// (testdata, Apache-2.0, LICENSE and NOTICE with the commit beside it) on
// staging and production through Config.Repository, with its dev-team
// tenant's GitRepository served from the tenant's branch (testdata
// flux2-multi-tenancy-dev-team) through Repository.Sources, and a
// stand-in (kyvernoStandIn) for Kyverno's OCI manifests.
func TestRepositoryFluxMultiTenancy(t *testing.T) {
	ctx := context.Background()
	in := decodeInputs(t, bootstrapPolicies)
	root := os.DirFS("testdata/flux2-multi-tenancy")
	tenant := os.DirFS("testdata/flux2-multi-tenancy-dev-team")
	members := []string{"staging", "production"}
	key := func(m, ns, name string) fleet.Key {
		return fleet.Key{Cluster: m, Namespace: ns, Name: name, Kind: fleet.KindKustomization}
	}

	t.Run("as published", func(t *testing.T) {
		f, _, _ := multiTenancyFleet(t, root, tenant)
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		for _, m := range members {
			kp, ok := plan.Kustomization(key(m, "apps", "dev-team"))
			require.True(t, ok, "%s: the tenants Kustomization produced the tenant's\n%s", m, plan.Table())
			// The tenant's 2020 HelmRepository is refused, naming the
			// object, the field and the value.
			require.Error(t, kp.Err, m)
			for _, s := range []string{"member " + m, "HelmRepository apps/podinfo", "apiVersion", `"source.toolkit.fluxcd.io/v1beta1"`} {
				assert.Contains(t, kp.Err.Error(), s, m)
			}
		}
	})

	// The repository as a user runs it today: the tenant's
	// HelmRepository moved to source.toolkit.fluxcd.io/v1, and the
	// keyless cosign verification of the Kyverno OCIRepository dropped
	// (refused: "keyless cosign verification (no secretRef) is not
	// supported yet").
	root = edited(t, root, "infrastructure/kyverno/source.yaml", "  verify:\n    provider: cosign\n", "")
	tenant = edited(t, tenant, "base/podinfo-repository.yaml", "source.toolkit.fluxcd.io/v1beta1", "source.toolkit.fluxcd.io/v1")

	t.Run("runs", func(t *testing.T) {
		f, cs, events := multiTenancyFleet(t, root, tenant)
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		require.Empty(t, plan.Errors, plan.Table())
		rep, err := f.Apply(ctx, plan, fleet.ApplyOptions{})
		require.NoError(t, err, rep.Table())

		for _, m := range members {
			ks := func(name string) fleet.Key { return key(m, "flux-system", name) }
			podinfo := fleet.Key{Cluster: m, Namespace: "apps", Name: "podinfo"}
			// Each unit starts after what it depends on is ready:
			// dependsOn, and the Kustomization that produces it.
			order := [][2]fleet.Key{
				{ks("flux-system"), ks("kyverno")},
				{ks("kyverno"), ks("kyverno-controller")},
				{ks("kyverno"), ks("kyverno-policies")},
				{ks("kyverno-policies"), ks("tenants")},
				{ks("tenants"), key(m, "apps", "dev-team")},
				{key(m, "apps", "dev-team"), podinfo},
			}
			at := map[string]int{}
			for i, e := range events() {
				at[string(e.Kind)+" "+e.Key.String()] = i
			}
			for _, o := range order {
				ready, ok := at["ready "+o[0].String()]
				require.True(t, ok, "%s ready\n%s", o[0], rep.Table())
				started, ok := at["started "+o[1].String()]
				require.True(t, ok, "%s started", o[1])
				assert.Less(t, ready, started, "%s starts after %s is ready", o[1], o[0])
			}
			_, ok := at["ready "+podinfo.String()]
			assert.True(t, ok, "%s ready", podinfo)

			// Per-environment patches reach their member.
			kp, ok := plan.Kustomization(key(m, "apps", "dev-team"))
			require.True(t, ok)
			assert.Equal(t, "./"+m, kp.Kustomization.Spec.Path, "%s: tenants/%s/dev-team-patch.yaml", m, m)
			p, ok := plan.Item(podinfo)
			require.True(t, ok)
			assert.Equal(t, map[string]string{"staging": "1", "production": "2"}[m], fmt.Sprint(p.Release.Spec.Values["replicaCount"]), "%s: %s/podinfo-values.yaml of the tenant", m, m)

			// The tenant acts as its own service account, in its own
			// namespace only; the platform's Kustomizations as
			// flux-system's kustomize-controller (the bootstrap one,
			// which names none, as the default service account).
			assert.Equal(t, "dev-team", kp.Kustomization.Spec.ServiceAccountName, m)
			assert.Equal(t, "dev-team", p.Release.Spec.ServiceAccountName, m)
			var tenantCalls []string
			for _, im := range cs[m].Impersonations() {
				if strings.HasPrefix(im.User, "system:serviceaccount:apps:") {
					tenantCalls = append(tenantCalls, im.User+" "+im.Call+" "+im.Namespace)
				} else {
					assert.Contains(t, []string{"system:serviceaccount:flux-system:kustomize-controller", "system:serviceaccount:flux-system:default"}, im.User, m)
				}
			}
			assert.Equal(t, []string{"system:serviceaccount:apps:dev-team HelmConfig apps"}, tenantCalls, m)
			for _, ref := range []release.ObjectRef{
				{GroupVersionKind: schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}, Namespace: "apps", Name: "gotk-reconciler"},
				{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}, Namespace: "apps", Name: "dev-team"},
				{GroupVersionKind: schema.GroupVersionKind{Group: "kyverno.io", Version: "v1", Kind: "ClusterPolicy"}, Name: "verify-git-repositories"},
			} {
				_, err := cs[m].Get(ctx, ref)
				assert.NoError(t, err, "%s: %s/%s %s", m, ref.Namespace, ref.Name, ref.Kind)
			}
		}

		again, err := f.Plan(ctx, in)
		require.NoError(t, err)
		assert.Empty(t, again.Errors)
		for _, p := range again.Items {
			assert.Equal(t, reconcile.ActionNone, p.Action, "%s/%s on %s", p.Release.Namespace, p.Release.Name, p.Cluster)
		}
		for _, kp := range again.Kustomizations {
			assert.Equal(t, reconcile.StateInSync, kp.State, "%s/%s on %s", kp.Kustomization.Namespace, kp.Kustomization.Name, kp.Cluster)
		}
		assert.Len(t, again.Kustomizations, 12, again.Table())
	})

	t.Run("a tenant writing outside its namespace", func(t *testing.T) {
		escape := edited(t, tenant, "base/kustomization.yaml", "  - podinfo-release.yaml\n", "  - podinfo-release.yaml\n  - escape.yaml\n")
		escape["base/escape.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: escape, namespace: flux-system}\ndata: {a: b}\n")}
		f, cs, _ := multiTenancyFleet(t, root, escape)
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		rep, _ := f.Apply(ctx, plan, fleet.ApplyOptions{})
		for _, m := range members {
			st, ok := f.KustomizationStatus(key(m, "apps", "dev-team"))
			require.True(t, ok, m)
			assert.False(t, st.IsConditionTrue(release.ConditionReady), "%s\n%s", m, rep.Table())
			_, err := cs[m].Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "flux-system", Name: "escape"})
			assert.ErrorIs(t, err, release.ErrNotFound, "%s: the tenant's object outside apps is not written with the fleet's own credentials", m)
		}
	})
	t.Run("a tenant's release naming the platform's chart source", func(t *testing.T) {
		other := edited(t, tenant, "base/podinfo-release.yaml", "        name: podinfo\n", "        name: podinfo\n        namespace: flux-system\n")
		f, _, _ := multiTenancyFleet(t, root, other)
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		for _, m := range members {
			it, ok := plan.Item(fleet.Key{Cluster: m, Namespace: "apps", Name: "podinfo"})
			require.True(t, ok, "%s\n%s", m, plan.Table())
			var denied *release.AccessDeniedError
			require.ErrorAs(t, it.Err, &denied, "%s\n%s", m, plan.Table())
			assert.Equal(t, "spec.chart.spec.sourceRef.namespace", denied.Field, m)
			assert.Equal(t, "flux-system", denied.Namespace, m)
			assert.Equal(t, reconcile.ActionNone, it.Action, "%s: nothing is installed from another namespace's source", m)
		}
	})
	t.Run("a tenant reading the platform's source", func(t *testing.T) {
		root := edited(t, root, "tenants/base/dev-team/sync.yaml", "    kind: GitRepository\n    name: dev-team\n", "    kind: GitRepository\n    name: flux-system\n    namespace: flux-system\n")
		f, _, _ := multiTenancyFleet(t, root, tenant)
		plan, err := f.Plan(ctx, in)
		require.NoError(t, err)
		for _, m := range members {
			kp, ok := plan.Kustomization(key(m, "apps", "dev-team"))
			require.True(t, ok, m)
			var denied *release.AccessDeniedError
			require.ErrorAs(t, kp.Err, &denied, "%s\n%s", m, plan.Table())
			assert.Contains(t, kp.Err.Error(), "spec.sourceRef", m)
			assert.Contains(t, kp.Err.Error(), "flux-system", m)
			_, ok = plan.Item(fleet.Key{Cluster: m, Namespace: "apps", Name: "podinfo"})
			assert.False(t, ok, "%s: nothing of the platform's tree runs as the tenant", m)
		}
	})
}
