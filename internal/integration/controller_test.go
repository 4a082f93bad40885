package integration

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/controller"
	"github.com/helmfleet/helmfleet/release/crds"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// installReleaseCRD installs the HelmRelease CRD of release/crds on the
// hub unless it is there, and waits until it is served. When the test
// ends it deletes the CRD and waits until it is gone, so the next test of
// the hub (TestFluxKindsOnAPIServer creates it afresh) starts from none.
func installReleaseCRD(t *testing.T, c client.Client) {
	t.Helper()
	data, err := fs.ReadFile(crds.FS(), "helm.toolkit.fluxcd.io_helmreleases.yaml")
	require.NoError(t, err)
	crd := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal(data, &crd.Object))
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx(t), crd)))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// A release left with the finalizer (a failed test) would keep
		// the CRD: the managers are gone, let them go.
		var left release.ReleaseList
		_ = c.List(cctx, &left)
		for i := range left.Items {
			rel := &left.Items[i]
			if len(rel.Finalizers) > 0 {
				patch := client.MergeFrom(rel.DeepCopy())
				rel.Finalizers = nil
				_ = c.Patch(cctx, rel, patch)
			}
		}
		if err := client.IgnoreNotFound(c.Delete(cctx, crd)); err != nil {
			t.Errorf("delete the HelmRelease CRD: %v", err)
			return
		}
		for cctx.Err() == nil {
			if err := c.Get(cctx, client.ObjectKeyFromObject(crd), crd.DeepCopy()); client.IgnoreNotFound(err) == nil && err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("the HelmRelease CRD is still there a minute after its deletion")
	})
	require.Eventually(t, func() bool {
		return c.List(ctx(t), &release.ReleaseList{}) == nil
	}, 30*time.Second, 100*time.Millisecond, "HelmRelease served")
}

// deleteReleasesAtEnd deletes the HelmReleases of ns when the test ends,
// while the managers still run (cleanups run last-registered first): the
// controller's finalizer uninstalls each. It fails the test if one is
// still there after 30s.
func deleteReleasesAtEnd(t *testing.T, c client.Client, ns string) {
	t.Helper()
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.DeleteAllOf(cctx, &release.Release{}, client.InNamespace(ns)); err != nil {
			t.Errorf("delete HelmReleases of %s: %v", ns, err)
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var list release.ReleaseList
			if err := c.List(cctx, &list, client.InNamespace(ns)); err != nil || len(list.Items) == 0 {
				return
			}
			if time.Now().After(deadline) {
				for _, rel := range list.Items {
					t.Errorf("HelmRelease %s/%s not uninstalled 30s after its deletion: %v", ns, rel.Name, rel.Status.Conditions)
				}
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// controllerScheme knows client-go's kinds and the controller's.
func controllerScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, controller.AddToScheme(s))
	return s
}

// startManager runs a manager on cfg with a HelmRelease controller of
// ccfg until the test ends.
func startManager(t *testing.T, cfg *rest.Config, name string, ccfg controller.Config) {
	t.Helper()
	ccfg.Name = name
	runManager(t, cfg, name, func(mgr ctrl.Manager) error {
		_, err := controller.Setup(t.Context(), mgr, ccfg)
		return err
	})
}

// runManager runs a manager on cfg, set up by setup, until the test ends
// or stop is called; stop waits until it has stopped.
func runManager(t *testing.T, cfg *rest.Config, name string, setup func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	stop, _ = runManagerWith(t, cfg, name, nil, setup)
	return stop
}

// runManagerWith is runManager with options changed by opts; elected is
// closed when the manager leads (at once without leader election).
func runManagerWith(t *testing.T, cfg *rest.Config, name string, opts func(*ctrl.Options), setup func(ctrl.Manager) error) (stop func(), elected <-chan struct{}) {
	t.Helper()
	skip := true
	o := ctrl.Options{
		Scheme: controllerScheme(t),
		// Not testr: the manager logs while it stops, after the test.
		Logger:                 funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, name, prefix, args) }, funcr.Options{}),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	}
	if opts != nil {
		opts(&o)
	}
	mgr, err := ctrl.NewManager(cfg, o)
	require.NoError(t, err)
	require.NoError(t, setup(mgr))
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err)
			case <-time.After(30 * time.Second):
				t.Error("manager did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop, mgr.Elected()
}

