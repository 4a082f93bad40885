package memory

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release"
)

var _ release.Impersonator = (*Cluster)(nil)

// Impersonation is one call made through a cluster Impersonate returned:
// who acted, which call, in which namespace.
type Impersonation struct {
	// User is the impersonated user.
	User string
	// Call is "HelmConfig", "Apply", "Patch" or "Delete".
	Call string
	// Namespace is HelmConfig's storage namespace, or the object's.
	Namespace string
}

// impersonations are a Cluster's impersonating views and what they did;
// guarded by the Cluster's mu.
type impersonations struct {
	allow func(user string) error
	views map[string]*asUser
	done  map[Impersonation]bool
}

// WithImpersonation sets who may be impersonated: Impersonate calls allow
// with the user and refuses with its error, as an API server refuses a
// client without RBAC's impersonate verb on the user. Default: anyone.
func WithImpersonation(allow func(user string) error) Option {
	return func(c *Cluster) { c.as.allow = allow }
}

// Impersonate returns the cluster acting as user: the same objects and
// Helm releases (the in-memory cluster enforces no RBAC), with every
// HelmConfig, Apply, Patch and Delete made through it recorded (see
// Impersonations). One view per user; a view cannot impersonate again.
func (c *Cluster) Impersonate(user string) (release.Cluster, error) {
	if user == "" {
		return nil, errors.New("impersonate: user is empty")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.as.allow != nil {
		if err := c.as.allow(user); err != nil {
			return nil, fmt.Errorf("cluster %s: impersonate %s: %w", c.name, user, err)
		}
	}
	if v, ok := c.as.views[user]; ok {
		return v, nil
	}
	if c.as.views == nil {
		c.as.views, c.as.done = map[string]*asUser{}, map[Impersonation]bool{}
	}
	v := &asUser{Cluster: c, user: user}
	c.as.views[user] = v
	return v, nil
}

// Impersonations returns the calls made through impersonating views,
// each once, sorted by user, call and namespace.
func (c *Cluster) Impersonations() []Impersonation {
	c.mu.Lock()
	out := make([]Impersonation, 0, len(c.as.done))
	for im := range c.as.done {
		out = append(out, im)
	}
	c.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.User != b.User {
			return a.User < b.User
		}
		if a.Call != b.Call {
			return a.Call < b.Call
		}
		return a.Namespace < b.Namespace
	})
	return out
}

// asUser is a Cluster acting as user.
type asUser struct {
	*Cluster
	user string
}

func (a *asUser) record(call, namespace string) {
	a.mu.Lock()
	a.as.done[Impersonation{User: a.user, Call: call, Namespace: namespace}] = true
	a.mu.Unlock()
}

// HelmConfig records the call and returns the cluster's.
func (a *asUser) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	a.record("HelmConfig", scope.StorageNamespace)
	return a.Cluster.HelmConfig(ctx, scope)
}

// Apply records the call and applies.
func (a *asUser) Apply(ctx context.Context, obj *unstructured.Unstructured, opts release.ApplyOptions) (*unstructured.Unstructured, error) {
	a.record("Apply", obj.GetNamespace())
	return a.Cluster.Apply(ctx, obj, opts)
}

// Patch records the call and patches.
func (a *asUser) Patch(ctx context.Context, ref release.ObjectRef, jsonPatch []byte, opts release.PatchOptions) (*unstructured.Unstructured, error) {
	a.record("Patch", ref.Namespace)
	return a.Cluster.Patch(ctx, ref, jsonPatch, opts)
}

// Delete records the call and deletes.
func (a *asUser) Delete(ctx context.Context, ref release.ObjectRef, opts release.DeleteOptions) error {
	a.record("Delete", ref.Namespace)
	return a.Cluster.Delete(ctx, ref, opts)
}

// Impersonate refuses: the view acts as its user already.
func (a *asUser) Impersonate(user string) (release.Cluster, error) {
	return nil, fmt.Errorf("cluster %s: cannot impersonate %s: it acts as %s already", a.name, user, a.user)
}
