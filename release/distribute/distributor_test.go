package distribute_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/drift"
	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// view describes a member's objects but namespaces: kind, name and what
// the tests look at (replicas and image of Deployments, data of
// ConfigMaps).
func view(t testing.TB, c *memory.Cluster) []string {
	t.Helper()
	var out []string
	for _, o := range c.Objects() {
		if o.GetKind() == "Namespace" {
			continue
		}
		line := o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
		switch o.GetKind() {
		case "Deployment":
			n, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
			cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			image, _ := cs[0].(map[string]any)["image"].(string)
			line += fmt.Sprintf(" replicas=%d image=%s", n, image)
		case "ConfigMap":
			msg, _, _ := unstructured.NestedString(o.Object, "data", "PODINFO_UI_MESSAGE")
			line += " message=" + msg
		}
		out = append(out, line)
	}
	return out
}

func helmHistory(t testing.TB, f *fixture.DistFleet) []string {
	t.Helper()
	cfg, err := f.Hub.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	hist, err := action.NewHistory(cfg).Run("podinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, h := range hist {
		out = append(out, fmt.Sprintf("%d %s", h.Version, h.Info.Status))
	}
	return out
}

func TestDistributorLifecycle(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()

	res, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	assert.Equal(t, reconcile.ActionInstall, res.Last())
	assert.Equal(t, []string{"1 deployed"}, helmHistory(t, f), "helm ls on the hub shows the release")
	assert.Empty(t, f.Hub.Objects(), "the hub holds no objects of the release")
	assert.Equal(t, []string{
		"ConfigMap apps/podinfo message=hello from helmfleet",
		"Secret apps/podinfo",
		"Service apps/podinfo",
		"Deployment apps/podinfo replicas=1 image=ghcr.io/stefanprodan/podinfo:6.5.0",
		"Ingress apps/podinfo",
	}, view(t, f.Members["m1"]))
	assert.Equal(t, []string{
		"ConfigMap apps/podinfo message=hello from helmfleet",
		"Secret apps/podinfo",
		"Service apps/podinfo",
		"Deployment apps/podinfo replicas=2 image=ghcr.io/stefanprodan/podinfo:6.5.0-m2",
		"Ingress apps/podinfo",
	}, view(t, f.Members["m2"]))
	assert.Empty(t, f.Members["m3"].Objects(), "m3 is not prod")
	nsRef := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "apps"}
	_, err = f.Members["m1"].Get(ctx, nsRef)
	assert.NoError(t, err, "the release's namespace is created on the members it goes to")
	dep, err := f.Members["m1"].Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	assert.Equal(t, "podinfo", dep.GetLabels()[distribute.InventoryNameLabel])
	assert.Equal(t, "apps", dep.GetLabels()[distribute.InventoryNamespaceLabel])
	assert.Equal(t, "apps/podinfo", dep.GetAnnotations()[distribute.InventoryAnnotation])

	t.Run("upgrade changes every member", func(t *testing.T) {
		rel.Generation++
		rel.Spec.Values["ui"] = map[string]any{"message": "v2"}
		res, err := rec.Reconcile(ctx, f.Dist, rel)
		require.NoError(t, err)
		assert.Equal(t, reconcile.ActionUpgrade, res.Last())
		for _, m := range []string{"m1", "m2"} {
			assert.Contains(t, view(t, f.Members[m]), "ConfigMap apps/podinfo message=v2", m)
		}
	})

	t.Run("an object dropped from the chart is pruned", func(t *testing.T) {
		rel.Generation++
		rel.Spec.Values["ingress"] = map[string]any{"enabled": false}
		_, err := rec.Reconcile(ctx, f.Dist, rel)
		require.NoError(t, err)
		for _, m := range []string{"m1", "m2"} {
			assert.NotContains(t, view(t, f.Members[m]), "Ingress apps/podinfo", m)
			assert.Len(t, view(t, f.Members[m]), 4, m)
		}
	})

	t.Run("rollback restores every member", func(t *testing.T) {
		cfg, err := f.Dist.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
		require.NoError(t, err)
		rb := action.NewRollback(cfg)
		rb.Version = 2
		require.NoError(t, rb.Run("podinfo"))
		for _, m := range []string{"m1", "m2"} {
			assert.Contains(t, view(t, f.Members[m]), "Ingress apps/podinfo", m)
			assert.Contains(t, view(t, f.Members[m]), "ConfigMap apps/podinfo message=v2", m)
		}
		assert.Equal(t, []string{"1 superseded", "2 superseded", "3 superseded", "4 deployed"}, helmHistory(t, f))
	})

	t.Run("a member no longer placed is pruned", func(t *testing.T) {
		// m2 leaves prod: everything of the release moves to m1.
		f2 := withFacts(t, f, "m2", map[string]string{"env": "staging"})
		rel.Generation++
		rel.Spec.Values["ui"] = map[string]any{"message": "v3"}
		_, err := rec.Reconcile(ctx, f2.Dist, rel)
		require.NoError(t, err)
		assert.Empty(t, view(t, f.Members["m2"]))
		assert.Contains(t, view(t, f.Members["m1"]), "Deployment apps/podinfo replicas=3 image=ghcr.io/stefanprodan/podinfo:6.5.0")
	})

	t.Run("uninstall removes the release from every member", func(t *testing.T) {
		_, err := rec.Uninstall(ctx, f.Dist, rel)
		require.NoError(t, err)
		for name, m := range f.Members {
			assert.Empty(t, view(t, m), name)
		}
		_, err = f.Members["m1"].Get(ctx, nsRef)
		assert.NoError(t, err, "namespaces are never pruned: other releases may live there")
		assert.Empty(t, helmHistory(t, f))
	})
}

