package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
	"github.com/helmfleet/helmfleet/values"
)

// testCharts serves the embedded test chart at the version a release asks
// for.
var testCharts = reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
	ch, err := testchart.Load(rel.Spec.Chart.Spec.Version)
	return &reconcile.Chart{Chart: ch}, err
})

const podinfoYAML = `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: podinfo, namespace: apps, generation: 1}
spec:
  interval: 10m
  chart:
    spec:
      chart: podinfo
      version: "6.5.0"
      sourceRef: {kind: HelmRepository, name: podinfo}
  values:
    replicaCount: 2
`

func hr(t *testing.T, y string, edit ...func(*release.Release)) *release.Release {
	t.Helper()
	rel := &release.Release{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(y), rel))
	for _, e := range edit {
		e(rel)
	}
	return rel
}

func testScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, AddToScheme(s))
	return s
}

// env is a reconciler over a fake client and in-memory clusters.
type env struct {
	t       *testing.T
	client  client.Client
	r       *HelmReleaseReconciler
	events  *events.FakeRecorder
	reg     *prometheus.Registry
	mu      sync.Mutex
	built   []string // names NewCluster was called with
	configs []*rest.Config
	members map[string]*memory.Cluster
	health  memory.HealthFunc
}

func newEnv(t *testing.T, cfg Config, objs ...client.Object) *env {
	t.Helper()
	e := &env{t: t, events: events.NewFakeRecorder(100), reg: prometheus.NewRegistry(), members: map[string]*memory.Cluster{}, health: memory.AlwaysReady}
	b := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).WithStatusSubresource(&release.Release{})
	for field, fn := range Indexers() {
		b = b.WithIndex(&release.Release{}, field, fn)
	}
	for field, fn := range HelmChartIndexers() {
		b = b.WithIndex(&source.HelmChart{}, field, fn)
	}
	e.client = b.Build()
	m, err := NewMetrics(e.reg)
	require.NoError(t, err)
	cfg.Client, cfg.REST, cfg.Events, cfg.Metrics = e.client, &rest.Config{Host: "https://local.test"}, e.events, m
	if cfg.Charts == nil && cfg.Resolver == nil {
		cfg.Charts = testCharts
	}
	cfg.Reconciler.PollInterval = time.Millisecond
	cfg.NewCluster = func(name string, rc *rest.Config) (release.Cluster, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.built = append(e.built, name)
		e.configs = append(e.configs, rc)
		if c, ok := e.members[rc.Host]; ok {
			return c, nil
		}
		c := memory.New(name, memory.WithHealth(func(u *unstructured.Unstructured) memory.Health { return e.health(u) }))
		e.members[rc.Host] = c
		return c, nil
	}
	e.r, err = New(cfg)
	require.NoError(t, err)
	return e
}

func (e *env) reconcile(name string) (ctrl.Result, error) {
	e.t.Helper()
	return e.r.Reconcile(e.t.Context(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "apps", Name: name}})
}

func (e *env) get(name string) (*release.Release, release.Status) {
	e.t.Helper()
	rel := &release.Release{}
	require.NoError(e.t, e.client.Get(e.t.Context(), client.ObjectKey{Namespace: "apps", Name: name}, rel))
	return rel, rel.Status
}

