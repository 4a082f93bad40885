package releasetest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/release"
)

var serviceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Service"}

// service is a Service of type typ (none when empty) with spec fields
// extra and the given ports, each {"name": …, "port": …} plus extras.
func service(namespace, name, typ string, extra map[string]any, ports ...map[string]any) *unstructured.Unstructured {
	obj := newObject(serviceGVK, namespace, name)
	spec := map[string]any{}
	if typ != "" {
		spec["type"] = typ
	}
	for k, v := range extra {
		spec[k] = v
	}
	if len(ports) > 0 {
		list := make([]any, 0, len(ports))
		for _, p := range ports {
			list = append(list, p)
		}
		spec["ports"] = list
	}
	obj.Object["spec"] = spec
	return obj
}

func port(name string, number int64) map[string]any {
	return map[string]any{"name": name, "port": number, "protocol": "TCP"}
}

func specString(obj *unstructured.Unstructured, fields ...string) string {
	s, _, _ := unstructured.NestedString(obj.Object, append([]string{"spec"}, fields...)...)
	return s
}

func specStrings(obj *unstructured.Unstructured, fields ...string) []string {
	s, _, _ := unstructured.NestedStringSlice(obj.Object, append([]string{"spec"}, fields...)...)
	return s
}

// nodePorts returns the nodePort of each port of a Service (0 when it has
// none).
func nodePorts(t *testing.T, obj *unstructured.Unstructured) []int64 {
	t.Helper()
	list, _, err := unstructured.NestedSlice(obj.Object, "spec", "ports")
	require.NoError(t, err)
	out := make([]int64, 0, len(list))
	for _, p := range list {
		np, _, err := unstructured.NestedInt64(p.(map[string]any), "nodePort")
		require.NoError(t, err)
		out = append(out, np)
	}
	return out
}

// ownsField reports whether manager's managedFields entry of obj names
// the field (as "f:clusterIP").
func ownsField(obj *unstructured.Unstructured, manager, field string) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == manager && e.FieldsV1 != nil && strings.Contains(string(e.FieldsV1.Raw), `"`+field+`"`) {
			return true
		}
	}
	return false
}