// withFacts returns a Distributor over the same hub and members with one
// member's labels changed.
func withFacts(t testing.TB, f *fixture.DistFleet, member string, labels map[string]string) *fixture.DistFleet {
	t.Helper()
	var members []release.Member
	for _, m := range f.Dist.Members() {
		if m.Facts.Name == member {
			m.Facts.Labels = labels
		}
		members = append(members, m)
	}
	d, err := distribute.New(distribute.Config{Hub: f.Hub, Members: members, Policies: fixture.PolicySet(t, fixture.DistributorPolicies), PollInterval: time.Millisecond})
	require.NoError(t, err)
	return &fixture.DistFleet{Hub: f.Hub, Members: f.Members, Dist: d}
}

// seen records, per member, the hook objects its health func was asked
// about (the in-memory cluster asks on every read while Helm waits).
type seen struct {
	mu   sync.Mutex
	objs map[string]map[string]bool
}

func (s *seen) health(member string) memory.HealthFunc {
	return func(o *unstructured.Unstructured) memory.Health {
		if o.GetAnnotations()["helm.sh/hook"] != "" {
			s.mu.Lock()
			if s.objs[member] == nil {
				s.objs[member] = map[string]bool{}
			}
			s.objs[member][o.GetKind()+" "+o.GetName()] = true
			s.mu.Unlock()
		}
		return memory.Health{Ready: true}
	}
}