func (e *env) drainEvents() []string {
	var out []string
	for {
		select {
		case ev := <-e.events.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func condition(st release.Status, typ string) string {
	c := st.GetCondition(typ)
	if c == nil {
		return "<none>"
	}
	return string(c.Status) + " " + c.Reason
}

func TestReconcileInstallsAndWritesFluxStatus(t *testing.T) {
	e := newEnv(t, Config{}, hr(t, podinfoYAML))
	res, err := e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, res.RequeueAfter, "done: next reconcile after spec.interval")

	u, st := e.get("podinfo")
	assert.Equal(t, "True InstallSucceeded", condition(st, release.ConditionReady))
	assert.Equal(t, "True InstallSucceeded", condition(st, release.ConditionReleased))
	assert.Equal(t, "<none>", condition(st, release.ConditionReconciling))
	assert.Equal(t, int64(1), st.ObservedGeneration)
	require.NotEmpty(t, st.History)
	assert.Equal(t, 1, st.History[0].Version)
	assert.Contains(t, u.GetFinalizers(), Finalizer)
	assert.EqualValues(t, 2, u.Spec.Values["replicaCount"], "the status write leaves the spec alone")

	assert.Equal(t, []string{LocalClusterName}, e.built)
	assert.Equal(t, []string{"Normal InstallSucceeded Helm install succeeded for release apps/podinfo.v1 with chart podinfo@6.5.0"}, e.drainEvents())
	assert.Equal(t, 1.0, testutil.ToFloat64(e.r.metrics.condition.WithLabelValues("HelmRelease", "apps", "podinfo", "Ready", "True")))
	assert.Equal(t, 0.0, testutil.ToFloat64(e.r.metrics.condition.WithLabelValues("HelmRelease", "apps", "podinfo", "Ready", "False")))
	assert.Equal(t, 1.0, testutil.ToFloat64(e.r.metrics.actions.WithLabelValues(LocalClusterName, "install")))
	n, err := testutil.GatherAndCount(e.reg, MetricReconcileDuration)
	require.NoError(t, err)
	assert.Equal(t, 1, n)

	// In sync: nothing to do, no event, the cluster is not built again.
	res, err = e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, res.RequeueAfter)
	assert.Empty(t, e.drainEvents())
	assert.Len(t, e.built, 1, "the target's Cluster is cached")
}

func TestValuesFromChangeUpgrades(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "podinfo-values"}, Data: map[string]string{"values.yaml": "podAnnotations: {team: a}\n"}}
	y := podinfoYAML + "  valuesFrom:\n    - {kind: ConfigMap, name: podinfo-values}\n"
	e := newEnv(t, Config{}, hr(t, y), cm)
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)

	// The ConfigMap's change maps to the release through the index.
	got := e.r.mapIndex(IndexConfigMaps, nameKey)(t.Context(), cm)
	assert.Equal(t, []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "podinfo"}}}, got)
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "unrelated"}}
	assert.Empty(t, e.r.mapIndex(IndexConfigMaps, nameKey)(t.Context(), other))

	cm.Data["values.yaml"] = "podAnnotations: {team: b}\n"
	require.NoError(t, e.client.Update(t.Context(), cm))
	_, err = e.reconcile("podinfo")
	require.NoError(t, err)
	_, st := e.get("podinfo")
	assert.Equal(t, "True UpgradeSucceeded", condition(st, release.ConditionReady))
	require.NotEmpty(t, st.History)
	assert.Equal(t, 2, st.History[0].Version)
}

func TestValuesErrorRequeuesAfterRetryInterval(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "creds"}, Data: map[string][]byte{"other": []byte("hunter2-password")}}
	y := podinfoYAML + "  valuesFrom:\n    - {kind: Secret, name: creds, valuesKey: password, targetPath: auth.password}\n    - {kind: ConfigMap, name: missing}\n"
	e := newEnv(t, Config{RetryInterval: 42 * time.Second}, hr(t, y), secret)
	res, err := e.reconcile("podinfo")
	require.NoError(t, err, "a values error is not the backoff's business")
	assert.Equal(t, 42*time.Second, res.RequeueAfter)
	_, st := e.get("podinfo")
	ready := st.GetCondition(release.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, "False ValuesError", condition(st, release.ConditionReady))
	assert.Contains(t, ready.Message, "creds")
	assert.NotContains(t, ready.Message, "hunter2")
	for _, ev := range e.drainEvents() {
		assert.NotContains(t, ev, "hunter2")
	}
}