func hrObject(t *testing.T, y string) *release.Release {
	t.Helper()
	rel := &release.Release{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), rel))
	return rel
}

// controllerRelease is a HelmRelease of the test chart in namespace ns;
// the control planes run no controllers, so waits are off.
func controllerRelease(ns, name string, extra string) string {
	return `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: ` + name + `, namespace: ` + ns + `}
spec:
  interval: 10m
  releaseName: ` + name + `
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  install: {disableWait: true}
  upgrade: {disableWait: true}
` + extra
}

// hrStatus reads the HelmRelease ns/name with its status.
func hrStatus(t *testing.T, c client.Client, ns, name string) (*release.Release, release.Status) {
	t.Helper()
	u, st, err := getHR(ctx(t), c, ns, name)
	require.NoError(t, err)
	return u, st
}

func getHR(ctx context.Context, c client.Client, ns, name string) (*release.Release, release.Status, error) {
	rel := &release.Release{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rel); err != nil {
		return nil, release.Status{}, err
	}
	return rel, rel.Status, nil
}

// waitReady waits until ns/name is ready at its generation with Helm
// revision rev, and returns it.
func waitReady(t *testing.T, c client.Client, ns, name string, rev int) (*release.Release, release.Status) {
	t.Helper()
	var (
		u  *release.Release
		st release.Status
	)
	deadline := time.Now().Add(45 * time.Second)
	for {
		var err error
		u, st, err = getHR(ctx(t), c, ns, name)
		require.NoError(t, err)
		if st.IsConditionTrue(release.ConditionReady) && st.ObservedGeneration == u.GetGeneration() &&
			len(st.History) > 0 && st.History[0].Version == rev {
			return u, st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s not ready at revision %d; last status: %+v", ns, name, rev, st.Conditions)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func condStr(st release.Status, typ string) string {
	c := st.GetCondition(typ)
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + " " + c.Reason
}

// TestControllerOnRealCluster runs the HelmRelease controller in a
// controller-runtime manager against the hub: a release becomes Ready
// with Flux's conditions; a change of its valuesFrom ConfigMap upgrades it
// at once (the retry interval and spec.interval are an hour and ten
// minutes: only the watch can do it); a dependent waits for its
// dependency; the shard label splits releases between two instances; a
// release with spec.kubeConfig is installed on member1 as its service
// account.
func TestControllerOnRealCluster(t *testing.T) {
	hubCfg := controlPlane(t, "hub").Admin
	c, err := client.New(hubCfg, client.Options{Scheme: controllerScheme(t)})
	require.NoError(t, err)
	installReleaseCRD(t, c)
	const ns = "ctrl"
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo-values"}, Data: map[string]string{"values.yaml": "ui: {message: first}\n"}}
	require.NoError(t, c.Create(ctx(t), cm))
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "podinfo", "  valuesFrom:\n    - {kind: ConfigMap, name: podinfo-values}\n"))))
	// The dependent first, so it must wait.
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "frontend", "  dependsOn: [{name: backend}]\n"))))
	sharded := hrObject(t, controllerRelease(ns, "sharded", ""))
	sharded.SetLabels(map[string]string{controller.ShardLabel: "b"})
	require.NoError(t, c.Create(ctx(t), sharded))

	// The remote target: member1's kubeconfig in a Secret on the hub, and
	// on member1 a service account allowed into the namespace only.
	m1 := controlPlane(t, "member1")
	kc, err := os.ReadFile(m1.AdminKubeconfig)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx(t), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "member1-kubeconfig"}, Data: map[string][]byte{"value": kc}}))
	mc, err := client.New(m1.Admin, client.Options{})
	require.NoError(t, err)
	require.NoError(t, client.IgnoreAlreadyExists(mc.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
	// The harness runs no controller-manager, so the aggregated "admin"
	// ClusterRole is empty: a Role of its own.
	require.NoError(t, client.IgnoreAlreadyExists(mc.Create(ctx(t), &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	})))
	require.NoError(t, client.IgnoreAlreadyExists(mc.Create(ctx(t), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "deployer"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "deployer"}},
	})))
	remote := "  serviceAccountName: %s\n  kubeConfig: {secretRef: {name: member1-kubeconfig}}\n"
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "remote", strings.Replace(remote, "%s", "deployer", 1)))))
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "remote-denied", strings.Replace(remote, "%s", "nobody", 1)))))

	startManager(t, hubCfg, "helmfleet-unsharded", controller.Config{
		Charts:        charts,
		Shard:         controller.ShardSelector(""),
		RetryInterval: time.Hour,
		Reconciler:    reconcile.Config{PollInterval: 100 * time.Millisecond},
	})

	t.Run("ready with Flux's conditions", func(t *testing.T) {
		u, st := waitReady(t, c, ns, "podinfo", 1)
		assert.Equal(t, "True InstallSucceeded", condStr(st, release.ConditionReady))
		assert.Equal(t, "True InstallSucceeded", condStr(st, release.ConditionReleased))
		assert.Equal(t, "<none>", condStr(st, release.ConditionReconciling))
		assert.Equal(t, "<none>", condStr(st, release.ConditionStalled))
		assert.Equal(t, u.GetGeneration(), st.ObservedGeneration)
		assert.Contains(t, u.GetFinalizers(), controller.Finalizer)
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(u)
		require.NoError(t, err)
		res, err := kstatus.Compute(&unstructured.Unstructured{Object: obj})
		require.NoError(t, err)
		assert.Equal(t, kstatus.CurrentStatus, res.Status, "kstatus reads the status as Flux's: %s", res.Message)
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(deploymentGVK)
		require.NoError(t, c.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep))
		require.Eventually(t, func() bool {
			var evs corev1.EventList
			require.NoError(t, c.List(ctx(t), &evs, client.InNamespace(ns)))
			for _, ev := range evs.Items {
				if ev.InvolvedObject.Name == "podinfo" && ev.Reason == release.ReasonInstallSucceeded && ev.Type == corev1.EventTypeNormal {
					return true
				}
			}
			return false
		}, 20*time.Second, 100*time.Millisecond, "an InstallSucceeded event on the HelmRelease")
	})

	t.Run("a valuesFrom change upgrades with no poll", func(t *testing.T) {
		start := time.Now()
		cm.Data["values.yaml"] = "ui: {message: second}\n"
		require.NoError(t, c.Update(ctx(t), cm))
		_, st := waitReady(t, c, ns, "podinfo", 2)
		assert.Equal(t, "True UpgradeSucceeded", condStr(st, release.ConditionReady))
		t.Logf("upgraded %v after the ConfigMap changed", time.Since(start).Round(time.Millisecond))
	})

	t.Run("a dependent waits for its dependency", func(t *testing.T) {
		require.Eventually(t, func() bool {
			_, st := hrStatus(t, c, ns, "frontend")
			return condStr(st, release.ConditionReady) == "False DependencyNotReady"
		}, 20*time.Second, 100*time.Millisecond)
		_, st := hrStatus(t, c, ns, "frontend")
		assert.Empty(t, st.History, "nothing installed before the dependency is ready")
		assert.Contains(t, st.GetCondition(release.ConditionReady).Message, "dependency 'ctrl/backend' is not ready")

		require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "backend", ""))))
		_, backend := waitReady(t, c, ns, "backend", 1)
		_, front := waitReady(t, c, ns, "frontend", 1)
		assert.False(t, front.GetCondition(release.ConditionReady).LastTransitionTime.Before(&backend.GetCondition(release.ConditionReady).LastTransitionTime),
			"frontend became ready after backend")
	})

	t.Run("the remote release runs on member1 as its service account", func(t *testing.T) {
		waitReady(t, c, ns, "remote", 1)
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(deploymentGVK)
		assert.NoError(t, mc.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "remote-podinfo"}, dep), "on member1")
		err := c.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "remote-podinfo"}, dep)
		assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "not on the hub: %v", err)

		require.Eventually(t, func() bool {
			_, st := hrStatus(t, c, ns, "remote-denied")
			ready := st.GetCondition(release.ConditionReady)
			return ready != nil && ready.Status == metav1.ConditionFalse && strings.Contains(ready.Message, "system:serviceaccount:ctrl:nobody")
		}, 30*time.Second, 100*time.Millisecond, "RBAC denies the impersonated account")
		// Its uninstall is denied too, so its finalizer stays: the admin
		// lets it go by hand.
		rel, _ := hrStatus(t, c, ns, "remote-denied")
		require.NoError(t, c.Delete(ctx(t), rel))
		rel, _ = hrStatus(t, c, ns, "remote-denied")
		assert.NotNil(t, rel.DeletionTimestamp)
		patch := client.MergeFrom(rel.DeepCopy())
		rel.Finalizers = nil
		require.NoError(t, c.Patch(ctx(t), rel, patch))
	})

	t.Run("deleting a release uninstalls it", func(t *testing.T) {
		rel, _ := hrStatus(t, c, ns, "podinfo")
		require.NoError(t, c.Delete(ctx(t), rel))
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(deploymentGVK)
		require.Eventually(t, func() bool {
			err := c.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep)
			return client.IgnoreNotFound(err) == nil && err != nil
		}, 30*time.Second, 100*time.Millisecond, "the Helm release's Deployment is gone")
		require.Eventually(t, func() bool {
			err := c.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "podinfo"}, &release.Release{})
			return client.IgnoreNotFound(err) == nil && err != nil
		}, 30*time.Second, 100*time.Millisecond, "the finalizer let the HelmRelease go")
	})

	t.Run("the shard key filters", func(t *testing.T) {
		_, st := hrStatus(t, c, ns, "sharded")
		assert.Empty(t, st.Conditions, "the unsharded instance leaves shard b alone")
		startManager(t, hubCfg, "helmfleet-shard-b", controller.Config{
			Charts:        charts,
			Shard:         controller.ShardSelector("b"),
			RetryInterval: time.Hour,
			Reconciler:    reconcile.Config{PollInterval: 100 * time.Millisecond},
		})
		waitReady(t, c, ns, "sharded", 1)
		deleteReleasesAtEnd(t, c, ns) // while both managers run
	})
}

