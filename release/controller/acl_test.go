package controller

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/source"
)

// recordingReader records the namespace of every object read through it.
type recordingReader struct {
	client.Reader
	mu  sync.Mutex
	nss map[string]bool
}

func (r *recordingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.mu.Lock()
	r.nss[key.Namespace] = true
	r.mu.Unlock()
	return r.Reader.Get(ctx, key, obj, opts...)
}

func (r *recordingReader) read(ns string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nss[ns]
}

// tenantObjects are a HelmRepository podinfo in apps and in tenant-b
// (with distinct URLs) and a HelmChart podinfo in tenant-b.
func tenantObjects() []client.Object {
	var out []client.Object
	for _, ns := range []string{"apps", "tenant-b"} {
		out = append(out, &source.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}, Spec: source.HelmRepositorySpec{URL: "https://" + ns + ".example.com"}})
	}
	return append(out, &source.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "podinfo"},
		Spec: source.HelmChartSpec{Chart: "podinfo", Version: "6.5.0", SourceRef: source.LocalHelmChartSourceReference{Kind: source.KindHelmRepository, Name: "podinfo"}}})
}

// tenantDB is the HelmRelease tenant-b/db, ready or not.
func tenantDB(t *testing.T, ready bool) *release.Release {
	db := hr(t, strings.Replace(podinfoYAML, "name: podinfo, namespace: apps", "name: db, namespace: tenant-b", 1))
	if ready {
		db.Status.ObservedGeneration = db.Generation
		db.Status.SetCondition(metav1.Condition{Type: release.ConditionReady, Status: metav1.ConditionTrue, Reason: release.ReasonInstallSucceeded})
	}
	return db
}

func sourceRefIn(ns string) func(*release.Release) {
	return func(rel *release.Release) { rel.Spec.Chart.Spec.SourceRef.Namespace = ns }
}

func chartRefIn(ns string) func(*release.Release) {
	return func(rel *release.Release) {
		rel.Spec.Chart = nil
		rel.Spec.ChartRef = &release.CrossNamespaceSourceReference{Kind: source.KindHelmChart, Name: "podinfo", Namespace: ns}
	}
}

func dependsOnIn(ns string) func(*release.Release) {
	return func(rel *release.Release) {
		rel.Spec.DependsOn = []release.DependencyReference{{Name: "db", Namespace: ns}}
	}
}

// TestNoCrossNamespaceRefs: with Config.NoCrossNamespaceRefs, a
// HelmRelease whose chart sourceRef, chartRef or dependsOn names another
// namespace is Ready False and Stalled, reason AccessDenied, a terminal
// error, before anything is read from the other namespace, a finalizer
// is added or a cluster is built; references in its own namespace work;
// with the option off, cross-namespace references work as in Flux.
func TestNoCrossNamespaceRefs(t *testing.T) {
	const denied = "HelmRelease apps/podinfo: %s: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"
	for _, tc := range []struct {
		name  string
		on    bool
		edit  func(*release.Release)
		db    *bool  // tenant-b/db: nil absent, else ready or not
		field string // the refused field; "" when installed
		url   string // the repository the chart came from
	}{
		{"on: chart sourceRef", true, sourceRefIn("tenant-b"), nil, "spec.chart.spec.sourceRef.namespace", ""},
		{"on: chartRef", true, chartRefIn("tenant-b"), nil, "spec.chartRef.namespace", ""},
		{"on: dependsOn, dependency absent", true, dependsOnIn("tenant-b"), nil, "spec.dependsOn[0].namespace", ""},
		{"on: dependsOn, dependency not ready", true, dependsOnIn("tenant-b"), new(false), "spec.dependsOn[0].namespace", ""},
		{"on: dependsOn, dependency ready", true, dependsOnIn("tenant-b"), new(true), "spec.dependsOn[0].namespace", ""},
		{"on: own namespace spelled out", true, sourceRefIn("apps"), nil, "", "https://apps.example.com"},
		{"on: own namespace unset", true, sourceRefIn(""), nil, "", "https://apps.example.com"},
		{"off: chart sourceRef", false, sourceRefIn("tenant-b"), nil, "", "https://tenant-b.example.com"},
		{"off: chartRef, the HelmChart's own repository", false, chartRefIn("tenant-b"), nil, "", "https://tenant-b.example.com"},
		{"off: dependsOn a ready release", false, func(rel *release.Release) { dependsOnIn("tenant-b")(rel); sourceRefIn("apps")(rel) }, new(true), "", "https://apps.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked []string
			resolver := source.ResolverFunc(func(_ context.Context, ref source.Ref) (*source.Chart, error) {
				asked = append(asked, ref.HelmRepository.Spec.URL)
				return &source.Chart{Chart: testchart.MustLoad("6.5.0")}, nil
			})
			objs := append(tenantObjects(), hr(t, podinfoYAML, tc.edit))
			if tc.db != nil {
				objs = append(objs, tenantDB(t, *tc.db))
			}
			e := newEnv(t, Config{Resolver: resolver, NoCrossNamespaceRefs: tc.on}, objs...)
			rec := &recordingReader{Reader: e.r.cache, nss: map[string]bool{}}
			e.r.cache = rec

			_, err := e.reconcile("podinfo")
			u, st := e.get("podinfo")
			if tc.field == "" {
				require.NoError(t, err)
				assert.Equal(t, "True InstallSucceeded", condition(st, release.ConditionReady))
				assert.Equal(t, []string{tc.url}, asked)
				return
			}
			want := strings.Replace(denied, "%s", tc.field, 1)
			require.Error(t, err)
			assert.True(t, errors.Is(err, ctrlreconcile.TerminalError(nil)), "not retried until the spec changes: %v", err)
			var ad *release.AccessDeniedError
			require.ErrorAs(t, err, &ad)
			assert.Equal(t, "False AccessDenied", condition(st, release.ConditionReady))
			assert.Equal(t, "True AccessDenied", condition(st, release.ConditionStalled))
			assert.Equal(t, want, st.GetCondition(release.ConditionReady).Message, "nothing about tenant-b/db")
			assert.Equal(t, want, st.GetCondition(release.ConditionStalled).Message)
			assert.Equal(t, "<none>", condition(st, release.ConditionReconciling))
			assert.Equal(t, u.Generation, st.ObservedGeneration)
			assert.Empty(t, asked, "no chart resolved")
			assert.False(t, rec.read("tenant-b"), "nothing read from tenant-b")
			assert.Empty(t, e.built, "no cluster built")
			assert.NotContains(t, u.GetFinalizers(), Finalizer)
			assert.Equal(t, []string{"Warning AccessDenied " + want}, e.drainEvents())
		})
	}
}