func TestDistributorHooksFollowWorkloads(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	s := &seen{objs: map[string]map[string]bool{}}
	for name, m := range f.Members {
		m.SetHealth(s.health(name))
	}
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.Test = &release.Test{Enable: true}
	rel.Spec.Values["hooks"] = map[string]any{"preUpgrade": true}

	res, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionInstall, reconcile.ActionTest}, res.Actions)
	// The test Pod stays (its delete policy is before-hook-creation) on the
	// members that run the Deployment.
	for name, want := range map[string]bool{"m1": true, "m2": true, "m3": false} {
		assert.Equal(t, want, contains(view(t, f.Members[name]), "Pod apps/podinfo-test-connection"), name)
	}

	rel.Generation++
	rel.Spec.Values["replicaCount"] = 6
	res, err = rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionTest}, res.Actions)
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.True(t, s.objs["m1"]["Job podinfo-migrate"], "pre-upgrade Job ran on m1")
	assert.True(t, s.objs["m2"]["Job podinfo-migrate"], "pre-upgrade Job ran on m2")
	assert.Empty(t, s.objs["m3"], "no hook ran on m3")
	for _, name := range []string{"m1", "m2"} {
		assert.NotContains(t, view(t, f.Members[name]), "Job apps/podinfo-migrate", "hook-succeeded deletes the Job on %s", name)
	}
	assert.Contains(t, view(t, f.Members["m1"]), "Deployment apps/podinfo replicas=2 image=ghcr.io/stefanprodan/podinfo:6.5.0")
	assert.Contains(t, view(t, f.Members["m2"]), "Deployment apps/podinfo replicas=4 image=ghcr.io/stefanprodan/podinfo:6.5.0-m2")
}

// A hook that a propagation policy selects itself goes where the policy
// puts it, not where the workloads are.
func TestDistributorHookWithOwnPolicy(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies+`
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: migrate, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: batch/v1, kind: Job, name: podinfo-migrate}
  placement:
    clusterAffinity: {clusterNames: [m3]}
`)
	s := &seen{objs: map[string]map[string]bool{}}
	for name, m := range f.Members {
		m.SetHealth(s.health(name))
	}
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.Values["hooks"] = map[string]any{"preUpgrade": true}
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	rel.Generation++
	rel.Spec.Values["replicaCount"] = 4
	_, err = rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Equal(t, map[string]map[string]bool{"m3": {"Job podinfo-migrate": true}}, s.objs)
}

func TestDistributorHookFailsOnOneMember(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	f.Members["m2"].SetHealth(func(o *unstructured.Unstructured) memory.Health {
		if o.GetKind() == "Job" {
			return memory.Health{Failed: true, Message: "migration failed"}
		}
		return memory.Health{Ready: true}
	})
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.Values["hooks"] = map[string]any{"preUpgrade": true}
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	rel.Generation++
	rel.Spec.Values["replicaCount"] = 4
	_, err = rec.Reconcile(ctx, f.Dist, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pre-upgrade hooks failed")
	assert.Contains(t, err.Error(), "cluster m2: timed out")
	assert.Contains(t, err.Error(), "Job apps/podinfo-migrate Failed")
	assert.NotContains(t, err.Error(), "cluster m1")
}

// patchless hides the Patcher role of a member.
type patchless struct{ release.Cluster }

func TestDistributorDriftWithoutPatcherAndIgnoreRules(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	var members []release.Member
	for _, m := range f.Dist.Members() {
		m.Cluster = patchless{m.Cluster}
		members = append(members, m)
	}
	d, err := distribute.New(distribute.Config{Hub: f.Hub, Members: members, Policies: fixture.PolicySet(t, fixture.DistributorPolicies), PollInterval: time.Millisecond})
	require.NoError(t, err)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled, Ignore: []release.IgnoreRule{
		{Paths: []string{"/data"}, Target: &release.Selector{Kind: "ConfigMap"}},
		{Paths: []string{"/spec/template/spec/containers/0/image"}},
	}}
	_, err = rec.Reconcile(ctx, d, rel)
	require.NoError(t, err)

	for _, name := range []string{"m1", "m2"} {
		m := f.Members[name]
		dep, err := m.Get(ctx, release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
		require.NoError(t, err)
		delete(dep.Object, "status")
		require.NoError(t, unstructured.SetNestedField(dep.Object, int64(7), "spec", "replicas"))
		_, err = m.Update(ctx, dep, "kubectl-edit")
		require.NoError(t, err)
		cm, err := m.Get(ctx, release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(cm.Object, "edited", "data", "PODINFO_UI_MESSAGE"))
		_, err = m.Update(ctx, cm, "kubectl-edit")
		require.NoError(t, err)
	}
	res, err := rec.Reconcile(ctx, d, rel)
	require.NoError(t, err)
	assert.True(t, res.Did(reconcile.ActionCorrectDrift))
	assert.Equal(t, 2, res.Drift.Count("Modified"), res.Drift.String())
	require.Len(t, res.Drift.Rules, 2)
	assert.Len(t, res.Drift.Rules[0].Objects, 1, "one ConfigMap, on two members, listed once")
	assert.Equal(t, int64(1), replicasOf(t, f.Members["m1"]), "corrected by a server-side apply")
	assert.Equal(t, int64(2), replicasOf(t, f.Members["m2"]))
	assert.Contains(t, view(t, f.Members["m1"]), "ConfigMap apps/podinfo message=edited", "ignored paths stay as they are")
}

// otherReleasesConfigMap puts on member m the ConfigMap apps/podinfo as
// release team-b/other holds it (its inventory labels).
func otherReleasesConfigMap(t *testing.T, f *fixture.DistFleet, m string) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "podinfo", "namespace": "apps", "labels": map[string]any{
			distribute.InventoryNameLabel: "other", distribute.InventoryNamespaceLabel: "team-b"}},
		"data": map[string]any{"owner": "team-b"},
	}}
	_, err := f.Members[m].Update(context.Background(), obj, "helmfleet")
	require.NoError(t, err)
}

