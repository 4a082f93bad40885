package controller

import (
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/helmfleet/helmfleet/release"
)

// ShardLabel is Flux's sharding label: a HelmRelease labelled
// sharding.fluxcd.io/key=<key> is reconciled only by the controller
// instance of that shard; one without it by the unsharded instance.
const ShardLabel = "sharding.fluxcd.io/key"

// ShardSelector selects the HelmReleases of one shard: those labelled
// ShardLabel=key, or for key "" those without the label (Flux's main
// controller runs with --watch-label-selector='!sharding.fluxcd.io/key').
// A nil Config.Shard selects every HelmRelease: no sharding.
func ShardSelector(key string) labels.Selector {
	op, vals := selection.Equals, []string{key}
	if key == "" {
		op, vals = selection.DoesNotExist, nil
	}
	req, err := labels.NewRequirement(ShardLabel, op, vals)
	if err != nil {
		// Only an invalid label value gets here; select nothing rather
		// than everything.
		return labels.Nothing()
	}
	return labels.NewSelector().Add(*req)
}

// ShardPredicate passes the events of HelmReleases sel selects (all when
// sel is nil). The reconciler applies the same filter itself, so events
// mapped from ConfigMaps, Secrets, sources and dependencies never reach a
// release of another shard.
func ShardPredicate(sel labels.Selector) predicate.Predicate {
	return predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return sel == nil || sel.Matches(labels.Set(obj.GetLabels()))
	})
}

// ShardCacheOptions narrows the manager's cache of HelmReleases to one
// shard: pass the result as manager.Options.Cache. It saves the memory of
// the other shards' releases, at a price: a release's dependsOn can then
// name only releases of its own shard (the others are not in the cache
// and count as not ready). Without it, Config.Shard alone filters in the
// reconciler and dependencies across shards work.
func ShardCacheOptions(sel labels.Selector) cache.Options {
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&release.Release{}: {Label: sel},
	}}
}

// LeaderElectionID is the name of the Lease the instances of one shard
// elect their leader with; give it to manager.Options.LeaderElectionID
// (with LeaderElection true). Each shard has its own Lease, so each shard
// has one active instance: "helmfleet-helmrelease" for the unsharded
// instance, "helmfleet-helmrelease-<key>" for shard key.
func LeaderElectionID(key string) string {
	if key == "" {
		return "helmfleet-helmrelease"
	}
	return "helmfleet-helmrelease-" + key
}