func TestDependentWaitsForDependency(t *testing.T) {
	dep := strings.Replace(podinfoYAML, "name: podinfo,", "name: backend,", 1)
	app := strings.Replace(podinfoYAML, "name: podinfo,", "name: frontend,", 1) + "  releaseName: frontend\n  dependsOn:\n    - name: backend\n"
	dep = strings.Replace(dep, "  values:", "  releaseName: backend\n  values:", 1)
	e := newEnv(t, Config{RetryInterval: 7 * time.Second}, hr(t, dep), hr(t, app))

	res, err := e.reconcile("frontend")
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, res.RequeueAfter)
	_, st := e.get("frontend")
	assert.Equal(t, "False DependencyNotReady", condition(st, release.ConditionReady))
	assert.Equal(t, "dependency 'apps/backend' is not ready", st.GetCondition(release.ConditionReady).Message)
	assert.Empty(t, st.History, "nothing installed")

	// backend becomes ready: the event maps to frontend.
	old, _ := e.get("backend")
	_, err = e.reconcile("backend")
	require.NoError(t, err)
	now, _ := e.get("backend")
	assert.True(t, becameReady{}.Update(updateEvent(old, now)))
	assert.False(t, becameReady{}.Update(updateEvent(now, now)), "only the transition to ready")
	assert.Equal(t, []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "frontend"}}}, e.r.mapDependents(t.Context(), now))

	_, err = e.reconcile("frontend")
	require.NoError(t, err)
	_, st = e.get("frontend")
	assert.Equal(t, "True InstallSucceeded", condition(st, release.ConditionReady))
}

func TestStalledReleaseIsTerminal(t *testing.T) {
	y := strings.Replace(podinfoYAML, "interval: 10m", "interval: 10m\n  timeout: 20ms", 1)
	e := newEnv(t, Config{}, hr(t, y))
	e.health = func(u *unstructured.Unstructured) memory.Health {
		if u.GetKind() == "Deployment" {
			return memory.Health{Message: "image pull back-off"}
		}
		return memory.Health{Ready: true}
	}
	_, err := e.reconcile("podinfo")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ctrlreconcile.TerminalError(nil)), "stalled: no retry until the release changes: %v", err)
	var stalled *reconcile.StalledError
	assert.ErrorAs(t, err, &stalled)
	_, st := e.get("podinfo")
	assert.Equal(t, "True RetriesExceeded", condition(st, release.ConditionStalled))
	// As in Flux, Ready keeps the failure that used up the retries.
	assert.Equal(t, "False InstallFailed", condition(st, release.ConditionReady))
	evs := e.drainEvents()
	require.NotEmpty(t, evs)
	assert.True(t, strings.HasPrefix(evs[len(evs)-1], "Warning "), evs)
}

func TestInvalidSpecStallsWithFieldPath(t *testing.T) {
	// The CRD's schema cannot say "exactly one of chart and chartRef".
	e := newEnv(t, Config{}, hr(t, podinfoYAML, func(rel *release.Release) {
		rel.Spec.ChartRef = &release.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "podinfo"}
	}))
	_, err := e.reconcile("podinfo")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ctrlreconcile.TerminalError(nil)))
	var invalid *InvalidSpecError
	require.ErrorAs(t, err, &invalid)
	assert.Contains(t, err.Error(), "spec.chartRef")
	_, st := e.get("podinfo")
	assert.Equal(t, "True InvalidSpec", condition(st, release.ConditionStalled))
	assert.Contains(t, st.GetCondition(release.ConditionReady).Message, "spec.chartRef")
	assert.Empty(t, e.built, "no cluster touched")
}