// An object a member holds for another release is not taken over; the
// other members and objects are still written.
func TestDistributorDoesNotTakeOverAnotherReleasesObject(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	otherReleasesConfigMap(t, f, "m1")
	rec := fixture.Reconciler(t, nil)
	_, err := rec.Reconcile(ctx, f.Dist, fixture.DistRelease())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "member m1: v1 ConfigMap apps/podinfo exists and belongs to release team-b/other; it is not taken over")
	assert.NotContains(t, err.Error(), "member m2")
	assert.Contains(t, view(t, f.Members["m1"]), "ConfigMap apps/podinfo message=", "left as the other release has it")
	assert.Contains(t, view(t, f.Members["m1"]), "Deployment apps/podinfo replicas=1 image=ghcr.io/stefanprodan/podinfo:6.5.0")
	assert.Contains(t, view(t, f.Members["m2"]), "ConfigMap apps/podinfo message=hello from helmfleet")

	// Helm's own actions keep the typed error.
	cfg, err := f.Dist.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	_, err = action.NewUpgrade(cfg).Run("podinfo", testchart.MustLoad(""), map[string]any{"replicaCount": 3})
	var oe *distribute.OwnerError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, "team-b/other", oe.Owner)
	assert.Equal(t, "ConfigMap", oe.Object.Kind)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDistributorDrift(t *testing.T) {
	ctx := context.Background()
	cmRef := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"}
	secretRef := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespace: "apps", Name: "podinfo"}
	depRef := release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"}
	tamper := func(t *testing.T, f *fixture.DistFleet) {
		t.Helper()
		m2 := f.Members["m2"]
		dep, err := m2.Get(ctx, depRef)
		require.NoError(t, err)
		delete(dep.Object, "status")
		require.NoError(t, unstructured.SetNestedField(dep.Object, int64(9), "spec", "replicas"))
		_, err = m2.Update(ctx, dep, "kubectl-edit")
		require.NoError(t, err)
		require.NoError(t, f.Members["m1"].Delete(ctx, secretRef, release.DeleteOptions{}))
	}
	tests := []struct {
		name      string
		mode      release.DriftDetectionMode
		corrected bool
	}{
		{name: "enabled corrects every member", mode: release.DriftDetectionEnabled, corrected: true},
		{name: "warn reports only", mode: release.DriftDetectionWarn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
			rec := fixture.Reconciler(t, nil)
			rel := fixture.DistRelease()
			rel.Spec.DriftDetection = &release.DriftDetection{Mode: tt.mode}
			_, err := rec.Reconcile(ctx, f.Dist, rel)
			require.NoError(t, err)
			res, err := rec.Reconcile(ctx, f.Dist, rel)
			require.NoError(t, err)
			assert.Equal(t, reconcile.ActionNone, res.Last(), "no drift right after install")

			tamper(t, f)
			// A new Distributor over the same hub and members (a restarted
			// process) learns the release from the hub's records.
			f = withFacts(t, f, "m3", map[string]string{"env": "dev"})
			res, err = rec.Reconcile(ctx, f.Dist, rel)
			require.NoError(t, err)
			require.NotNil(t, res.Drift)
			assert.Equal(t, 1, res.Drift.Count("Missing"))
			assert.Equal(t, 1, res.Drift.Count("Modified"))
			report := res.Drift.String()
			assert.Contains(t, report, "Deployment.apps/apps/podinfo: modified (member m2)")
			assert.Contains(t, report, "spec.replicas: 9 -> 2")
			assert.Contains(t, report, "Secret")
			assert.Contains(t, report, "missing (member m1)")
			assert.Equal(t, tt.corrected, res.Did(reconcile.ActionCorrectDrift))

			_, serr := f.Members["m1"].Get(ctx, secretRef)
			n := replicasOf(t, f.Members["m2"])
			if tt.corrected {
				assert.NoError(t, serr)
				assert.Equal(t, int64(2), n)
				res, err = rec.Reconcile(ctx, f.Dist, rel)
				require.NoError(t, err)
				assert.False(t, res.Drift.Drifted(), res.Drift.String())
			} else {
				assert.ErrorIs(t, serr, release.ErrNotFound)
				assert.Equal(t, int64(9), n)
			}
			_, err = f.Members["m1"].Get(ctx, cmRef)
			assert.NoError(t, err)
		})
	}
}

