package release

import (
	"errors"
	"fmt"
)

// Impersonator is the optional role of a cluster that can act as another
// user: what a release's spec.serviceAccountName needs where the library
// picks the cluster itself (a fleet's members). release/kube implements
// it with the API server's impersonation (the member's credentials need
// RBAC's impersonate verb on the user), release/memory by recording who
// acts.
type Impersonator interface {
	// Impersonate returns the cluster acting as user, a Kubernetes user
	// name such as ServiceAccountUser gives. The result has the same
	// Name. An error names the cluster and the user.
	Impersonate(user string) (Cluster, error)
}

// ErrCannotImpersonate is matched by the error of ImpersonateAs for a
// cluster without the Impersonator role.
var ErrCannotImpersonate = errors.New("cluster cannot impersonate")

// ServiceAccountUser is the user a service account acts as:
// system:serviceaccount:<namespace>:<name>. A release's
// spec.serviceAccountName is a service account of the release's own
// namespace, as in Flux.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ImpersonateAs returns cluster acting as user through its Impersonator
// role, or its error. A cluster without the role is an error matching
// ErrCannotImpersonate, never the cluster with its own identity.
func ImpersonateAs(cluster Cluster, user string) (Cluster, error) {
	im, ok := cluster.(Impersonator)
	if !ok {
		return nil, fmt.Errorf("cluster %s: %w (it has no Impersonate method)", cluster.Name(), ErrCannotImpersonate)
	}
	return im.Impersonate(user)
}