// TestControllerLeaderHandOver runs two managers with leader election on
// a Lease of the hub: only the leader reconciles; when it stops, the other
// takes the Lease over and reconciles what was created meanwhile, leaving
// no release pending.
func TestControllerLeaderHandOver(t *testing.T) {
	hubCfg := controlPlane(t, "hub").Admin
	c, err := client.New(hubCfg, client.Options{Scheme: controllerScheme(t)})
	require.NoError(t, err)
	installReleaseCRD(t, c)
	const ns = "ctrl-leader"
	require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))

	lease, renew, retry := 3*time.Second, 2*time.Second, 200*time.Millisecond
	type instance struct {
		stop    func()
		elected <-chan struct{}
		reg     *prometheus.Registry
	}
	start := func(name string) *instance {
		in := &instance{reg: prometheus.NewRegistry()}
		metrics, err := controller.NewMetrics(in.reg)
		require.NoError(t, err)
		in.stop, in.elected = runManagerWith(t, hubCfg, name, func(o *ctrl.Options) {
			o.LeaderElection = true
			o.LeaderElectionID = controller.LeaderElectionID("leader-test")
			o.LeaderElectionNamespace = ns
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = &lease, &renew, &retry
		}, func(mgr ctrl.Manager) error {
			_, err := controller.Setup(t.Context(), mgr, controller.Config{
				Name:          "helmfleet-leader",
				Charts:        charts,
				RetryInterval: time.Hour,
				Reconciler:    reconcile.Config{PollInterval: 100 * time.Millisecond},
				Metrics:       metrics,
			})
			return err
		})
		return in
	}
	a, b := start("leader-a"), start("leader-b")
	deleteReleasesAtEnd(t, c, ns) // while the new leader runs
	isElected := func(in *instance) bool {
		select {
		case <-in.elected:
			return true
		default:
			return false
		}
	}
	require.Eventually(t, func() bool { return isElected(a) || isElected(b) }, 30*time.Second, 50*time.Millisecond, "a leader")
	leader, follower := a, b
	if isElected(b) {
		leader, follower = b, a
	}
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "first", ""))))
	waitReady(t, c, ns, "first", 1)
	reconciles := func(in *instance) float64 {
		return metricValue(t, in.reg, controller.MetricReconcileDuration, map[string]string{"kind": release.Kind})
	}
	// The duration is observed when Reconcile returns, just after the
	// status write that waitReady saw.
	assert.Eventually(t, func() bool { return reconciles(leader) >= 1 }, 10*time.Second, 20*time.Millisecond, "the leader reconciles")
	assert.False(t, isElected(follower), "one leader at a time")
	assert.Equal(t, -1.0, reconciles(follower), "the follower does not reconcile")

	leader.stop()
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "second", ""))))
	require.Eventually(t, func() bool { return isElected(follower) }, 30*time.Second, 50*time.Millisecond, "the follower takes the Lease over")
	waitReady(t, c, ns, "second", 1)
	assert.Eventually(t, func() bool { return reconciles(follower) >= 1 }, 10*time.Second, 20*time.Millisecond, "the new leader reconciles")
	var list release.ReleaseList
	require.NoError(t, c.List(ctx(t), &list, client.InNamespace(ns)))
	for _, rel := range list.Items {
		assert.Equal(t, "<none>", condStr(rel.Status, release.ConditionReconciling), "%s: nothing pending", rel.Name)
		assert.True(t, rel.Status.IsConditionTrue(release.ConditionReady), "%s: ready", rel.Name)
	}
}