func replicasOf(t testing.TB, c *memory.Cluster) int64 {
	t.Helper()
	dep, err := c.Get(context.Background(), release.ObjectRef{GroupVersionKind: fixture.DeployGVK, Namespace: "apps", Name: "podinfo"})
	require.NoError(t, err)
	n, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
	return n
}

func TestDistributorUnreachableMember(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)

	f.Members["m2"].SetUnreachable(errors.New("connection refused"))
	rel.Generation++
	rel.Spec.Values["ui"] = map[string]any{"message": "v2"}
	_, err = rec.Reconcile(ctx, f.Dist, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "member m2: namespace apps: cluster m2 unreachable: connection refused")
	assert.NotContains(t, err.Error(), "member m1")
	assert.Contains(t, view(t, f.Members["m1"]), "ConfigMap apps/podinfo message=v2", "m1 was still upgraded")

	// Once m2 is back, the next reconciles bring it in line.
	f.Members["m2"].SetUnreachable(nil)
	rel.Annotations = map[string]string{release.ReconcileRequestAnnotation: "1", release.ResetRequestAnnotation: "1"}
	for i := 0; i < 3; i++ {
		if _, err = rec.Reconcile(ctx, f.Dist, rel); err == nil {
			break
		}
	}
	require.NoError(t, err)
	assert.Contains(t, view(t, f.Members["m2"]), "ConfigMap apps/podinfo message=v2")
	assert.Equal(t, view(t, f.Members["m1"])[0], view(t, f.Members["m2"])[0])
}

