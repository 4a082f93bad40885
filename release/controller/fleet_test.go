package controller

import (
	"errors"
	"strings"
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

// testFleet is a FleetReconciler over a fake hub holding podinfoYAML and
// the policies, and two members, dev-1 (env=dev) and prod-1 (env=prod).
type testFleet struct {
	r         *FleetReconciler
	hub       client.Client
	dev, prod *memory.Cluster
	metrics   *Metrics
	events    *events.FakeRecorder
}

func newTestFleet(t *testing.T, policies ...string) *testFleet {
	t.Helper()
	objs := []client.Object{hr(t, podinfoYAML)}
	for _, p := range policies {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(p), &u.Object))
		objs = append(objs, u)
	}
	tf := &testFleet{dev: memory.New("dev-1"), prod: memory.New("prod-1"), events: events.NewFakeRecorder(10)}
	tf.hub = fake.NewClientBuilder().WithScheme(testScheme(t)).
		WithObjects(objs...).WithStatusSubresource(&release.Release{}).Build()
	var err error
	tf.metrics, err = NewMetrics(nil)
	require.NoError(t, err)
	tf.r, err = NewFleet(FleetConfig{
		Client: tf.hub, Charts: testCharts, Metrics: tf.metrics, Events: tf.events,
		Members: StaticMembers{
			{Cluster: tf.dev, Facts: policy.Cluster{Labels: map[string]string{"env": "dev"}}},
			{Cluster: tf.prod, Facts: policy.Cluster{Labels: map[string]string{"env": "prod"}}},
		},
	})
	require.NoError(t, err)
	return tf
}

// reconcile runs one fleet reconcile and returns its result and podinfo's
// Ready condition on the hub after it.
func (tf *testFleet) reconcile(t *testing.T) (ctrl.Result, *release.Release) {
	t.Helper()
	res, err := tf.r.Reconcile(t.Context(), ctrl.Request{NamespacedName: fleetRequest.NamespacedName})
	require.NoError(t, err)
	got := &release.Release{}
	require.NoError(t, tf.hub.Get(t.Context(), client.ObjectKey{Namespace: "apps", Name: "podinfo"}, got))
	require.NotNil(t, got.Status.GetCondition(release.ConditionReady))
	return res, got
}