// testServices checks what an API server allocates to Services: a
// cluster IP (none for ExternalName, "None" kept for a headless one, a
// requested one kept), node ports for NodePort and LoadBalancer ports, all
// owned by no field manager and kept when the applier applies again
// without them; a cluster IP or node port another Service holds is an
// error.
func (s *suite) testServices(t *testing.T) {
	apply := func(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
		t.Helper()
		got, err := s.c.Apply(s.ctx(t), obj, release.ApplyOptions{FieldManager: managerA})
		require.NoError(t, err, "apply Service %s", obj.GetName())
		return got
	}
	get := func(t *testing.T, name string) *unstructured.Unstructured {
		t.Helper()
		got, err := s.c.Get(s.ctx(t), release.ObjectRef{GroupVersionKind: serviceGVK, Namespace: s.objects, Name: name})
		require.NoError(t, err)
		return got
	}
	selector := map[string]any{"selector": map[string]any{"app": "web"}}
	var allocated netip.Addr
	t.Run("cluster IP", func(t *testing.T) {
		got := apply(t, service(s.objects, "svc-cluster-ip", "ClusterIP", selector, port("http", 80)))
		ip := specString(got, "clusterIP")
		addr, err := netip.ParseAddr(ip)
		require.NoError(t, err, "clusterIP %q", ip)
		assert.True(t, addr.Is4(), "clusterIP %s", ip)
		allocated = addr
		assert.Equal(t, []string{ip}, specStrings(got, "clusterIPs"))
		assert.Equal(t, []string{"IPv4"}, specStrings(got, "ipFamilies"))
		assert.Equal(t, "SingleStack", specString(got, "ipFamilyPolicy"))
		assert.False(t, ownsField(got, managerA, "f:clusterIP"), "the applier owns no allocated field: %v", got.GetManagedFields())

		// Applied again, and with another port: the address stays.
		assert.Equal(t, ip, specString(apply(t, service(s.objects, "svc-cluster-ip", "ClusterIP", selector, port("http", 80))), "clusterIP"))
		again := apply(t, service(s.objects, "svc-cluster-ip", "ClusterIP", selector, port("http", 80), port("metrics", 9090)))
		assert.Equal(t, ip, specString(again, "clusterIP"))
		assert.Equal(t, []string{ip}, specStrings(again, "clusterIPs"))
		assert.Equal(t, ip, specString(get(t, "svc-cluster-ip"), "clusterIP"))
	})
	t.Run("requested cluster IP", func(t *testing.T) {
		require.True(t, allocated.IsValid(), "needs the cluster IP check")
		b := allocated.As4()
		b[3] = 10
		if netip.AddrFrom4(b) == allocated {
			b[3] = 11
		}
		want := netip.AddrFrom4(b).String()
		got := apply(t, service(s.objects, "svc-requested", "", map[string]any{"clusterIP": want}, port("http", 80)))
		assert.Equal(t, want, specString(got, "clusterIP"))
		assert.Equal(t, []string{want}, specStrings(got, "clusterIPs"))

		_, err := s.c.Apply(s.ctx(t), service(s.objects, "svc-taken", "", map[string]any{"clusterIP": want}, port("http", 80)), release.ApplyOptions{FieldManager: managerA})
		require.Error(t, err, "a cluster IP another Service holds")
		assert.NotErrorIs(t, err, release.ErrNotFound)
		assert.Contains(t, err.Error(), "already allocated")
		_, err = s.c.Get(s.ctx(t), release.ObjectRef{GroupVersionKind: serviceGVK, Namespace: s.objects, Name: "svc-taken"})
		assert.ErrorIs(t, err, release.ErrNotFound, "the refused Service is not stored")
	})
	t.Run("headless", func(t *testing.T) {
		got := apply(t, service(s.objects, "svc-headless", "", map[string]any{"clusterIP": "None", "selector": map[string]any{"app": "web"}}, port("http", 80)))
		assert.Equal(t, "None", specString(got, "clusterIP"))
		assert.Equal(t, []string{"None"}, specStrings(got, "clusterIPs"))
		assert.Equal(t, "None", specString(apply(t, service(s.objects, "svc-headless", "", map[string]any{"clusterIP": "None", "selector": map[string]any{"app": "web"}}, port("http", 80))), "clusterIP"))
	})
	t.Run("external name", func(t *testing.T) {
		got := apply(t, service(s.objects, "svc-external", "ExternalName", map[string]any{"externalName": "db.example.com"}))
		assert.NotContains(t, got.Object["spec"], "clusterIP")
		assert.NotContains(t, got.Object["spec"], "clusterIPs")
	})
	inRange := func(t *testing.T, ports []int64) {
		t.Helper()
		seen := map[int64]bool{}
		for _, p := range ports {
			assert.GreaterOrEqual(t, p, int64(30000), "node port")
			assert.LessOrEqual(t, p, int64(32767), "node port")
			assert.False(t, seen[p], "node port %d twice in %v", p, ports)
			seen[p] = true
		}
	}
	// A node port below the range where ports are allocated, so that no
	// allocation takes it first.
	requested := int64(30000 + 3 + int(s.id[0])%64)
	t.Run("node ports", func(t *testing.T) {
		given := port("given", 81)
		given["nodePort"] = requested
		got := apply(t, service(s.objects, "svc-node-port", "NodePort", selector, port("http", 80), given))
		ports := nodePorts(t, got)
		require.Len(t, ports, 2)
		inRange(t, ports)
		assert.Equal(t, requested, ports[1], "a requested node port is kept")
		assert.NotEmpty(t, specString(got, "clusterIP"))

		given = port("given", 81)
		given["nodePort"] = requested
		again := apply(t, service(s.objects, "svc-node-port", "NodePort", selector, port("http", 80), given))
		assert.Equal(t, ports, nodePorts(t, again), "applied again")
		assert.Equal(t, ports, nodePorts(t, get(t, "svc-node-port")))

		taken := port("http", 80)
		taken["nodePort"] = requested
		_, err := s.c.Apply(s.ctx(t), service(s.objects, "svc-port-taken", "NodePort", selector, taken), release.ApplyOptions{FieldManager: managerA})
		require.Error(t, err, "a node port another Service holds")
		assert.NotErrorIs(t, err, release.ErrNotFound)
		assert.Contains(t, err.Error(), "already allocated")
	})
	t.Run("load balancer", func(t *testing.T) {
		got := apply(t, service(s.objects, "svc-load-balancer", "LoadBalancer", selector, port("http", 80), port("https", 443)))
		ports := nodePorts(t, got)
		require.Len(t, ports, 2)
		inRange(t, ports)
		assert.NotEmpty(t, specString(got, "clusterIP"))
		assert.False(t, ownsField(got, managerA, "f:nodePort"), "the applier owns no allocated node port: %v", got.GetManagedFields())
		assert.Equal(t, ports, nodePorts(t, apply(t, service(s.objects, "svc-load-balancer", "LoadBalancer", selector, port("http", 80), port("https", 443)))), "applied again")
	})
}

