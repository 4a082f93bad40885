package integration

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/kube"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/values"
)

// TestObjectValuesOnRealCluster reads valuesFrom objects as a real API
// server returns them: a ConfigMap's data without its binaryData, a
// Secret written with stringData (which the server folds into data and
// never returns) decoded, an absent object as values.ErrNotFound, and an
// RBAC denial as an error that names the object.
func TestObjectValuesOnRealCluster(t *testing.T) {
	c := admin(t, "member1")
	namespace(t, c, "vals")
	_, err := c.Apply(ctx(t), object(configMapGVK, "vals", "podinfo", map[string]any{
		"data":       map[string]any{"values.yaml": "replicaCount: 3\n"},
		"binaryData": map[string]any{"logo": "iVBORw=="},
	}), release.ApplyOptions{FieldManager: "integration"})
	require.NoError(t, err)
	_, err = c.Apply(ctx(t), object(secretGVK, "vals", "creds", map[string]any{
		"data":       map[string]any{"token": "YWJj"},
		"stringData": map[string]any{"password": "s3cr3t"},
	}), release.ApplyOptions{FieldManager: "integration"})
	require.NoError(t, err)
	stored, err := c.Get(ctx(t), release.ObjectRef{GroupVersionKind: secretGVK, Namespace: "vals", Name: "creds"})
	require.NoError(t, err)
	require.NotContains(t, stored.Object, "stringData", "the API server folds stringData into data")

	r := release.NewObjectValues(c)
	got, err := r.Read(ctx(t), values.KindConfigMap, "vals", "podinfo")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"values.yaml": []byte("replicaCount: 3\n")}, got)
	got, err = r.Read(ctx(t), values.KindSecret, "vals", "creds")
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"token": []byte("abc"), "password": []byte("s3cr3t")}, got)

	_, err = r.Read(ctx(t), values.KindSecret, "vals", "absent")
	assert.ErrorIs(t, err, values.ErrNotFound)
	assert.Contains(t, err.Error(), "read Secret vals/absent")

	nobody, err := kube.New(kube.Config{Name: "member1", REST: controlPlane(t, "member1").Unprivileged})
	require.NoError(t, err)
	_, err = release.NewObjectValues(nobody).Read(ctx(t), values.KindSecret, "vals", "creds")
	require.Error(t, err)
	assert.NotErrorIs(t, err, values.ErrNotFound)
	var fe *release.ForbiddenError
	assert.True(t, errors.As(err, &fe), "%v", err)
	assert.Contains(t, err.Error(), "read Secret vals/creds")
	assert.NotContains(t, err.Error(), "s3cr3t")
}

// fleetStateYAML places podinfo, reading its values from the ConfigMap
// podinfo-values, on the members named.
func fleetStateYAML(ns string, members ...string) string {
	return strings.Replace(podinfoYAML(ns), "  values:\n    replicaCount: 2\n", "  valuesFrom:\n    - {kind: ConfigMap, name: podinfo-values}\n", 1) + `
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: ` + ns + `}
spec:
  resourceSelectors:
    - {apiVersion: helm.toolkit.fluxcd.io/v2, kind: HelmRelease, name: podinfo}
  placement:
    clusterAffinity: {clusterNames: [` + strings.Join(members, ", ") + `]}
`
}