// karmadaCRD serves a Karmada policy kind on the hub; release.Decode
// checks the policies strictly when the fleet reconciler reads them.
func karmadaCRD(kind string) string {
	lower := strings.ToLower(kind)
	return `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: ` + lower + `s.policy.karmada.io}
spec:
  group: policy.karmada.io
  scope: Namespaced
  names: {kind: ` + kind + `, listKind: ` + kind + `List, plural: ` + lower + `s, singular: ` + lower + `}
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
}

// TestFleetControllerOnRealClusters runs the fleet reconciler in a
// manager on the hub: the members are kubeconfig Secrets on the hub, a
// PropagationPolicy places the HelmRelease on both and an OverridePolicy
// gives member2 its own values; each member gets a real Helm release and
// the hub's HelmRelease says it is ready on both. The inventory is kept in
// Secrets on the hub: the controller is stopped, the HelmRelease deleted,
// and a new controller over the same store uninstalls it from both
// members.
func TestFleetControllerOnRealClusters(t *testing.T) {
	hubCfg := controlPlane(t, "hub").Admin
	c, err := client.New(hubCfg, client.Options{Scheme: controllerScheme(t)})
	require.NoError(t, err)
	installReleaseCRD(t, c)
	for _, kind := range []string{"PropagationPolicy", "OverridePolicy"} {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(karmadaCRD(kind)), &u.Object))
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx(t), u)))
	}
	require.Eventually(t, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(controller.OverridePolicyGVK.GroupVersion().WithKind("OverridePolicyList"))
		return c.List(ctx(t), list) == nil
	}, 30*time.Second, 100*time.Millisecond)

	const ns, membersNS, inventoryNS = "fleetctl", "fleet-members", "fleet-inventory"
	for _, n := range []string{ns, membersNS, inventoryNS} {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})))
	}
	mcs := map[string]client.Client{}
	for _, m := range []string{"member1", "member2"} {
		cp := controlPlane(t, m)
		kc, err := os.ReadFile(cp.AdminKubeconfig)
		require.NoError(t, err)
		require.NoError(t, c.Create(ctx(t), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: membersNS, Name: m + "-kubeconfig", Labels: map[string]string{controller.MemberLabel: m, "env": "prod"}},
			Data:       map[string][]byte{"value": kc},
		}))
		mc, err := client.New(cp.Admin, client.Options{})
		require.NoError(t, err)
		require.NoError(t, client.IgnoreAlreadyExists(mc.Create(ctx(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})))
		mcs[m] = mc
	}
	for _, y := range []string{`
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: fleetctl}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {env: prod}}
`, `
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo, namespace: fleetctl}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {clusterNames: [member2]}
      overriders:
        valuesOverrider:
          - merge: {replicaCount: 5}
