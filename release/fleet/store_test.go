package fleet_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/fleet"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

var secretGVK = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

// storeFleet is three members and a hub holding the inventory; fleet
// starts one "process" over them.
type storeFleet struct {
	hub     *memory.Cluster
	members map[string]*memory.Cluster
	list    []release.Member
}

func newStoreFleet() *storeFleet {
	sf := &storeFleet{hub: memory.New("hub"), members: map[string]*memory.Cluster{}}
	for _, m := range []struct{ name, env string }{{"dev-1", "dev"}, {"prod-eu-1", "prod"}, {"prod-us-1", "prod"}} {
		c := memory.New(m.name)
		sf.members[m.name] = c
		sf.list = append(sf.list, release.Member{Cluster: c, Facts: policy.Cluster{Labels: map[string]string{"env": m.env, "tier": "apps"}}})
	}
	return sf
}

func (sf *storeFleet) store(t *testing.T) *fleet.ObjectStore {
	t.Helper()
	s, err := fleet.NewObjectStore(sf.hub, fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "prod"})
	require.NoError(t, err)
	return s
}

func (sf *storeFleet) fleet(t *testing.T) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(fleet.Config{Members: sf.list, Reconciler: fixture.Reconciler(t, nil), Store: sf.store(t)})
	require.NoError(t, err)
	return f
}

// noUS is fleetYAML with prod-us-1 (and prod-eu-1) out of the placement.
var noUS = strings.Replace(fleetYAML, "matchLabels: {tier: apps}", "matchExpressions: [{key: env, operator: In, values: [dev]}]", 1)

func storedKeys(t *testing.T, s fleet.Store) []string {
	t.Helper()
	entries, err := s.Load(context.Background())
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		out = append(out, e.Key.String())
	}
	return out
}

// installedEverywhere is a store fleet whose first process applied
// fleetYAML on the three members.
func installedEverywhere(t *testing.T) *storeFleet {
	t.Helper()
	sf := newStoreFleet()
	a := sf.fleet(t)
	plan, err := a.Plan(context.Background(), decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	_, err = a.Apply(context.Background(), plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	return sf
}

func TestRestartedFleetCollectsWhatAnEarlierOneInstalled(t *testing.T) {
	ctx := context.Background()
	sf := installedEverywhere(t)
	assert.Equal(t, []string{"dev-1:apps/podinfo", "prod-eu-1:apps/podinfo", "prod-us-1:apps/podinfo"}, storedKeys(t, sf.store(t)))

	// The process restarts: a new Fleet over the same hub and members.
	b := sf.fleet(t)
	plan, err := b.Plan(ctx, decodeInputs(t, noUS))
	require.NoError(t, err)
	require.Empty(t, plan.Errors)
	for _, member := range []string{"prod-eu-1", "prod-us-1"} {
		it, ok := plan.Item(podinfoOn(member))
		require.True(t, ok, "the new fleet knows %s from the store", member)
		assert.Equal(t, reconcile.ActionUninstall, it.Action)
	}
	dev, _ := plan.Item(podinfoOn("dev-1"))
	assert.Equal(t, reconcile.ActionNone, dev.Action, "the status the earlier process saved makes dev in sync")
	_, err = b.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Empty(t, helmList(t, sf.members["prod-us-1"]))
	assert.Empty(t, helmList(t, sf.members["prod-eu-1"]))
	assert.Equal(t, []string{"podinfo 6.6.0-rc.1 deployed"}, helmList(t, sf.members["dev-1"]))
	assert.Equal(t, []string{"dev-1:apps/podinfo"}, storedKeys(t, sf.store(t)), "uninstalled releases leave the store")

	// A third process finds only dev; releasing everything empties it.
	c := sf.fleet(t)
	plan, err = c.Plan(ctx, fleet.Inputs{})
	require.NoError(t, err)
	require.Len(t, plan.Items, 1)
	assert.Equal(t, "removed from the inputs", plan.Items[0].Reason)
	_, err = c.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Empty(t, storedKeys(t, sf.store(t)))
	assert.Empty(t, helmList(t, sf.members["dev-1"]))
}

// A process that dies during a first install leaves the release in the
// store: the entry is written before Helm writes anything.
func TestStoreKnowsAReleaseBeforeItsInstall(t *testing.T) {
	ctx := context.Background()
	sf := newStoreFleet()
	store := sf.store(t)
	var storedAtInstall []string
	crash := errors.New("process killed")
	sf.members["prod-us-1"].SetFaults(func(op memory.Operation, _ release.ObjectRef) error {
		if op != memory.OpStorageCreate && op != memory.OpHelmCreate {
			return nil
		}
		if storedAtInstall == nil {
			entries, err := store.Load(context.Background())
			if err != nil {
				return err
			}
			storedAtInstall = []string{}
			for _, e := range entries {
				storedAtInstall = append(storedAtInstall, e.Key.String())
			}
		}
		return crash
	})
	a := sf.fleet(t)
	plan, err := a.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	_, err = a.Apply(ctx, plan, fleet.ApplyOptions{})
	require.ErrorIs(t, err, crash)
	assert.Contains(t, storedAtInstall, "prod-us-1:apps/podinfo", "the entry exists when Helm first writes")
	sf.members["prod-us-1"].SetFaults(nil)

	b := sf.fleet(t)
	plan, err = b.Plan(ctx, decodeInputs(t, noUS))
	require.NoError(t, err)
	it, ok := plan.Item(podinfoOn("prod-us-1"))
	require.True(t, ok)
	assert.Equal(t, reconcile.ActionUninstall, it.Action)
	_, err = b.Apply(ctx, plan, fleet.ApplyOptions{})
	require.NoError(t, err)
	assert.Empty(t, sf.members["prod-us-1"].Summary())
}

func TestStoreFailuresFailTheirItems(t *testing.T) {
	ctx := context.Background()
	sf := newStoreFleet()
	denied := errors.New("secrets is forbidden")
	onlyUS := func(ref release.ObjectRef) bool { return ref.Kind == "Secret" && ref.Namespace == "fleet-system" }
	// The first entry write (the intent of one of the three) fails.
	sf.hub.SetFaults(memory.FailNth(memory.OpApply, onlyUS, 1, denied))
	a := sf.fleet(t)
	plan, err := a.Plan(ctx, decodeInputs(t, fleetYAML))
	require.NoError(t, err)
	rep, err := a.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	var se *fleet.StoreError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "save", se.Op)
	failed := 0
	for _, it := range rep.Items {
		if it.Err != nil {
			failed++
			assert.Empty(t, helmList(t, sf.members[it.Key.Cluster]), "nothing installed where the intent was not saved")
		}
	}
	assert.Equal(t, 1, failed)
	assert.Len(t, storedKeys(t, sf.store(t)), 2)

	// A store that cannot load stops the plan.
	sf.hub.SetFaults(memory.FailNth(memory.OpList, nil, 1, denied))
	_, err = sf.fleet(t).Plan(ctx, decodeInputs(t, fleetYAML))
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "load", se.Op)
	assert.ErrorIs(t, err, denied)
}