func TestDistributorWaitNamesMemberAndObject(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	f.Members["m2"].SetHealth(deploymentBackOff)
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.Timeout = &metav1.Duration{Duration: 50 * time.Millisecond}
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster m2: timed out after 50ms waiting for 1 object(s): Deployment apps/podinfo InProgress")
	assert.Contains(t, err.Error(), "image pull back-off")
	assert.NotContains(t, err.Error(), "m1")

	// Helm's own actions on the Distributor's configuration keep the
	// typed errors.
	cfg, err := f.Dist.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	up := action.NewUpgrade(cfg)
	up.Wait, up.Timeout = true, 50*time.Millisecond
	_, err = up.Run("podinfo", testchart.MustLoad(""), map[string]any{"replicaCount": 3})
	var nr *release.NotReadyError
	require.ErrorAs(t, err, &nr)
	assert.Equal(t, "m2", nr.Cluster)
	require.Len(t, nr.Objects, 1)
	assert.Equal(t, "Deployment", nr.Objects[0].Object.Kind)
	assert.Contains(t, nr.Objects[0].Message, "image pull back-off")

	f.Members["m1"].SetUnreachable(errors.New("connection refused"))
	_, err = action.NewUpgrade(cfg).Run("podinfo", testchart.MustLoad(""), map[string]any{"replicaCount": 3})
	var me *distribute.MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "m1", me.Member)
	assert.ErrorContains(t, me, "connection refused")
}

func TestDistributorWaitObservesContext(t *testing.T) {
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	f.Members["m1"].SetHealth(func(*unstructured.Unstructured) memory.Health { return memory.Health{Message: "starting"} })
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.Timeout = &metav1.Duration{Duration: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// A chart may render its own policies:
// they are used for placement and never applied anywhere.
func TestDistributorPoliciesFromChart(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, "")
	ch := testchart.MustLoad("")
	ch.Templates = append(ch.Templates, &chart.File{Name: "templates/policies.yaml", Data: []byte(`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: {{ .Release.Name }}
spec:
  propagateDeps: true
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      labelSelector: {matchLabels: {app.kubernetes.io/instance: {{ .Release.Name }}}}
  placement:
    clusterAffinity: {clusterNames: [m3]}
`)})
	charts := reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: ch}, nil
	})
	rec, err := reconcile.New(reconcile.Config{Charts: charts, PollInterval: time.Millisecond})
	require.NoError(t, err)
	_, err = rec.Reconcile(ctx, f.Dist, fixture.DistRelease())
	require.NoError(t, err)
	assert.Len(t, view(t, f.Members["m3"]), 5)
	assert.Contains(t, view(t, f.Members["m3"]), "Deployment apps/podinfo replicas=3 image=ghcr.io/stefanprodan/podinfo:6.5.0")
	assert.Empty(t, view(t, f.Members["m1"]))
	assert.Empty(t, f.Hub.Objects())
	for _, m := range f.Members {
		for _, o := range m.Objects() {
			assert.NotEqual(t, "policy.karmada.io", o.GroupVersionKind().Group)
		}
	}
}

