// Package helmrecord holds helpers for Helm's release records that the
// reconciler's storage cache and the in-memory backend's storage share.
package helmrecord

import helmrelease "helm.sh/helm/v3/pkg/release"

// Copy copies what Helm's actions and the reconciler change in place on a
// record they read (the record, its info and its hooks' last runs), so
// that a change never written to storage does not reach the stored copy.
// Chart, values and manifest are never changed and stay shared. Copy of
// nil is nil.
func Copy(r *helmrelease.Release) *helmrelease.Release {
	if r == nil {
		return nil
	}
	out := *r
	if r.Info != nil {
		info := *r.Info
		out.Info = &info
	}
	if r.Hooks != nil {
		out.Hooks = make([]*helmrelease.Hook, len(r.Hooks))
		for i, h := range r.Hooks {
			if h != nil {
				hook := *h
				h = &hook
			}
			out.Hooks[i] = h
		}
	}
	return &out
}

// CopyAll returns a new slice holding Copy of each record of rs; nil for
// nil.
func CopyAll(rs []*helmrelease.Release) []*helmrelease.Release {
	if rs == nil {
		return nil
	}
	out := make([]*helmrelease.Release, len(rs))
	for i, r := range rs {
		out[i] = Copy(r)
	}
	return out
}