func TestObjectStore(t *testing.T) {
	ctx := context.Background()
	hub := memory.New("hub")
	s, err := fleet.NewObjectStore(hub, fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "prod"})
	require.NoError(t, err)
	other, err := fleet.NewObjectStore(hub, fleet.ObjectStoreConfig{Namespace: "fleet-system", Name: "staging"})
	require.NoError(t, err)

	rel := fixture.Release()
	rel.Status.LastAttemptedRevision = "6.5.0"
	k := fleet.Key{Cluster: "member-with-a-rather-long-name-" + strings.Repeat("x", 40), Namespace: rel.Namespace, Name: rel.Name}
	require.NoError(t, s.Save(ctx, fleet.Entry{Key: k, Release: rel}))
	require.NoError(t, s.Save(ctx, fleet.Entry{Key: k, Release: rel}), "saving again replaces")
	require.NoError(t, other.Save(ctx, fleet.Entry{Key: fleet.Key{Cluster: "m", Namespace: rel.Namespace, Name: rel.Name}, Release: rel}))

	entries, err := s.Load(ctx)
	require.NoError(t, err)
	require.Len(t, entries, 1, "stores of other names are apart")
	assert.Equal(t, k, entries[0].Key)
	assert.Equal(t, "6.5.0", entries[0].Release.Status.LastAttemptedRevision)
	want, err := json.Marshal(rel.Spec)
	require.NoError(t, err)
	got, err := json.Marshal(entries[0].Release.Spec)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))

	secrets, err := hub.List(ctx, secretGVK, "fleet-system", nil)
	require.NoError(t, err)
	require.Len(t, secrets, 2)
	for _, sec := range secrets {
		assert.LessOrEqual(t, len(sec.GetName()), 63)
		assert.Equal(t, fleet.InventorySecretType, sec.Object["type"])
	}

	require.NoError(t, s.Delete(ctx, k))
	require.NoError(t, s.Delete(ctx, k), "deleting an absent entry is no error")
	assert.Empty(t, storedKeys(t, s))
	assert.Len(t, storedKeys(t, other), 1)

	t.Run("an entry too large for a Secret", func(t *testing.T) {
		big := fixture.Release()
		noise := make([]byte, fleet.MaxEntryBytes)
		_, _ = rand.Read(noise)
		big.Spec.Values = map[string]any{"blob": hex.EncodeToString(noise)}
		err := s.Save(ctx, fleet.Entry{Key: fleet.Key{Cluster: "m", Namespace: big.Namespace, Name: big.Name}, Release: big})
		var tl *fleet.EntryTooLargeError
		require.ErrorAs(t, err, &tl)
		assert.Greater(t, tl.Size, tl.Limit)
		assert.Contains(t, err.Error(), "inventory entry m:"+big.Namespace+"/"+big.Name)
		assert.Empty(t, storedKeys(t, s), "nothing written")
	})
	t.Run("a Secret edited by hand is an error that names it", func(t *testing.T) {
		_, err := hub.Apply(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"namespace": "fleet-system", "name": "prod-hand-made", "labels": map[string]any{fleet.InventoryLabel: "prod"}},
			"data":     map[string]any{"entry": "bm90IGd6aXA="},
		}}, release.ApplyOptions{FieldManager: "kubectl"})
		require.NoError(t, err)
		_, err = s.Load(ctx)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Secret fleet-system/prod-hand-made: data.entry")
	})
	t.Run("config", func(t *testing.T) {
		for _, tc := range []struct {
			cfg  fleet.ObjectStoreConfig
			want string
		}{
			{cfg: fleet.ObjectStoreConfig{Name: "prod"}, want: "fleet: object store: Namespace is required"},
			{cfg: fleet.ObjectStoreConfig{Namespace: "ns", Name: "Prod"}, want: `fleet: object store: Name "Prod": a lowercase RFC 1123 label`},
			{cfg: fleet.ObjectStoreConfig{Namespace: "ns", Name: strings.Repeat("a", 41)}, want: "longer than 40 characters"},
		} {
			_, err := fleet.NewObjectStore(hub, tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		}
	})
}