// testCapabilities checks a cluster that says which Kubernetes version it
// runs and which API versions it serves (release.CapabilitiesReader): a
// parseable version, the built-in APIs of a current server and none of
// the removed ones, and a CRD's group version and kind once it is
// created (after a moment, as discovery on a real server).
func (s *suite) testCapabilities(t *testing.T) {
	cr, ok := s.c.(release.CapabilitiesReader)
	if !ok {
		t.Skipf("%T does not implement release.CapabilitiesReader", s.c)
	}
	ctx := s.ctx(t)
	caps, err := cr.Capabilities(ctx)
	require.NoError(t, err)
	require.NotNil(t, caps)
	v, err := semver.NewVersion(caps.KubeVersion.Version)
	require.NoError(t, err, "KubeVersion.Version %q", caps.KubeVersion.Version)
	assert.Equal(t, uint64(1), v.Major())
	assert.Equal(t, "1", caps.KubeVersion.Major)
	assert.Equal(t, fmt.Sprint(v.Minor()), strings.TrimSuffix(caps.KubeVersion.Minor, "+"))
	for _, want := range []string{"v1", "v1/ConfigMap", "v1/Service", "apps/v1", "apps/v1/Deployment", "batch/v1/Job",
		"networking.k8s.io/v1/Ingress", "policy/v1/PodDisruptionBudget", "autoscaling/v2", "rbac.authorization.k8s.io/v1/ClusterRole",
		"apiextensions.k8s.io/v1/CustomResourceDefinition"} {
		assert.True(t, caps.APIVersions.Has(want), "serves %s", want)
	}
	for _, removed := range []string{"extensions/v1beta1", "policy/v1beta1/PodSecurityPolicy", "batch/v1beta1/CronJob", "autoscaling/v2beta2"} {
		assert.False(t, caps.APIVersions.Has(removed), "serves %s, removed from Kubernetes", removed)
	}

	group := "c" + s.id + ".releasetest.helmfleet.io"
	crd := gadgetCRD(group)
	require.False(t, caps.APIVersions.Has(group+"/v1"), "before the CRD")
	_, err = s.c.Apply(ctx, crd, release.ApplyOptions{FieldManager: managerSetup})
	require.NoError(t, err, "create CRD")
	t.Cleanup(func() { s.deleteCRD(t, crd) })
	for {
		caps, err = cr.Capabilities(ctx)
		require.NoError(t, err)
		if caps.APIVersions.Has(group+"/v1") && caps.APIVersions.Has(group+"/v1/Gadget") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("capabilities lack %s/v1 and %s/v1/Gadget after the CRD was created", group, group)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *suite) deleteCRD(t *testing.T, crd *unstructured.Unstructured) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), s.opts.Timeout)
	defer cancel()
	if err := s.c.Delete(ctx, release.RefOf(crd), release.DeleteOptions{}); err != nil && !errors.Is(err, release.ErrNotFound) {
		t.Errorf("delete CRD %s: %v", crd.GetName(), err)
	}
}

// crdChart is a chart with a CRD of Gadget in group in crds/, a Gadget,
// and a ConfigMap "<release>-seen" that says what its template saw: crd,
// whether .Capabilities.APIVersions has the Gadget's group/version/Kind,
// and lookup, the data.key of ConfigMap "lookup-source" of the release
// namespace as lookup read it.
func crdChart(t *testing.T, group string) *chart.Chart {
	t.Helper()
	crd, err := yaml.Marshal(gadgetCRD(group).Object)
	require.NoError(t, err)
	seen := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-seen
data:
  crd: {{ .Capabilities.APIVersions.Has %q | quote }}
  lookup: {{ (lookup "v1" "ConfigMap" .Release.Namespace "lookup-source").data.key | default "" | quote }}
`, group+"/v1/Gadget")
	gadget := fmt.Sprintf(`apiVersion: %s/v1
kind: Gadget
metadata:
  name: {{ .Release.Name }}-gadget
spec:
  size: 3
`, group)
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "conformance-crds", Version: "0.1.0", Type: "application"},
		Templates: []*chart.File{
			{Name: "templates/seen.yaml", Data: []byte(seen)},
			{Name: "templates/gadget.yaml", Data: []byte(gadget)},
		},
		Files: []*chart.File{{Name: "crds/gadgets.yaml", Data: crd}},
	}
}

// testHelmCRDs installs a chart that brings a CRD in crds/ through
// HelmConfig, as on a real cluster: Helm creates the CRD, then its
// templates see the new API in .Capabilities on this first install and
// its custom resource is created; a template's lookup reads an object
// stored in the cluster.
func (s *suite) testHelmCRDs(t *testing.T) {
	const name = "crds"
	group := "h" + s.id + ".releasetest.helmfleet.io"
	ch := crdChart(t, group)
	_, err := s.c.Apply(s.ctx(t), configMap(s.apps, "lookup-source", map[string]string{"key": "from the cluster"}), release.ApplyOptions{FieldManager: managerSetup})
	require.NoError(t, err)
	t.Cleanup(func() { s.deleteCRD(t, gadgetCRD(group)) })

	require.NoError(t, s.install(t, name, ch))
	got, err := s.c.Get(s.ctx(t), release.ObjectRef{GroupVersionKind: configMapGVK, Namespace: s.apps, Name: name + "-seen"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"crd": "true", "lookup": "from the cluster"}, data(t, got))
	_, err = s.c.Get(s.ctx(t), release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: group, Version: "v1", Kind: "Gadget"}, Namespace: s.apps, Name: name + "-gadget"})
	assert.NoError(t, err, "the chart's custom resource")

	require.NoError(t, s.uninstall(t, name))
}
