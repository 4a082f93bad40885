package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// chartReconciler serves the vendored charts, each with edit applied to
// the loaded chart (nil: as vendored).
func chartReconciler(t *testing.T, edit func(*chart.Chart)) *reconcile.Reconciler {
	t.Helper()
	r, err := reconcile.New(reconcile.Config{
		Charts: reconcile.ChartGetterFunc(func(_ context.Context, rel *release.Release) (*reconcile.Chart, error) {
			ch, err := testcharts.Load(testcharts.Name(rel.Spec.Chart.Spec.Chart))
			if err == nil && edit != nil {
				edit(ch)
			}
			return &reconcile.Chart{Chart: ch}, err
		}),
		PollInterval: 2 * time.Millisecond,
	})
	require.NoError(t, err)
	return r
}

// The community charts install as written on a cluster with the
// default settings, and their releases become Ready: Helm's wait and
// kstatus judge every object they create ready (LoadBalancer Services
// included), and kube-prometheus-stack's custom resources are accepted
// because Helm created its CRDs first.
func TestRealChartsInstallReady(t *testing.T) {
	for _, name := range testcharts.All {
		t.Run(string(name), func(t *testing.T) {
			c := memory.New("member")
			rel := testcharts.Release(name)
			res, err := chartReconciler(t, nil).Reconcile(t.Context(), c, rel)
			require.NoError(t, err)
			assert.Equal(t, reconcile.ActionInstall, res.Last())
			ready := rel.Status.GetCondition(release.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, metav1.ConditionTrue, ready.Status, ready.Message)

			objs := c.Objects()
			require.NotEmpty(t, objs)
			for _, o := range objs {
				live, err := c.Get(t.Context(), release.RefOf(o))
				require.NoError(t, err)
				st, err := kstatus.Compute(live)
				require.NoError(t, err)
				assert.Equal(t, kstatus.CurrentStatus, st.Status, "%s %s/%s: %s", o.GetKind(), o.GetNamespace(), o.GetName(), st.Message)
			}
		})
	}
}

// On a cluster with the default settings the ingress-nginx controller's
// LoadBalancer Service gets what a real cluster gives it: a cluster IP,
// node ports, and (as a cloud controller would, once the scripted health
// says ready) an ingress address.
func TestRealChartsLoadBalancer(t *testing.T) {
	c := memory.New("member")
	rel := testcharts.Release(testcharts.IngressNginx)
	_, err := chartReconciler(t, nil).Reconcile(t.Context(), c, rel)
	require.NoError(t, err)
	svc, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: serviceGVK, Namespace: "monitoring", Name: "ingress-nginx-controller"})
	require.NoError(t, err)
	typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type")
	require.Equal(t, "LoadBalancer", typ)
	ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP")
	assert.Regexp(t, `^10\.(9[6-9]|10[0-9]|11[01])\.`, ip)
	for _, p := range ports(t, svc) {
		assert.GreaterOrEqual(t, p, int64(30000))
		assert.LessOrEqual(t, p, int64(32767))
	}
	ingress, _, _ := unstructured.NestedSlice(svc.Object, "status", "loadBalancer", "ingress")
	assert.NotEmpty(t, ingress)
}

// Helm's own install discovers the cluster after it created the chart's
// CRDs, as on a real cluster: the templates of kube-prometheus-stack see
// monitoring.coreos.com/v1 in .Capabilities.APIVersions on the first
// install (a template added to the vendored chart reports what it saw).
func TestRealChartsCapabilitiesSeeNewCRDs(t *testing.T) {
	probe := func(ch *chart.Chart) {
		ch.Templates = append(ch.Templates, &chart.File{Name: "templates/capabilities-probe.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: capabilities-probe
data:
  monitoring: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" | quote }}
  prometheus: {{ .Capabilities.APIVersions.Has "monitoring.coreos.com/v1/Prometheus" | quote }}
  kubeVersion: {{ .Capabilities.KubeVersion.Version | quote }}
`)})
	}
	c := memory.New("member")
	caps, err := c.Capabilities(t.Context())
	require.NoError(t, err)
	require.False(t, caps.APIVersions.Has("monitoring.coreos.com/v1"), "before the install")

	rel := testcharts.Release(testcharts.KubePrometheusStack)
	_, err = chartReconciler(t, probe).Reconcile(t.Context(), c, rel)
	require.NoError(t, err)
	cm, err := c.Get(t.Context(), release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "monitoring", Name: "capabilities-probe"})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"monitoring": "true", "prometheus": "true", "kubeVersion": memory.DefaultKubeVersion()}, cm.Object["data"])
}

// A chart whose kubeVersion the cluster does not satisfy is refused
// before anything is written, naming chart, constraint and version.
func TestRealChartsKubeVersionError(t *testing.T) {
	c := memory.New("old", memory.WithKubeVersion("v1.20.0"))
	rel := testcharts.Release(testcharts.Podinfo)
	_, err := chartReconciler(t, nil).Reconcile(t.Context(), c, rel)
	var kv *release.KubeVersionError
	require.ErrorAs(t, err, &kv)
	ch, err := testcharts.Load(testcharts.Podinfo)
	require.NoError(t, err)
	assert.Equal(t, "podinfo", kv.Chart)
	assert.Equal(t, ch.Metadata.KubeVersion, kv.Constraint)
	assert.NotEmpty(t, kv.Constraint)
	assert.Equal(t, "v1.20.0", kv.KubeVersion)
	assert.Equal(t, "old", kv.Cluster)
	assert.Empty(t, c.Objects(), "nothing written")
}