// A store entry for a member the fleet no longer has stops the load, by
// name: its releases could never be uninstalled otherwise.
func TestLoadRefusesAnUnknownMember(t *testing.T) {
	ctx := context.Background()
	sf := newStoreFleet()
	rel := fixture.Release()
	require.NoError(t, sf.store(t).Save(ctx, fleet.Entry{Key: fleet.Key{Cluster: "gone-1", Namespace: rel.Namespace, Name: rel.Name}, Release: rel}))
	err := sf.fleet(t).Load(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `member "gone-1" is not one of the fleet's`)
}

// A fleet uninstalls a release from a member only when what it recorded
// there itself, the status history in its store, proves the member's Helm
// release is the one it installed. An entry that lost its status, or one
// whose last revision someone else superseded, is not uninstalled: the
// report says why, and the entry stays for the next Apply.
func TestFleetUninstallsOnlyWhatItProvesItOwns(t *testing.T) {
	ctx := context.Background()
	sf := installedEverywhere(t)
	store := sf.store(t)
	entries, err := store.Load(ctx)
	require.NoError(t, err)
	for _, e := range entries {
		switch e.Key.Cluster {
		case "prod-us-1":
			// The status the fleet saved is lost.
			e.Release.Status = release.Status{}
			require.NoError(t, store.Save(ctx, e))
		case "prod-eu-1":
			// Someone else takes the Helm release of that name over.
			theirs := e.Release.DeepCopy()
			theirs.Status = release.Status{}
			theirs.Spec.Values = map[string]any{"replicaCount": 5}
			_, err := fixture.Reconciler(t, nil).Reconcile(ctx, sf.members["prod-eu-1"], theirs)
			require.NoError(t, err)
		}
	}

	b := sf.fleet(t)
	plan, err := b.Plan(ctx, decodeInputs(t, noUS))
	require.NoError(t, err)
	rep, err := b.Apply(ctx, plan, fleet.ApplyOptions{})
	require.Error(t, err)
	want := map[string]error{"prod-us-1": reconcile.ErrNoLatest, "prod-eu-1": reconcile.ErrReleaseMismatch}
	for member, sentinel := range want {
		it := itemOf(t, rep, podinfoOn(member))
		var no *fleet.NotOwnedError
		require.ErrorAs(t, it.Err, &no, member)
		assert.ErrorIs(t, it.Err, sentinel, member)
		assert.NotEmpty(t, helmList(t, sf.members[member]), "%s: the Helm release stays", member)
	}
	assert.Equal(t, "prod-us-1:apps/podinfo not uninstalled: the fleet's inventory does not prove it installed Helm release podinfo (storage namespace apps) on member prod-us-1: the status history records no release, and storage holds apps/podinfo.v1",
		itemOf(t, rep, podinfoOn("prod-us-1")).Err.Error())
	assert.Contains(t, itemOf(t, rep, podinfoOn("prod-eu-1")).Err.Error(),
		"on member prod-eu-1: release apps/podinfo.v2 in storage was not made by this Release (last observed apps/podinfo.v1)")
	assert.Equal(t, []string{"dev-1:apps/podinfo", "prod-eu-1:apps/podinfo", "prod-us-1:apps/podinfo"}, storedKeys(t, sf.store(t)), "the entries stay")
}

func itemOf(t *testing.T, rep *fleet.ApplyReport, k fleet.Key) *fleet.ItemReport {
	t.Helper()
	for i := range rep.Items {
		if rep.Items[i].Key == k {
			return &rep.Items[i]
		}
	}
	require.Failf(t, "no item", "%s", k)
	return nil
}