func TestFleetReconcilesOntoMembers(t *testing.T) {
	tf := newTestFleet(t, placeEverywhere)
	dev, prod := tf.dev, tf.prod
	prod.SetUnreachable(errors.New("connection refused"))

	res, got := tf.reconcile(t)
	assert.Equal(t, DefaultRetryInterval, res.RequeueAfter, "a failing member: retry")
	ready := got.Status.GetCondition(release.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "ready on 1/2 members; prod-1: ")
	assert.Contains(t, dev.Summary(), "Deployment apps/podinfo")

	prod.SetUnreachable(nil)
	res, got = tf.reconcile(t)
	assert.Equal(t, podinfoInterval, res.RequeueAfter)
	assert.Equal(t, "True ReconciliationSucceeded", condition(got.Status, release.ConditionReady))
	assert.Equal(t, "ready on 2/2 members: dev-1, prod-1", got.Status.GetCondition(release.ConditionReady).Message)
	assert.Equal(t, got.Generation, got.Status.ObservedGeneration)
	assert.Contains(t, prod.Summary(), "Deployment apps/podinfo")
	assert.Equal(t, 1.0, testutilCounter(t, tf.metrics, "prod-1", "install"))
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

// overrideFailsOnProd is an OverridePolicy whose rule for prod members
// replaces a path podinfo lacks, so it fails there and only there.
const overrideFailsOnProd = `
apiVersion: policy.karmada.io/v1alpha1
kind: OverridePolicy
metadata: {name: podinfo-prod, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  overrideRules:
    - targetCluster: {labelSelector: {matchLabels: {env: prod}}}
      overriders:
        plaintext: [{path: /spec/nothing/here, operator: replace, value: x}]
`

// A member whose override fails is a failed member of the release: its
// Ready is False naming the member and the failure, with a Warning event
// and the retry interval, not True over the members that did run it.
func TestFleetOverrideFailureIsNotReady(t *testing.T) {
	tf := newTestFleet(t, placeEverywhere, overrideFailsOnProd)
	dev, prod, rec := tf.dev, tf.prod, tf.events

	res, got := tf.reconcile(t)
	assert.Equal(t, DefaultRetryInterval, res.RequeueAfter, "a failed member: retry")
	ready := got.Status.GetCondition(release.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, release.ReasonReconciliationFailed, ready.Reason)
	assert.Contains(t, ready.Message, "ready on 1/2 members; prod-1: ")
	assert.Contains(t, ready.Message, `spec.overrideRules[0].overriders.plaintext[0] at "/spec/nothing/here"`)
	assert.Contains(t, dev.Summary(), "Deployment apps/podinfo", "the other member still runs it")
	assert.NotContains(t, prod.Summary(), "Deployment apps/podinfo")
	require.Len(t, rec.Events, 1)
	ev := <-rec.Events
	assert.Contains(t, ev, "Warning ReconciliationFailed")
	assert.Contains(t, ev, "prod-1: ")

	// Failing on every member, it is placed but runs nowhere: failed,
	// not NotPlaced.
	tf = newTestFleet(t, placeEverywhere, strings.Replace(overrideFailsOnProd, "- targetCluster: {labelSelector: {matchLabels: {env: prod}}}\n      overriders:", "- overriders:", 1))
	res, got = tf.reconcile(t)
	assert.Equal(t, DefaultRetryInterval, res.RequeueAfter)
	ready = got.Status.GetCondition(release.ConditionReady)
	assert.Equal(t, "False ReconciliationFailed", condition(got.Status, release.ConditionReady))
	assert.Contains(t, ready.Message, "ready on 0/2 members; dev-1: ")
	assert.Contains(t, ready.Message, "; prod-1: ")
}

// A member a release leaves is not one of its members any more: its
// Ready counts the members it is placed on, not the one it is being
// uninstalled from; an uninstall there that fails makes it not Ready,
// naming that member (found by the simulation, seed 1 of its second
// track: "ready on 2/2 members: f1, f2" when placed on f1 only).
func TestFleetMemberLeftIsNotCounted(t *testing.T) {
	tf := newTestFleet(t, placeEverywhere)
	_, got := tf.reconcile(t)
	require.Equal(t, "ready on 2/2 members: dev-1, prod-1", got.Status.GetCondition(release.ConditionReady).Message)

	pol := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(placeEverywhere), &pol.Object))
	require.NoError(t, tf.hub.Get(t.Context(), client.ObjectKeyFromObject(pol), pol))
	exprs, _, _ := unstructured.NestedSlice(pol.Object, "spec", "placement", "clusterAffinity", "labelSelector", "matchExpressions")
	exprs[0].(map[string]any)["values"] = []any{"dev"}
	require.NoError(t, unstructured.SetNestedSlice(pol.Object, exprs, "spec", "placement", "clusterAffinity", "labelSelector", "matchExpressions"))
	require.NoError(t, tf.hub.Update(t.Context(), pol))

	// prod-1's uninstall fails: not Ready, naming it, counted apart.
	tf.prod.SetUnreachable(errors.New("connection refused"))
	_, got = tf.reconcile(t)
	ready := got.Status.GetCondition(release.ConditionReady)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Contains(t, ready.Message, "ready on 1/1 members; prod-1 (no longer placed there; uninstall): ")

	tf.prod.SetUnreachable(nil)
	res, got := tf.reconcile(t)
	assert.Equal(t, "True ReconciliationSucceeded", condition(got.Status, release.ConditionReady))
	assert.Equal(t, "ready on 1/1 members: dev-1", got.Status.GetCondition(release.ConditionReady).Message)
	assert.Equal(t, podinfoInterval, res.RequeueAfter)
	assert.NotContains(t, tf.prod.Summary(), "Deployment apps/podinfo", "uninstalled from the member it left")
}
