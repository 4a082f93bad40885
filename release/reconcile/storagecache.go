package reconcile

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"

	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"

	"github.com/helmfleet/helmfleet/internal/helmrecord"
)

// storageCache holds, for one reconcile and one storage namespace, the
// records of each release name. Over Helm's Secret and ConfigMap drivers
// each read of a release's history lists every record Secret of the
// namespace on the API server, and a reconcile (observe, begin, Helm's own
// action, record the outcome, observe again) used to read it up to seven
// times; now it lists it once.
//
// A history as the driver listed it is exact and answers Helm's own
// queries. A write through the driver that succeeds is applied to the
// cached history, which is then no longer exact: the reconciler's own
// reads (lastRecord) use it, since what they look at (versions, status,
// chart, values digest, manifest, hooks) is what was written, while
// Helm's actions query the driver again, so that they see what only the
// driver adds (a Secret's labels). A write that fails forgets the history.
//
// Helm may write from a second goroutine (an install whose context ends
// marks the release failed while the install goes on), so mu guards the
// cache and is held across each driver call.
type storageCache struct {
	mu   sync.Mutex
	hist map[string]*cachedHistory
}

// cachedHistory is the history of one release name, oldest first.
type cachedHistory struct {
	recs  []*helmrelease.Release
	exact bool
}

// cachingDriver is a Helm storage driver that answers history queries
// from its storageCache and keeps the cache up to date with its writes.
type cachingDriver struct {
	driver.Driver
	c *storageCache
}

// cachedStorage returns the storage cache of namespace for this run.
func (ru *run) cachedStorage(namespace string) *storageCache {
	if ru.stores == nil {
		ru.stores = map[string]*storageCache{}
	}
	c := ru.stores[namespace]
	if c == nil {
		c = &storageCache{hist: map[string]*cachedHistory{}}
		ru.stores[namespace] = c
	}
	return c
}

// lastRecord returns the latest record of the release in its storage, nil
// if none: from this run's cache when it holds the history, else read
// through ru.cfg (which fills the cache).
func (ru *run) lastRecord() (*helmrelease.Release, error) {
	name := ru.rel.GetReleaseName()
	if c := ru.stores[ru.rel.GetStorageNamespace()]; c != nil {
		if last, ok := c.latest(name); ok {
			return last, nil
		}
	}
	return lastRelease(ru.cfg.Releases, name)
}

// latest returns a copy of the latest cached record of name, nil if the
// cached history is empty, and whether the history is cached.
func (c *storageCache) latest(name string) (*helmrelease.Release, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := c.hist[name]
	switch {
	case h == nil:
		return nil, false
	case len(h.recs) == 0:
		return nil, true
	}
	return helmrecord.Copy(h.recs[len(h.recs)-1]), true
}

// historyQuery returns the release name of a query Helm's storage makes
// for a release's history (name and owner, optionally status), and the
// status it filters on.
func historyQuery(labels map[string]string) (name, status string, ok bool) {
	name, hasName := labels["name"]
	if !hasName || labels["owner"] != "helm" {
		return "", "", false
	}
	status, hasStatus := labels["status"]
	n := 2
	if hasStatus {
		n++
	}
	return name, status, len(labels) == n
}

// Query answers a history query from an exact cached history. A query
// for the whole history fills the cache; one that filters on status is
// answered from the cache only, so that it costs no more than it did.
func (d *cachingDriver) Query(labels map[string]string) ([]*helmrelease.Release, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	name, status, ok := historyQuery(labels)
	if !ok {
		return d.Driver.Query(labels)
	}
	h := d.c.hist[name]
	if h == nil || !h.exact {
		if status != "" {
			return d.Driver.Query(labels)
		}
		rs, err := d.Driver.Query(labels)
		switch {
		case errors.Is(err, driver.ErrReleaseNotFound):
			d.c.hist[name] = &cachedHistory{exact: true}
		case err != nil:
			delete(d.c.hist, name)
		default:
			recs := helmrecord.CopyAll(rs)
			slices.SortStableFunc(recs, func(a, b *helmrelease.Release) int { return cmp.Compare(a.Version, b.Version) })
			d.c.hist[name] = &cachedHistory{recs: recs, exact: true}
		}
		return rs, err
	}
	var out []*helmrelease.Release
	for _, r := range h.recs {
		if status == "" || (r.Info != nil && r.Info.Status.String() == status) {
			out = append(out, helmrecord.Copy(r))
		}
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

// Get answers from an exact cached history when it holds key.
func (d *cachingDriver) Get(key string) (*helmrelease.Release, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	for _, h := range d.c.hist {
		if !h.exact {
			continue
		}
		for _, r := range h.recs {
			if recordKey(r) == key {
				return helmrecord.Copy(r), nil
			}
		}
	}
	return d.Driver.Get(key)
}

// Create creates the record and adds it to the cached history.
func (d *cachingDriver) Create(key string, rls *helmrelease.Release) error {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	err := d.Driver.Create(key, rls)
	d.c.wrote(rls.Name, rls.Version, rls, err)
	return err
}

// Update updates the record and in the cached history.
func (d *cachingDriver) Update(key string, rls *helmrelease.Release) error {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	err := d.Driver.Update(key, rls)
	d.c.wrote(rls.Name, rls.Version, rls, err)
	return err
}

// Delete deletes the record and drops it from the cached history.
func (d *cachingDriver) Delete(key string) (*helmrelease.Release, error) {
	d.c.mu.Lock()
	defer d.c.mu.Unlock()
	rls, err := d.Driver.Delete(key)
	if err != nil || rls == nil {
		// The record's name is known from a successful delete only.
		clear(d.c.hist)
		return rls, err
	}
	d.c.wrote(rls.Name, rls.Version, nil, nil)
	return rls, err
}

// wrote applies a write of version of name (rls, or nil for a delete) to
// the cached history: the history is no longer exact, and is forgotten
// when the write failed.
func (c *storageCache) wrote(name string, version int, rls *helmrelease.Release, err error) {
	h := c.hist[name]
	if h == nil {
		return
	}
	if err != nil {
		delete(c.hist, name)
		return
	}
	h.exact = false
	i := slices.IndexFunc(h.recs, func(r *helmrelease.Release) bool { return r.Version == version })
	switch {
	case rls == nil && i >= 0:
		h.recs = slices.Delete(h.recs, i, i+1)
	case rls == nil:
	case i >= 0:
		h.recs[i] = helmrecord.Copy(rls)
	default:
		h.recs = append(h.recs, helmrecord.Copy(rls))
		slices.SortStableFunc(h.recs, func(a, b *helmrelease.Release) int { return cmp.Compare(a.Version, b.Version) })
	}
}

// recordKey is the storage key of a record, as Helm's storage makes it.
func recordKey(r *helmrelease.Release) string {
	return fmt.Sprintf("sh.helm.release.v1.%s.v%d", r.Name, r.Version)
}
