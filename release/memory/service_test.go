package memory_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

var (
	namespaceGVK = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	serviceGVK   = schema.GroupVersionKind{Version: "v1", Kind: "Service"}
)

// ports returns the node ports of a Service, its health check node port
// last when it has one.
func ports(t *testing.T, svc *unstructured.Unstructured) []int64 {
	t.Helper()
	list, _, err := unstructured.NestedSlice(svc.Object, "spec", "ports")
	require.NoError(t, err)
	var out []int64
	for _, p := range list {
		np, ok, err := unstructured.NestedInt64(p.(map[string]any), "nodePort")
		require.NoError(t, err)
		require.True(t, ok, "port %v has no nodePort", p)
		out = append(out, np)
	}
	if hc, ok, _ := unstructured.NestedInt64(svc.Object, "spec", "healthCheckNodePort"); ok {
		out = append(out, hc)
	}
	return out
}

// svc is Service name in namespace apps: of type typ unless empty, with
// the fields of extra and ports.
func svc(name, typ string, extra map[string]any, ports ...map[string]any) *unstructured.Unstructured {
	spec := maps.Clone(extra)
	if spec == nil {
		spec = map[string]any{}
	}
	if typ != "" {
		spec["type"] = typ
	}
	if ports != nil {
		spec["ports"] = make([]any, len(ports))
		for i := range ports {
			spec["ports"].([]any)[i] = ports[i]
		}
	}
	return object("v1", "Service", "apps", name, map[string]any{"spec": spec})
}

func svcPort(name string, number int64, nodePort int64) map[string]any {
	p := map[string]any{"name": name, "port": number, "protocol": "TCP"}
	if nodePort != 0 {
		p["nodePort"] = nodePort
	}
	return p
}

func clusterIP(obj *unstructured.Unstructured) string {
	ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP")
	return ip
}

// Allocations depend on the Service alone, not on what else the cluster
// holds or in which order it was made: the same Service gets the same
// address and ports on every cluster and every run.
func TestServiceAllocationDeterministic(t *testing.T) {
	ctx := t.Context()
	a, b := memory.New("a"), memory.New("b")
	_, err := b.Apply(ctx, svc("other", "NodePort", nil, svcPort("http", 80, 0)), applyOpts)
	require.NoError(t, err)
	var got [2]*unstructured.Unstructured
	for i, c := range []*memory.Cluster{a, b} {
		got[i], err = c.Apply(ctx, svc("web", "LoadBalancer", map[string]any{"externalTrafficPolicy": "Local"}, svcPort("http", 80, 0), svcPort("https", 443, 0)), applyOpts)
		require.NoError(t, err)
	}
	assert.Equal(t, got[0].Object["spec"], got[1].Object["spec"])
	assert.Regexp(t, `^10\.(9[6-9]|10[0-9]|11[01])\.\d+\.\d+$`, clusterIP(got[0]))
	assert.Len(t, ports(t, got[0]), 3, "two node ports and a health check node port")
}

// No two Services share an address or a node port, however many there
// are.
func TestServiceAllocationUnique(t *testing.T) {
	c := memory.New("c")
	ips, nodePorts := map[string]string{}, map[int64]string{}
	for i := range 300 {
		name := fmt.Sprintf("svc-%d", i)
		got, err := c.Apply(t.Context(), svc(name, "NodePort", nil, svcPort("a", 80, 0), svcPort("b", 81, 0)), applyOpts)
		require.NoError(t, err)
		ip := clusterIP(got)
		require.NotContains(t, ips, ip, "%s and %s", name, ips[ip])
		ips[ip] = name
		for _, p := range ports(t, got) {
			require.NotContains(t, nodePorts, p, "%s and %s", name, nodePorts[p])
			nodePorts[p] = name
		}
	}
}

// What a Service holds is freed when it is deleted, by itself or with its
// namespace, and a dry run holds nothing.
func TestServiceAllocationFreed(t *testing.T) {
	ctx := t.Context()
	c := memory.New("c")
	_, err := c.Apply(ctx, object("v1", "Namespace", "", "apps", nil), applyOpts)
	require.NoError(t, err)
	first, err := c.Apply(ctx, svc("first", "NodePort", nil, svcPort("http", 80, 0)), applyOpts)
	require.NoError(t, err)
	ip, np := clusterIP(first), ports(t, first)[0]
	taken := func(t *testing.T) error {
		t.Helper()
		_, err := c.Apply(ctx, svc("second", "NodePort", map[string]any{"clusterIP": ip}, svcPort("http", 80, np)), release.ApplyOptions{FieldManager: "test", DryRun: true})
		return err
	}
	err = taken(t)
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.ErrorContains(t, err, "spec.clusterIPs")
	assert.ErrorContains(t, err, ip)

	require.NoError(t, c.Delete(ctx, release.RefOf(first), release.DeleteOptions{}))
	require.NoError(t, taken(t), "freed by the delete")
	require.NoError(t, taken(t), "a dry run holds nothing")

	_, err = c.Apply(ctx, svc("second", "NodePort", map[string]any{"clusterIP": ip}, svcPort("http", 80, np)), applyOpts)
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, release.ObjectRef{GroupVersionKind: namespaceGVK, Name: "apps"}, release.DeleteOptions{}))
	_, err = c.Apply(ctx, svc("third", "NodePort", map[string]any{"clusterIP": ip}, svcPort("http", 80, np)), applyOpts)
	assert.NoError(t, err, "freed with the namespace")
}