func TestDistributorOverrideFailsOneMember(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies+`
---
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: broken, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: v1, kind: ConfigMap}
  overrideRules:
    - targetCluster: {clusterNames: [m1]}
      overriders:
        plaintext:
          - {path: /data/missing/deeper, operator: replace, value: x}
`)
	rec := fixture.Reconciler(t, nil)
	_, err := rec.Reconcile(ctx, f.Dist, fixture.DistRelease())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ConfigMap apps/podinfo on cluster m1: OverridePolicy apps/broken spec.overrideRules[0].overriders.plaintext[0] at "/data/missing/deeper"`)
	assert.NotContains(t, view(t, f.Members["m1"]), "ConfigMap apps/podinfo message=hello from helmfleet")
	assert.Contains(t, view(t, f.Members["m2"]), "ConfigMap apps/podinfo message=hello from helmfleet")
	assert.Len(t, view(t, f.Members["m1"]), 4)
}

func TestNewDistributorErrors(t *testing.T) {
	hub := memory.New("hub")
	m1 := release.Member{Cluster: memory.New("m1")}
	tests := []struct {
		name string
		cfg  distribute.Config
		want string
	}{
		{name: "no hub", cfg: distribute.Config{Members: []release.Member{m1}}, want: "Hub is required"},
		{name: "no members", cfg: distribute.Config{Hub: hub}, want: "Members is empty"},
		{name: "duplicate member", cfg: distribute.Config{Hub: hub, Members: []release.Member{m1, m1}}, want: `duplicate cluster name "m1"`},
		{name: "invalid policy", cfg: distribute.Config{Hub: hub, Members: []release.Member{m1},
			Policies: policy.Set{Propagation: []policy.PropagationPolicy{{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "apps"}}}}}, want: "policies"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := distribute.New(tt.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// hubOnly is a hub that gives Helm configurations and nothing else.
type hubOnly struct{ c *memory.Cluster }

func (h hubOnly) HelmConfig(ctx context.Context, s release.HelmScope) (*action.Configuration, error) {
	return h.c.HelmConfig(ctx, s)
}

func TestDistributorHubObjects(t *testing.T) {
	ctx := context.Background()
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "apps"}}}
	m1 := release.Member{Cluster: memory.New("m1")}

	hub := memory.New("hub")
	d, err := distribute.New(distribute.Config{Hub: hub, Members: []release.Member{m1}})
	require.NoError(t, err)
	assert.Equal(t, "fleet", d.Name())
	_, err = d.Apply(ctx, cm, release.ApplyOptions{FieldManager: "t"})
	require.NoError(t, err)
	got, err := d.Get(ctx, release.RefOf(cm))
	require.NoError(t, err)
	assert.Equal(t, "c", got.GetName())
	assert.Len(t, hub.Objects(), 1, "written to the hub")
	assert.Empty(t, m1.Cluster.(*memory.Cluster).Objects(), "not to members")

	d, err = distribute.New(distribute.Config{Name: "eu", Hub: hubOnly{hub}, Members: []release.Member{m1}})
	require.NoError(t, err)
	assert.Equal(t, "eu", d.Name())
	_, err = d.Get(ctx, release.RefOf(cm))
	assert.ErrorIs(t, err, distribute.ErrNoHubObjects)
	_, err = d.List(ctx, release.RefOf(cm).GroupVersionKind, "", nil)
	assert.ErrorIs(t, err, distribute.ErrNoHubObjects)
	assert.ErrorIs(t, d.Delete(ctx, release.RefOf(cm), release.DeleteOptions{}), distribute.ErrNoHubObjects)
}

func TestDistributorRemediationRollbackRestoresMembers(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	bad := func(o *unstructured.Unstructured) memory.Health {
		if o.GetKind() == "Deployment" && strings.Contains(fmt.Sprint(o.Object["spec"]), ":broken") {
			return memory.Health{Message: "image pull back-off"}
		}
		return memory.Health{Ready: true}
	}
	for _, m := range f.Members {
		m.SetHealth(bad)
	}
	rec := fixture.Reconciler(t, nil)
	rel := fixture.DistRelease()
	rel.Spec.Timeout = &metav1.Duration{Duration: 50 * time.Millisecond}
	rel.Spec.Upgrade = &release.Upgrade{Remediation: &release.UpgradeRemediation{Retries: 1}}
	_, err := rec.Reconcile(ctx, f.Dist, rel)
	require.NoError(t, err)
	before := map[string][]string{"m1": view(t, f.Members["m1"]), "m2": view(t, f.Members["m2"])}

	rel.Generation++
	rel.Spec.Values["image"] = map[string]any{"tag": "broken"}
	res, err := rec.Reconcile(ctx, f.Dist, rel)
	require.Error(t, err)
	assert.Equal(t, []reconcile.Action{reconcile.ActionUpgrade, reconcile.ActionRollback}, res.Actions)
	msg := rel.Status.GetCondition(release.ConditionReleased).Message
	assert.Contains(t, msg, "cluster m1: timed out after 50ms waiting for 1 object(s): Deployment apps/podinfo")
	assert.NotContains(t, msg, "cluster m2", "m2's override replaces the broken tag")
	for name, want := range before {
		assert.Equal(t, want, view(t, f.Members[name]), "rollback restored %s", name)
	}
	assert.Equal(t, []string{"1 superseded", "2 failed", "3 deployed"}, helmHistory(t, f))
}

func TestDistributorDriftNeedsKnownRelease(t *testing.T) {
	ctx := context.Background()
	f := fixture.NewDistFleet(t, fixture.DistributorPolicies)
	_, err := f.Dist.DetectDrift(ctx, release.HelmScope{}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", nil, "enabled")
	assert.ErrorContains(t, err, "not one of a release record")
	_, err = f.Dist.DetectDrift(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps", HelmReleaseName: "x"}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", nil, "enabled")
	assert.ErrorContains(t, err, "release apps/x: no record of it was read or written")
	assert.ErrorContains(t, f.Dist.CorrectDrift(ctx, &drift.Report{Mode: drift.ModeEnabled}, "helm"), "not made by this distributor")
}

func buildWith(t testing.TB, d *distribute.Distributor, manifest string) ([]string, error) {
	t.Helper()
	cfg, err := d.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	rl, err := cfg.KubeClient.Build(strings.NewReader(manifest), false)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, info := range rl {
		out = append(out, info.Mapping.GroupVersionKind.Kind+" "+info.Namespace+"/"+info.Name+" "+info.Mapping.Resource.Resource)
	}
	return out, nil
}

func TestDistributorBuild(t *testing.T) {
	f := fixture.NewDistFleet(t, "")
	tests := []struct {
		name     string
		manifest string
		want     []string
		err      string
	}{
		{
			name: "namespaced objects get the release namespace, cluster-scoped lose theirs",
			manifest: `apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r, namespace: ignored}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: other}
