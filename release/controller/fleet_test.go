package controller

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
)

const placeEverywhere = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity:
      labelSelector:
        matchExpressions: [{key: env, operator: In, values: [dev, prod]}]
`

func TestFleetReconcilesOntoMembers(t *testing.T) {
	pp := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(placeEverywhere), &pp.Object))
	hub := fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithObjects(hr(t, podinfoYAML), pp).WithStatusSubresource(&release.Release{}).Build()
	dev, prod := memory.New("dev-1"), memory.New("prod-1")
	prod.SetUnreachable(errors.New("connection refused"))
	m, err := NewMetrics(nil)
	require.NoError(t, err)
	rec := events.NewFakeRecorder(10)
	r, err := NewFleet(FleetConfig{
		Client: hub, Charts: testCharts, Metrics: m, Events: rec,
		Members: StaticMembers{
			{Cluster: dev, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}},
			{Cluster: prod, Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
		},
	})
	require.NoError(t, err)

	res, err := r.Reconcile(t.Context(), ctrl.Request{NamespacedName: fleetRequest.NamespacedName})
	require.NoError(t, err)
	assert.Equal(t, DefaultRetryInterval, res.RequeueAfter, "a failing member: retry")
	got := &release.Release{}
	require.NoError(t, hub.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, got))
	ready := got.Status.GetCondition(release.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "ready on 1/2 members; prod-1: ")
	assert.Contains(t, dev.Summary(), "Deployment apps/podinfo")

	prod.SetUnreachable(nil)
	res, err = r.Reconcile(t.Context(), ctrl.Request{NamespacedName: fleetRequest.NamespacedName})
	require.NoError(t, err)
	assert.Equal(t, podinfoInterval, res.RequeueAfter)
	require.NoError(t, hub.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, got))
	assert.Equal(t, "True ReconciliationSucceeded", condition(got.Status, release.ConditionReady))
	assert.Equal(t, "ready on 2/2 members: dev-1, prod-1", got.Status.GetCondition(release.ConditionReady).Message)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	assert.Contains(t, prod.Summary(), "Deployment apps/podinfo")
	assert.Equal(t, 1.0, testutilCounter(t, m, "prod-1", "install"))
}

func TestSecretMembers(t *testing.T) {
	sec := func(name, member string, labels map[string]string) *corev1.Secret {
		l := map[string]string{MemberLabel: member}
		for k, v := range labels {
			l[k] = v
		}
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: name, Labels: l}, Data: map[string][]byte{"value": []byte(kubeconfig)}}
	}
	c := fake.NewClientBuilder().WithObjects(
		sec("b-kubeconfig", "member-b", map[string]string{"env": "prod"}),
		sec("a-kubeconfig", "member-a", map[string]string{"env": "dev"}),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "unrelated"}},
	).Build()
	var built []string
	s := &SecretMembers{Reader: c, Namespace: "fleet", NewCluster: func(name string, cfg *rest.Config) (release.Cluster, error) {
		built = append(built, name+" "+cfg.Host)
		return memory.New(name), nil
	}}
	ms, err := s.Members(t.Context())
	require.NoError(t, err)
	require.Len(t, ms, 2)
	assert.Equal(t, "member-a", ms[0].Facts.Name)
	assert.Equal(t, map[string]string{"env": "dev"}, ms[0].Facts.Labels)
	assert.Equal(t, "member-b", ms[1].Facts.Name)
	assert.ElementsMatch(t, []string{"member-a https://remote.test:6443", "member-b https://remote.test:6443"}, built)

	_, err = s.Members(t.Context())
	require.NoError(t, err)
	assert.Len(t, built, 2, "same Secret versions: the clusters are reused")

	bad := sec("c-kubeconfig", "member-c", nil)
	bad.Data = map[string][]byte{"value": []byte("t0ken: [")}
	require.NoError(t, c.Create(t.Context(), bad))
	_, err = s.Members(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `member member-c: kubeconfig in key "value" of Secret fleet/c-kubeconfig: does not parse`)
	assert.NotContains(t, err.Error(), "t0ken")
}
