package kube

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/helmfleet/helmfleet/release"
)

var _ release.Impersonator = (*Cluster)(nil)

// impersonations are the clusters a Cluster made to act as other users,
// one per user, so each user's clients and discovery are built once.
type impersonations struct {
	// callerClients is why impersonation is impossible: clients the
	// caller handed in (Config.Dynamic, Config.Kubernetes) carry the
	// caller's identity and cannot be told to act as another.
	callerClients bool
	qps           float32
	burst         int

	mu     sync.Mutex
	byUser map[string]*Cluster
}

func newImpersonations(cfg Config) *impersonations {
	return &impersonations{callerClients: cfg.Dynamic != nil || cfg.Kubernetes != nil, qps: cfg.QPS, burst: cfg.Burst, byUser: map[string]*Cluster{}}
}

// Impersonate returns the cluster acting as user: every request of its
// clients and of Helm's carries the API server's impersonation header for
// user (rest.Config.Impersonate), so the cluster's credentials need RBAC's
// impersonate verb on it, and what user may do is all the result may do.
// It keeps the cluster's name, field manager and log, and is built once
// per user. A cluster built with Config.Dynamic or Config.Kubernetes
// cannot impersonate (those clients are the caller's), nor one whose
// *rest.Config impersonates already (a second identity would replace the
// first unseen).
func (c *Cluster) Impersonate(user string) (release.Cluster, error) {
	if user == "" {
		return nil, errors.New("impersonate: user is empty")
	}
	a := c.as
	if a.callerClients {
		return nil, fmt.Errorf("cluster %s: cannot impersonate %s: it was built with the caller's Dynamic or Kubernetes client", c.name, user)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if ic, ok := a.byUser[user]; ok {
		return ic, nil
	}
	rc, err := c.getter.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("cluster %s: impersonate %s: rest config: %w", c.name, user, err)
	}
	if im := rc.Impersonate; im.UserName != "" || im.UID != "" || len(im.Groups) > 0 || len(im.Extra) > 0 {
		return nil, fmt.Errorf("cluster %s: cannot impersonate %s: its config impersonates another user already", c.name, user)
	}
	rc = rest.CopyConfig(rc)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user}
	ic, err := New(Config{Name: c.name, REST: rc, FieldManager: c.fieldManager, Log: c.log, QPS: a.qps, Burst: a.burst})
	if err != nil {
		return nil, fmt.Errorf("cluster %s: impersonate %s: %w", c.name, user, err)
	}
	a.byUser[user] = ic
	return ic, nil
}
