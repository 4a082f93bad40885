package source

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"

	"helm.sh/helm/v3/pkg/repo"
)

// DefaultIndexCacheSize is how many (index digest, chart) entries an
// IndexCache keeps by default.
const DefaultIndexCacheSize = 256

// IndexCache keeps the parsed versions of a chart per (index digest,
// chart name), so that resolving the same chart again from the same index
// bytes costs a version selection, not a scan. Entries are small (one
// chart's block, not the index). It is safe for concurrent use; the oldest
// entry goes first when it is full.
//
// The resolvers key it by a digest that costs a fifth of a SHA-256: the
// index's length and a 64-bit maphash under a seed drawn when the cache is
// made. The seed is secret to the process, so nobody can craft two indexes
// with one key, and two different indexes share a key by chance with a
// probability of 2⁻⁶⁴. Find takes the caller's own digests (any string
// not starting with "maphash:").
type IndexCache struct {
	max  int
	seed maphash.Seed

	mu    sync.Mutex
	m     map[cacheKey]*chartEntries
	order []cacheKey
}

type cacheKey struct{ digest, chart string }

// NewIndexCache returns a cache holding up to size entries (at least 1).
func NewIndexCache(size int) *IndexCache {
	if size < 1 {
		size = 1
	}
	return &IndexCache{max: size, seed: maphash.MakeSeed(), m: map[cacheKey]*chartEntries{}}
}

// sums returns the hashes of an index about to be read: its key in c and,
// when revision is set, its SHA-256.
func (c *IndexCache) sums(revision bool) *indexSums {
	h := &indexSums{}
	h.key.SetSeed(c.seed)
	if revision {
		h.sha = sha256.New()
	}
	return h
}

// Find is FindChartVersion with a cache: digest must identify index (the
// digest of its raw bytes); index is read only on a miss. Failures are
// not cached.
func (c *IndexCache) Find(digest string, index []byte, chartName, constraint string) (*repo.ChartVersion, error) {
	k := cacheKey{digest, chartName}
	e := c.get(k)
	if e == nil {
		var err error
		e, err = parseChartEntries(index, chartName)
		if err != nil {
			return nil, err
		}
		e = c.put(k, e)
	}
	return e.resolve(constraint)
}

// get returns the entries kept for k, or nil.
func (c *IndexCache) get(k cacheKey) *chartEntries {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[k]
}

// put keeps e for k unless another caller got there first, and returns
// what is kept.
func (c *IndexCache) put(k cacheKey, e *chartEntries) *chartEntries {
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev := c.m[k]; prev != nil {
		return prev
	}
	if len(c.order) >= c.max {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
	c.m[k] = e
	c.order = append(c.order, k)
	return e
}

// Len reports how many entries the cache holds.
func (c *IndexCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