`} {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(y), &u.Object))
		require.NoError(t, c.Create(ctx(t), u))
	}
	require.NoError(t, c.Create(ctx(t), hrObject(t, controllerRelease(ns, "podinfo", "  values: {replicaCount: 2}\n"))))

	store, err := fleet.NewObjectStore(admin(t, "hub"), fleet.ObjectStoreConfig{Namespace: inventoryNS, Name: "fleetctl"})
	require.NoError(t, err)
	var reg *prometheus.Registry // the running controller's
	startFleet := func() (stop func()) {
		reg = prometheus.NewRegistry()
		metrics, err := controller.NewMetrics(reg)
		require.NoError(t, err)
		return runManager(t, hubCfg, "helmfleet-fleet", func(mgr ctrl.Manager) error {
			_, err := controller.SetupFleet(t.Context(), mgr, controller.FleetConfig{
				Members:                &controller.SecretMembers{Reader: mgr.GetAPIReader(), Namespace: membersNS},
				MemberSecretsNamespace: membersNS,
				Charts:                 charts,
				Reconciler:             reconcile.Config{PollInterval: 100 * time.Millisecond},
				Store:                  store,
				Metrics:                metrics,
			})
			return err
		})
	}
	stop := startFleet()

	var st release.Status
	require.Eventually(t, func() bool {
		_, st, err = getHR(ctx(t), c, ns, "podinfo")
		return err == nil && st.IsConditionTrue(release.ConditionReady)
	}, 60*time.Second, 100*time.Millisecond, "ready on both members")
	assert.Equal(t, "ready on 2/2 members: member1, member2", st.GetCondition(release.ConditionReady).Message)
	for m, want := range map[string]int64{"member1": 2, "member2": 5} {
		dep := &unstructured.Unstructured{}
		dep.SetGroupVersionKind(deploymentGVK)
		require.NoError(t, mcs[m].Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep), m)
		replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas")
		assert.Equal(t, want, replicas, "%s: replicas after its overrides", m)
	}
	entries, err := store.Load(ctx(t))
	require.NoError(t, err)
	assert.Len(t, entries, 2, "an inventory entry per member")
	// Metrics are recorded when Reconcile returns, just after the status
	// write seen above.
	ready := map[string]string{"kind": release.Kind, "namespace": ns, "name": "podinfo", "type": release.ConditionReady}
	assert.Eventually(t, func() bool {
		return metricValue(t, reg, controller.MetricReconcileDuration, map[string]string{"kind": "Fleet"}) >= 1 &&
			metricValue(t, reg, controller.MetricCondition, withLabel(ready, "status", "True")) == 1
	}, 10*time.Second, 20*time.Millisecond, "reconciles timed, Ready=True")
	assert.Equal(t, 0.0, metricValue(t, reg, controller.MetricCondition, withLabel(ready, "status", "False")), "Ready=False")
	for m := range mcs {
		assert.Equal(t, 1.0, metricValue(t, reg, controller.MetricActions, map[string]string{"cluster": m, "action": string(reconcile.ActionInstall)}), "%s: installs", m)
	}

	// Restart: the release goes from the hub while no controller runs;
	// the next one finds it in the store and uninstalls it.
	stop()
	hr, _ := hrStatus(t, c, ns, "podinfo")
	require.NoError(t, c.Delete(ctx(t), hr))
	startFleet()
	for m, mc := range mcs {
		require.Eventually(t, func() bool {
			var secrets corev1.SecretList
			if err := mc.List(ctx(t), &secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm", "name": "podinfo"}); err != nil {
				return false
			}
			dep := &unstructured.Unstructured{}
			dep.SetGroupVersionKind(deploymentGVK)
			err := mc.Get(ctx(t), client.ObjectKey{Namespace: ns, Name: "podinfo"}, dep)
			return len(secrets.Items) == 0 && client.IgnoreNotFound(err) == nil && err != nil
		}, 60*time.Second, 100*time.Millisecond, "%s: podinfo uninstalled by the restarted controller", m)
	}
	require.Eventually(t, func() bool {
		entries, err = store.Load(ctx(t))
		return err == nil && len(entries) == 0
	}, 10*time.Second, 100*time.Millisecond, "inventory empty after the uninstalls: %v", entries)
	for m := range mcs {
		assert.Equal(t, 1.0, metricValue(t, reg, controller.MetricActions, map[string]string{"cluster": m, "action": string(reconcile.ActionUninstall)}), "%s: uninstalls", m)
	}
}

// metricValue gathers reg and returns the value of the series of name
// with labels (a histogram's sample count), or -1 when there is none.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.GetHistogram() != nil:
				return float64(m.GetHistogram().GetSampleCount())
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// withLabel returns labels and k=v.
func withLabel(labels map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range labels {
		if lk != k {
			out[lk] = lv
		}
	}
	return out
}