// TestFleetNoCrossNamespaceRefs: FleetConfig.NoCrossNamespaceRefs
// refuses a HelmRelease that depends on another namespace's release on
// every member, Ready False and Stalled with reason AccessDenied,
// installing nothing; once the spec no longer names another namespace,
// it is installed and no longer Stalled. Off (Flux's default), it is
// installed after the other namespace's release.
func TestFleetNoCrossNamespaceRefs(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			var pps []client.Object
			for _, y := range []string{placeEverywhere, strings.NewReplacer("name: podinfo", "name: db", "namespace: apps", "namespace: tenant-b").Replace(placeEverywhere)} {
				pp := &unstructured.Unstructured{}
				require.NoError(t, yaml.Unmarshal([]byte(y), &pp.Object))
				pps = append(pps, pp)
			}
			hub := fake.NewClientBuilder().WithScheme(testScheme(t)).
				WithObjects(append(pps, hr(t, podinfoYAML, dependsOnIn("tenant-b")), tenantDB(t, false))...).WithStatusSubresource(&release.Release{}).Build()
			dev, prod := memory.New("dev-1"), memory.New("prod-1")
			m, err := NewMetrics(nil)
			require.NoError(t, err)
			r, err := NewFleet(FleetConfig{
				Client: hub, Charts: testCharts, Metrics: m, Events: events.NewFakeRecorder(10), NoCrossNamespaceRefs: on,
				Members: StaticMembers{
					{Cluster: dev, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}},
					{Cluster: prod, Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
				},
			})
			require.NoError(t, err)
			get := func() *release.Release {
				got := &release.Release{}
				require.NoError(t, hub.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, got))
				return got
			}

			_, err = r.Reconcile(t.Context(), ctrl.Request{NamespacedName: fleetRequest.NamespacedName})
			require.NoError(t, err)
			got := get()
			if !on {
				assert.Equal(t, "True ReconciliationSucceeded", condition(got.Status, release.ConditionReady))
				assert.Nil(t, got.Status.GetCondition(release.ConditionStalled))
				assert.Contains(t, dev.Summary(), "Deployment apps/podinfo")
				return
			}
			const refusal = "HelmRelease apps/podinfo: spec.dependsOn[0].namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"
			assert.Equal(t, "False AccessDenied", condition(got.Status, release.ConditionReady))
			assert.Equal(t, "True AccessDenied", condition(got.Status, release.ConditionStalled))
			assert.Equal(t, "ready on 0/2 members; dev-1: "+refusal+"; prod-1: "+refusal, got.Status.GetCondition(release.ConditionReady).Message)
			for _, c := range []*memory.Cluster{dev, prod} {
				assert.NotContains(t, strings.Join(c.Summary(), "\n"), "apps/podinfo", "nothing installed")
				assert.Contains(t, c.Summary(), "Deployment tenant-b/db-podinfo", "tenant-b's own release is")
			}

			got.Spec.DependsOn = nil
			got.Generation++
			require.NoError(t, hub.Update(t.Context(), got))
			_, err = r.Reconcile(t.Context(), ctrl.Request{NamespacedName: fleetRequest.NamespacedName})
			require.NoError(t, err)
			got = get()
			assert.Equal(t, "True ReconciliationSucceeded", condition(got.Status, release.ConditionReady))
			assert.Nil(t, got.Status.GetCondition(release.ConditionStalled), "no longer stalled")
			assert.Contains(t, dev.Summary(), "Deployment apps/podinfo")
		})
	}
}