func TestShardFiltersReleases(t *testing.T) {
	labelled := hr(t, podinfoYAML, func(rel *release.Release) { rel.SetLabels(map[string]string{ShardLabel: "b"}) })
	for _, tc := range []struct {
		name  string
		shard string
		want  bool
	}{
		{"own shard", "b", true},
		{"other shard", "a", false},
		{"unsharded instance", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{Shard: ShardSelector(tc.shard)}, labelled.DeepCopy())
			_, err := e.reconcile("podinfo")
			require.NoError(t, err)
			_, st := e.get("podinfo")
			assert.Equal(t, tc.want, st.GetCondition(release.ConditionReady) != nil)
			assert.Equal(t, tc.want, ShardPredicate(ShardSelector(tc.shard)).Generic(genericEvent(labelled)))
		})
	}
	assert.True(t, ShardPredicate(ShardSelector("")).Generic(genericEvent(hr(t, podinfoYAML))), "unlabelled releases are the unsharded instance's")
	assert.True(t, ShardPredicate(nil).Generic(genericEvent(labelled)), "no shard: all")
	assert.Equal(t, "helmfleet-helmrelease-b", LeaderElectionID("b"))
}

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: remote, cluster: {server: "https://remote.test:6443"}}]
users: [{name: admin, user: {token: abc}}]
contexts: [{name: remote, context: {cluster: remote, user: admin}}]
current-context: remote
`

func TestRemoteClusterFromKubeconfigSecret(t *testing.T) {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "remote-kubeconfig"}, Data: map[string][]byte{"value.yaml": []byte(kubeconfig)}}
	y := podinfoYAML + "  serviceAccountName: deployer\n  kubeConfig:\n    secretRef: {name: remote-kubeconfig}\n"
	e := newEnv(t, Config{}, hr(t, y), secret)
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)
	require.Equal(t, []string{"apps/remote-kubeconfig as deployer"}, e.built)
	assert.Equal(t, "https://remote.test:6443", e.configs[0].Host)
	assert.Equal(t, "system:serviceaccount:apps:deployer", e.configs[0].Impersonate.UserName)
	assert.Equal(t, 1.0, testutil.ToFloat64(e.r.metrics.actions.WithLabelValues("apps/remote-kubeconfig as deployer", "install")))
	assert.Equal(t, []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "podinfo"}}},
		e.r.mapIndex(IndexSecrets, nameKey)(t.Context(), secret), "a kubeconfig rotation reconciles the release")

	_, err = e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Len(t, e.built, 1, "same Secret version: cached")

	secret.Data["value.yaml"] = []byte(strings.Replace(kubeconfig, "token: abc", "token: def", 1))
	require.NoError(t, e.client.Update(t.Context(), secret))
	_, err = e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Len(t, e.built, 2, "a new Secret version builds a new client")
	assert.Equal(t, 1, e.r.targets.size(), "the old one is dropped")
}

func TestKubeconfigErrorsNameNoContent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret *corev1.Secret
		want   string
	}{
		{"missing Secret", nil, "spec.kubeConfig.secretRef.name: Secret apps/kc not found"},
		{"no key", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "kc"}, Data: map[string][]byte{"config": []byte("s3cr3t")}},
			`spec.kubeConfig.secretRef.key: Secret apps/kc has neither key "value" nor "value.yaml"`},
		{"not a kubeconfig", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "kc"}, Data: map[string][]byte{"value": []byte("s3cr3t: [")}},
			`spec.kubeConfig.secretRef: kubeconfig in key "value" of Secret apps/kc: does not parse as a kubeconfig`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{hr(t, podinfoYAML+"  kubeConfig:\n    secretRef: {name: kc}\n")}
			if tc.secret != nil {
				objs = append(objs, tc.secret)
			}
			e := newEnv(t, Config{RetryInterval: time.Minute}, objs...)
			res, err := e.reconcile("podinfo")
			require.NoError(t, err)
			assert.Equal(t, time.Minute, res.RequeueAfter)
			_, st := e.get("podinfo")
			ready := st.GetCondition(release.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, release.ReasonInitFailed, ready.Reason)
			assert.Contains(t, ready.Message, tc.want)
			assert.NotContains(t, ready.Message, "s3cr3t")
		})
	}
}

func TestDeleteUninstalls(t *testing.T) {
	e := newEnv(t, Config{}, hr(t, podinfoYAML))
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)
	member := e.members["https://local.test"]
	require.NotEmpty(t, member.Summary())

	u, _ := e.get("podinfo")
	require.NoError(t, e.client.Delete(t.Context(), u))
	_, err = e.reconcile("podinfo")
	require.NoError(t, err)
	assert.NotContains(t, strings.Join(member.Summary(), "\n"), "Deployment apps/podinfo")
	err = e.client.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, &release.Release{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the finalizer is gone and the object with it: %v", err)
	assert.Contains(t, e.drainEvents(), "Normal UninstallSucceeded Helm uninstall of apps/podinfo succeeded")
	assert.Equal(t, 0, e.r.targets.size())
}

// TestDeleteWithoutSnapshotLeavesTheRelease: as Flux, a HelmRelease whose
// status history records no release is deleted without uninstalling the
// Helm release of its name (it may be someone else's), and says so.
func TestDeleteWithoutSnapshotLeavesTheRelease(t *testing.T) {
	e := newEnv(t, Config{}, hr(t, podinfoYAML))
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)
	member := e.members["https://local.test"]
	require.Contains(t, strings.Join(member.Summary(), "\n"), "Deployment apps/podinfo")

	u, _ := e.get("podinfo")
	u.Status.History = nil
	require.NoError(t, e.client.Status().Update(t.Context(), u))
	require.NoError(t, e.client.Delete(t.Context(), u))
	_, err = e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Contains(t, strings.Join(member.Summary(), "\n"), "Deployment apps/podinfo", "the Helm release stays")
	err = e.client.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, &release.Release{})
	assert.True(t, client.IgnoreNotFound(err) == nil && err != nil, "the finalizer is gone and the object with it: %v", err)
	assert.Contains(t, strings.Join(e.drainEvents(), "\n"), "Warning UninstallFailed deleted without uninstalling: release apps/podinfo on cluster")
}

func TestValuesReader(t *testing.T) {
	c := fake.NewClientBuilder().WithObjects(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "cm"}, Data: map[string]string{"values.yaml": "a: 1"}, BinaryData: map[string][]byte{"bin": {1}}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "s"}, Data: map[string][]byte{"values.yaml": []byte("b: 2")}},
	).Build()
	r := ValuesReader{Reader: c}
	got, err := r.Read(t.Context(), values.KindConfigMap, "apps", "cm")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"values.yaml": []byte("a: 1")}, got, ".data only, as Flux")
	got, err = r.Read(t.Context(), values.KindSecret, "apps", "s")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"values.yaml": []byte("b: 2")}, got)
	_, err = r.Read(t.Context(), values.KindSecret, "apps", "nope")
	assert.ErrorIs(t, err, values.ErrNotFound)
	assert.Contains(t, err.Error(), "Secret apps/nope")
	_, err = r.Read(t.Context(), values.KindConfigMap, "other", "cm")
	assert.ErrorIs(t, err, values.ErrNotFound)

	// The same reader hands a resolver the keys of spec.verify.secretRef.
	var keys source.SecretReader = r
	got, err = keys.SecretData(t.Context(), "apps", "s")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"values.yaml": []byte("b: 2")}, got)
	_, err = keys.SecretData(t.Context(), "apps", "cm")
	assert.ErrorIs(t, err, values.ErrNotFound, "a ConfigMap is not a Secret of keys")
}

func TestResultMapping(t *testing.T) {
	r := &HelmReleaseReconciler{retry: time.Minute}
	log := ctrl.Log
	actionErr := &reconcile.ActionError{Release: "a/b", Cluster: "c", Action: reconcile.ActionUpgrade, Err: errors.New("boom")}
	for _, tc := range []struct {
		name     string
		res      reconcile.Result
		err      error
		want     ctrl.Result
		wantErr  bool
		terminal bool
	}{
		{"done", reconcile.Result{Next: reconcile.NextDone, RequeueAfter: time.Hour}, nil, ctrl.Result{RequeueAfter: time.Hour}, false, false},
		{"requeue at once", reconcile.Result{Next: reconcile.NextRequeue}, nil, ctrl.Result{RequeueAfter: immediately}, false, false},
		{"retry on failure", reconcile.Result{Next: reconcile.NextRequeue, RequeueAfter: 5 * time.Minute}, actionErr, ctrl.Result{RequeueAfter: 5 * time.Minute}, false, false},
		{"failed action: backoff", reconcile.Result{Next: reconcile.NextRequeue}, actionErr, ctrl.Result{}, true, false},
		{"stalled", reconcile.Result{Next: reconcile.NextStalled}, &reconcile.StalledError{Reason: release.ReasonRetriesExceeded}, ctrl.Result{}, true, true},
		{"values", reconcile.Result{Next: reconcile.NextRequeue}, &reconcile.StageError{Reason: release.ReasonValuesError, Err: errors.New("x")}, ctrl.Result{RequeueAfter: time.Minute}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.result(log, &tc.res, tc.err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantErr, err != nil)
			assert.Equal(t, tc.terminal, errors.Is(err, ctrlreconcile.TerminalError(nil)))
		})
	}
}

func TestNewRequiresAChartGetter(t *testing.T) {
	c := fake.NewClientBuilder().Build()
	_, err := New(Config{Client: c})
	assert.ErrorContains(t, err, "one of Config.Charts and Config.Resolver is required")
	_, err = New(Config{Charts: testCharts})
	assert.ErrorContains(t, err, "Config.Client is required")
}

func TestSourcesResolveAndTrigger(t *testing.T) {
	repo := &source.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "podinfo"}, Spec: source.HelmRepositorySpec{URL: "https://charts.example.com"}}
	var asked []string
	resolver := source.ResolverFunc(func(_ context.Context, ref source.Ref) (*source.Chart, error) {
		asked = append(asked, ref.HelmRepository.Spec.URL+" "+ref.Chart+"@"+ref.Version)
		return &source.Chart{Chart: testchart.MustLoad("6.5.0")}, nil
	})
	e := newEnv(t, Config{Resolver: resolver}, hr(t, podinfoYAML), repo)
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Equal(t, []string{"https://charts.example.com podinfo@6.5.0"}, asked, "the HelmRepository was read from the cluster")
	_, st := e.get("podinfo")
	assert.Equal(t, "True InstallSucceeded", condition(st, release.ConditionReady))
	assert.Equal(t, []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "apps", Name: "podinfo"}}},
		e.r.mapIndex(IndexSources, sourceKeyOf)(t.Context(), repo), "a change of the repository reconciles the release")

	require.NoError(t, e.client.Delete(t.Context(), repo))
	u, _ := e.get("podinfo")
	u.Spec.Chart.Spec.Version = "6.5.1"
	u.Generation = 2
	require.NoError(t, e.client.Update(t.Context(), u))
	res, err := e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Equal(t, DefaultRetryInterval, res.RequeueAfter, "a missing source is retried after the interval")
	_, st = e.get("podinfo")
	assert.Equal(t, "False ArtifactFailed", condition(st, release.ConditionReady))
	assert.Contains(t, st.GetCondition(release.ConditionReady).Message, "HelmRepository apps/podinfo")
}

// TestUninstallRemediationWarningIsAnEvent: an upgrade whose failure would
// be remediated by uninstalling the deployed and healthy revision says so
// in a Warning event, as issue 27 asks: the strategy is honoured as
// written, and loudly.
func TestUninstallRemediationWarningIsAnEvent(t *testing.T) {
	y := podinfoYAML + "  upgrade:\n    remediation: {retries: 1, strategy: uninstall}\n"
	e := newEnv(t, Config{}, hr(t, y))
	_, err := e.reconcile("podinfo")
	require.NoError(t, err)
	e.drainEvents()

	rel, _ := e.get("podinfo")
	rel.Spec.Values["replicaCount"] = 3
	rel.Generation = 2
	require.NoError(t, e.client.Update(t.Context(), rel))
	_, err = e.reconcile("podinfo")
	require.NoError(t, err)
	assert.Contains(t, e.drainEvents(), "Warning "+EventReasonWarning+
		" release apps/podinfo: remediation would uninstall revision 1, which is deployed and healthy (apps/podinfo.v1 with chart podinfo@6.5.0; upgrade.remediation.strategy: uninstall)")
}