// Requested values outside the ranges are refused, naming the field.
func TestServiceAllocationOutOfRange(t *testing.T) {
	tests := []struct {
		name  string
		obj   *unstructured.Unstructured
		field string
	}{
		{name: "address", obj: svc("s", "", map[string]any{"clusterIP": "192.168.0.1"}, svcPort("http", 80, 0)), field: "spec.clusterIPs"},
		{name: "not an address", obj: svc("s", "", map[string]any{"clusterIP": "ten"}, svcPort("http", 80, 0)), field: "spec.clusterIPs[0]"},
		{name: "node port", obj: svc("s", "NodePort", nil, svcPort("http", 80, 8080)), field: "spec.ports[0].nodePort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := memory.New("c")
			_, err := c.Apply(t.Context(), tt.obj, applyOpts)
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "%v", err)
			assert.ErrorContains(t, err, tt.field)
			assert.Empty(t, c.Objects())
		})
	}
}

// Writes that leave allocated fields out keep them (an Update, as kubectl
// replace or a controller sends, and Helm's upgrade); a change of type
// drops what the new type does not use.
func TestServiceAllocationKept(t *testing.T) {
	ctx := t.Context()
	c := memory.New("c")
	created, err := c.Apply(ctx, svc("web", "NodePort", nil, svcPort("http", 80, 0), svcPort("admin", 81, 0)), applyOpts)
	require.NoError(t, err)
	ip, nps := clusterIP(created), ports(t, created)

	// An Update without clusterIP, nodePorts, and the ports reordered:
	// node ports follow the port names.
	updated, err := c.Update(ctx, svc("web", "NodePort", nil, svcPort("admin", 81, 0), svcPort("http", 80, 0)), "kubectl")
	require.NoError(t, err)
	assert.Equal(t, ip, clusterIP(updated))
	assert.Equal(t, []int64{nps[1], nps[0]}, ports(t, updated))

	// To ClusterIP: node ports go, the address stays.
	updated, err = c.Apply(ctx, svc("web", "ClusterIP", nil, svcPort("http", 80, 0), svcPort("admin", 81, 0)), applyOpts)
	require.NoError(t, err)
	assert.Equal(t, ip, clusterIP(updated))
	list, _, _ := unstructured.NestedSlice(updated.Object, "spec", "ports")
	for _, p := range list {
		assert.NotContains(t, p, "nodePort")
	}
	// To ExternalName: the address goes too, and is free again.
	updated, err = c.Apply(ctx, svc("web", "ExternalName", map[string]any{"externalName": "db.example.com"}), applyOpts)
	require.NoError(t, err)
	assert.NotContains(t, updated.Object["spec"], "clusterIP")
	assert.NotContains(t, updated.Object["spec"], "clusterIPs")
	_, err = c.Apply(ctx, svc("other", "", map[string]any{"clusterIP": ip}, svcPort("http", 80, 0)), applyOpts)
	assert.NoError(t, err, "the address was freed")
}

// Helm's install and upgrade of a chart's Service (three-way merges that
// never mention clusterIP) keep the address the Service got.
func TestServiceAllocationHelmUpgrade(t *testing.T) {
	c := memory.New("c")
	cfg := helmConfig(t, c)
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "web", "apps"
	_, err := install.RunWithContext(t.Context(), testchart.MustLoad("6.5.0"), nil)
	require.NoError(t, err)
	ref := release.ObjectRef{GroupVersionKind: serviceGVK, Namespace: "apps", Name: "web-podinfo"}
	before, err := c.Get(t.Context(), ref)
	require.NoError(t, err)
	require.NotEmpty(t, clusterIP(before))

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace, upgrade.Timeout = "apps", time.Second
	_, err = upgrade.RunWithContext(t.Context(), "web", testchart.MustLoad("6.5.1"), map[string]any{"service": map[string]any{"type": "NodePort"}})
	require.NoError(t, err)
	after, err := c.Get(t.Context(), ref)
	require.NoError(t, err)
	assert.Equal(t, clusterIP(before), clusterIP(after))
	assert.Len(t, ports(t, after), 1, "a node port once the type is NodePort")
}

// A LoadBalancer gets its ingress address when its health says ready, as
// a cloud controller gives it one.
func TestServiceLoadBalancerIngress(t *testing.T) {
	ctx := t.Context()
	c := memory.New("c", memory.WithHealth(func(*unstructured.Unstructured) memory.Health { return memory.Health{Message: "provisioning"} }))
	_, err := c.Apply(ctx, svc("lb", "LoadBalancer", nil, svcPort("http", 80, 0)), applyOpts)
	require.NoError(t, err)
	ref := release.ObjectRef{GroupVersionKind: serviceGVK, Namespace: "apps", Name: "lb"}
	got, err := c.Get(ctx, ref)
	require.NoError(t, err)
	ingress, _, _ := unstructured.NestedSlice(got.Object, "status", "loadBalancer", "ingress")
	assert.Empty(t, ingress)
	c.SetHealth(nil)
	got, err = c.Get(ctx, ref)
	require.NoError(t, err)
	ingress, _, _ = unstructured.NestedSlice(got.Object, "status", "loadBalancer", "ingress")
	assert.NotEmpty(t, ingress)
}
