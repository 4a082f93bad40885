package controller

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/source"
)

// A fleet given a source.Resolver, as a one-cluster controller is, reads
// the HelmRepository a release names from the hub and installs the chart
// the resolver returns on the members: no chart getter to write.
func TestFleetResolverReadsSourcesFromTheHub(t *testing.T) {
	repo := &source.HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "podinfo"}, Spec: source.HelmRepositorySpec{URL: "https://charts.example.com"}}
	pol := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(placeEverywhere), &pol.Object))
	hub := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithObjects(hr(t, podinfoYAML), repo, pol).WithStatusSubresource(&release.Release{}).Build()
	var asked []string
	resolver := source.ResolverFunc(func(_ context.Context, ref source.Ref) (*source.Chart, error) {
		asked = append(asked, ref.HelmRepository.Spec.URL+" "+ref.Chart+"@"+ref.Version)
		return &source.Chart{Chart: testchart.MustLoad("6.5.0")}, nil
	})
	m, err := NewMetrics(nil)
	require.NoError(t, err)
	dev := memory.New("dev-1")
	cfg := FleetConfig{Client: hub, Metrics: m, Members: StaticMembers{{Cluster: dev, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}}}}

	_, err = NewFleet(cfg)
	assert.ErrorContains(t, err, "one of FleetConfig.Charts and FleetConfig.Resolver is required")
	cfg.Charts, cfg.Resolver = testCharts, resolver
	_, err = NewFleet(cfg)
	assert.ErrorContains(t, err, "set only one of FleetConfig.Charts and FleetConfig.Resolver")

	cfg.Charts = nil
	r, err := NewFleet(cfg)
	require.NoError(t, err)
	_, err = r.Reconcile(t.Context(), fleetRequest)
	require.NoError(t, err)
	assert.Contains(t, asked, "https://charts.example.com podinfo@6.5.0", "the HelmRepository was read from the hub")
	assert.Contains(t, dev.Summary(), "Deployment apps/podinfo")
	got := &release.Release{}
	require.NoError(t, hub.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, got))
	assert.Equal(t, "True ReconciliationSucceeded", condition(got.Status, release.ConditionReady))
}