`,
			want: []string{"ConfigMap apps/a configmaps", "ClusterRole /r clusterroles", "Secret other/s secrets"},
		},
		{
			name: "kinds of the manifest's CRDs and the chart's own policies",
			manifest: `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: all}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: p}
`,
			want: []string{"CustomResourceDefinition /widgets.example.com customresourcedefinitions", "Widget apps/w widgets",
				"ClusterPropagationPolicy /all clusterpropagationpolicies", "PropagationPolicy apps/p propagationpolicies"},
		},
		{name: "unknown kind", manifest: "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g}\n", err: `resource mapping not found for Gadget "g"`},
		{name: "no apiVersion", manifest: "kind: ConfigMap\nmetadata: {name: a}\n", err: `decode manifest document 0 (ConfigMap "a"): apiVersion is empty`},
		{name: "no name", manifest: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n", err: "decode manifest document 0 (ConfigMap): metadata.name is empty"},
		{name: "lists are refused", manifest: "apiVersion: v1\nkind: List\nitems: []\n", err: "lists are not supported"},
		{name: "bad YAML", manifest: "apiVersion: v1\nkind: [\n", err: "decode manifest document 0"},
		{name: "empty documents are skipped", manifest: "---\n---\n", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildWith(t, f.Dist, tt.manifest)
			if tt.err != "" {
				assert.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzDistributorBuild(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")
	f.Add("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\nspec: {replicas: 2}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: n}\n")
	f.Add("{\"apiVersion\": \"v1\", \"kind\": \"Secret\", \"metadata\": {\"name\": \"s\"}}")
	f.Add("apiVersion: example.com/v1\nkind: Gadget\n")
	f.Add("kind: ConfigMap\nmetadata:") // once mapped without a name or namespace
	df := fixture.NewDistFleet(f, "")
	f.Fuzz(func(t *testing.T, manifest string) {
		got, err := buildWith(t, df.Dist, manifest)
		if err != nil {
			return
		}
		for _, line := range got {
			kindNS, _, _ := strings.Cut(line, "/")
			if strings.HasPrefix(line, "Namespace ") || strings.HasPrefix(line, "ClusterRole ") {
				assert.True(t, strings.HasSuffix(kindNS, " "), "cluster-scoped %q has a namespace", line)
			}
			if strings.HasPrefix(line, "ConfigMap ") || strings.HasPrefix(line, "Deployment ") {
				assert.False(t, strings.HasSuffix(kindNS, " "), "namespaced %q has none", line)
			}
		}
	})
}
