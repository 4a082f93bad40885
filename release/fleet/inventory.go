package fleet

import (
	"sync"

	"github.com/helmfleet/helmfleet/release"
)

// inventory is the copy of each release and Kustomization the fleet
// applied last on each member, with its status. It is safe for
// concurrent use: its lock is its own, and what it hands out is a copy.
type inventory struct {
	mu    sync.Mutex
	rels  map[Key]*release.Release
	kusts map[Key]*release.Kustomization
}

// newInventory returns an empty inventory.
func newInventory() *inventory {
	return &inventory{rels: map[Key]*release.Release{}, kusts: map[Key]*release.Kustomization{}}
}

// has reports whether the inventory holds k (a release or a
// Kustomization, as k's Kind says).
func (inv *inventory) has(k Key) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if k.IsKustomization() {
		_, ok := inv.kusts[k]
		return ok
	}
	_, ok := inv.rels[k]
	return ok
}

// release returns a copy of release k.
func (inv *inventory) release(k Key) (*release.Release, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	r, ok := inv.rels[k]
	return r.DeepCopy(), ok
}

// releaseStatus returns a copy of release k's status.
func (inv *inventory) releaseStatus(k Key) (release.Status, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	r, ok := inv.rels[k]
	if !ok {
		return release.Status{}, false
	}
	return *r.Status.DeepCopy(), true
}

// kustomization returns a copy of Kustomization k.
func (inv *inventory) kustomization(k Key) (*release.Kustomization, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	ks, ok := inv.kusts[k]
	return ks.DeepCopy(), ok
}

// kustomizationStatus returns a copy of Kustomization k's status.
func (inv *inventory) kustomizationStatus(k Key) (release.KustomizationStatus, bool) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	ks, ok := inv.kusts[k]
	if !ok {
		return release.KustomizationStatus{}, false
	}
	return *ks.Status.DeepCopy(), true
}

// ready reports whether k's copy is Ready (a release's for its current
// generation).
func (inv *inventory) ready(k Key) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if k.IsKustomization() {
		ks, ok := inv.kusts[k]
		return ok && ks.IsReady()
	}
	r, ok := inv.rels[k]
	return ok && r.Status.IsConditionTrue(release.ConditionReady) && r.Status.ObservedGeneration == r.Generation
}

// putRelease records rel as release k's copy; the inventory keeps rel
// itself, so the caller must not change it afterwards.
func (inv *inventory) putRelease(k Key, rel *release.Release) {
	inv.mu.Lock()
	inv.rels[k] = rel
	inv.mu.Unlock()
}

// putKustomization records ks as Kustomization k's copy; the inventory
// keeps ks itself, so the caller must not change it afterwards.
func (inv *inventory) putKustomization(k Key, ks *release.Kustomization) {
	inv.mu.Lock()
	inv.kusts[k] = ks
	inv.mu.Unlock()
}

// forget removes k.
func (inv *inventory) forget(k Key) {
	inv.mu.Lock()
	delete(inv.rels, k)
	delete(inv.kusts, k)
	inv.mu.Unlock()
}

// except returns copies of the releases and Kustomizations for which
// keep is false, read at one instant.
func (inv *inventory) except(keep func(Key) bool) (map[Key]*release.Release, map[Key]*release.Kustomization) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	rels := map[Key]*release.Release{}
	for k, r := range inv.rels {
		if !keep(k) {
			rels[k] = r.DeepCopy()
		}
	}
	kusts := map[Key]*release.Kustomization{}
	for k, ks := range inv.kusts {
		if !keep(k) {
			kusts[k] = ks.DeepCopy()
		}
	}
	return rels, kusts
}

// releases returns copies of every release.
func (inv *inventory) releases() map[Key]*release.Release {
	rels, _ := inv.except(func(k Key) bool { return k.IsKustomization() })
	return rels
}

// replace puts rels and, unless nil, kusts in place of what the
// inventory holds; it keeps the maps themselves.
func (inv *inventory) replace(rels map[Key]*release.Release, kusts map[Key]*release.Kustomization) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.rels = rels
	if kusts != nil {
		inv.kusts = kusts
	}
}
