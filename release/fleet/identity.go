package fleet

import (
	"fmt"

	"github.com/helmfleet/helmfleet/release"
)

// releaseCluster is the member as rel acts on it: when rel names a
// service account (spec.serviceAccountName, else
// Config.DefaultServiceAccount), the member's cluster impersonating
// system:serviceaccount:<rel's namespace>:<name>; otherwise the member's
// own. A member that cannot impersonate is an error naming the release,
// member and field, never the member's own identity instead.
func (f *Fleet) releaseCluster(member string, rel *release.Release) (release.Cluster, error) {
	c := f.byName[member].Cluster
	sa, field := rel.Spec.ServiceAccountName, "spec.serviceAccountName"
	if sa == "" {
		sa, field = f.cfg.DefaultServiceAccount, "spec.serviceAccountName (empty: the fleet's DefaultServiceAccount)"
	}
	if sa == "" {
		return c, nil
	}
	ic, err := release.ImpersonateAs(c, release.ServiceAccountUser(rel.Namespace, sa))
	if err != nil {
		return nil, fmt.Errorf("release %s/%s on member %s: %s %q: %w", rel.Namespace, rel.Name, member, field, sa, err)
	}
	return ic, nil
}