// TestFleetValuesFromMembersAndStoreOnRealClusters runs a fleet over the
// two members that reads valuesFrom on each member (a different
// ConfigMap on each) and keeps its inventory in Secrets on the hub; a new
// fleet over the same hub then garbage-collects a release the first one
// installed.
func TestFleetValuesFromMembersAndStoreOnRealClusters(t *testing.T) {
	const ns = "fleetstate"
	hub, m1, m2 := admin(t, "hub"), admin(t, "member1"), admin(t, "member2")
	namespace(t, hub, "fleet-system")
	for i, m := range []*kube.Cluster{m1, m2} {
		namespace(t, m, ns)
		_, err := m.Apply(ctx(t), object(configMapGVK, ns, "podinfo-values", map[string]any{
			"data": map[string]any{"values.yaml": fmt.Sprintf("replicaCount: %d\n", 2*i+1)},
		}), release.ApplyOptions{FieldManager: "cluster-resource-set"})
		require.NoError(t, err)
	}
	newFleet := func() *fleet.Fleet {
		store, err := fleet.NewObjectStore(hub, fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "integration"})
		require.NoError(t, err)
		fl, err := fleet.New(fleet.Config{
			Members:          []release.Member{{Cluster: m1}, {Cluster: m2}},
			ReconcilerConfig: &reconcile.Config{Charts: charts, Values: release.NewObjectValues(hub)},
			ValuesFrom:       fleet.ValuesFromMember,
			Store:            store,
		})
		require.NoError(t, err)
		return fl
	}

	a := newFleet()
	objs, err := release.Decode(strings.NewReader(fleetStateYAML(ns, "member1", "member2")))
	require.NoError(t, err)
	plan, err := a.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	assert.Regexp(t, `member2\s+fleetstate/podinfo\s+Absent\s+install\s+.*\smember\s`, plan.Table())
	rep, err := a.Apply(ctx(t), plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	assert.Equal(t, int64(1), deploymentReplicas(t, m1, ns), "member1's own ConfigMap")
	assert.Equal(t, int64(3), deploymentReplicas(t, m2, ns), "member2's own ConfigMap")
	secrets, err := hub.List(ctx(t), secretGVK, "fleet-system", nil)
	require.NoError(t, err)
	assert.Len(t, secrets, 2, "one inventory Secret per member and release")

	// A new process: member2 leaves the placement.
	b := newFleet()
	objs, err = release.Decode(strings.NewReader(fleetStateYAML(ns, "member1")))
	require.NoError(t, err)
	plan, err = b.Plan(ctx(t), fleet.InputsOf(objs))
	require.NoError(t, err)
	gone, ok := plan.Item(fleet.Key{Cluster: "member2", Namespace: ns, Name: "podinfo"})
	require.True(t, ok, "the new fleet knows member2's release from the hub")
	assert.Equal(t, reconcile.ActionUninstall, gone.Action)
	kept, _ := plan.Item(fleet.Key{Cluster: "member1", Namespace: ns, Name: "podinfo"})
	assert.Equal(t, reconcile.ActionNone, kept.Action)
	rep, err = b.Apply(ctx(t), plan, fleet.ApplyOptions{})
	require.NoError(t, err, rep.Table())
	for _, m := range []struct {
		c    *kube.Cluster
		want int
	}{{m1, 1}, {m2, 0}} {
		cfg, err := m.c.HelmConfig(ctx(t), release.HelmScope{StorageNamespace: ns, Namespace: ns})
		require.NoError(t, err)
		list, err := action.NewList(cfg).Run()
		require.NoError(t, err)
		assert.Len(t, list, m.want, "helm ls on %s", m.c.Name())
	}
	secrets, err = hub.List(ctx(t), secretGVK, "fleet-system", nil)
	require.NoError(t, err)
	assert.Len(t, secrets, 1)
}

// TestObjectStoreOnRealHub: entries round-trip through Secrets of a real
// API server, deleting an absent entry is no error, and an entry just
// under fleet.MaxEntryBytes fits in one Secret there (the limit leaves
// room under the server's 1 MiB).
func TestObjectStoreOnRealHub(t *testing.T) {
	hub := admin(t, "hub")
	namespace(t, hub, "store-test")
	s, err := fleet.NewObjectStore(hub, fleet.ObjectStoreConfig{Namespace: "store-test", Name: "big"})
	require.NoError(t, err)
	objs, err := release.Decode(strings.NewReader(podinfoYAML("apps")))
	require.NoError(t, err)
	rel := objs.Releases[0]
	k := fleet.Key{Cluster: "member1", Namespace: rel.Namespace, Name: rel.Name}

	// Random text compresses little: size it from the refusal of a larger one.
	noise := make([]byte, fleet.MaxEntryBytes)
	_, _ = rand.Read(noise)
	text := base64.StdEncoding.EncodeToString(noise)
	rel.Spec.Values = map[string]any{"blob": text}
	var tl *fleet.EntryTooLargeError
	require.ErrorAs(t, s.Save(ctx(t), fleet.Entry{Key: k, Release: rel}), &tl)
	fit := len(text) * fleet.MaxEntryBytes / tl.Size * 99 / 100
	rel.Spec.Values = map[string]any{"blob": text[:fit]}
	require.NoError(t, s.Save(ctx(t), fleet.Entry{Key: k, Release: rel}), "an entry of about %d compressed bytes", fleet.MaxEntryBytes*99/100)
	require.NoError(t, s.Save(ctx(t), fleet.Entry{Key: k, Release: rel}), "saving again replaces")

	entries, err := s.Load(ctx(t))
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, k, entries[0].Key)
	assert.Equal(t, text[:fit], entries[0].Release.Spec.Values["blob"])

	require.NoError(t, s.Delete(ctx(t), k))
	require.NoError(t, s.Delete(ctx(t), k), "an absent entry")
	entries, err = s.Load(ctx(t))
	require.NoError(t, err)
	assert.Empty(t, entries)
}
