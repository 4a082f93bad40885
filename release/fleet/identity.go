package fleet

import (
	"fmt"

	"github.com/helmfleet/helmfleet/release"
)

// serviceAccount is the service account rel acts as on its members
// (spec.serviceAccountName, else Config.DefaultServiceAccount; "" for
// none), its user name, and the field it comes from.
func (f *Fleet) serviceAccount(rel *release.Release) (sa, user, field string) {
	sa, field = rel.Spec.ServiceAccountName, "spec.serviceAccountName"
	if sa == "" {
		sa, field = f.cfg.DefaultServiceAccount, "spec.serviceAccountName (empty: the fleet's DefaultServiceAccount)"
	}
	if sa == "" {
		return "", "", ""
	}
	return sa, release.ServiceAccountUser(rel.Namespace, sa), field
}

// releaseCluster is the member as rel acts on it: with a service
// account, the member's cluster impersonating its user; otherwise the
// member's own. A member that cannot impersonate is an error naming the
// release, member and field, never the member's own identity instead.
func (f *Fleet) releaseCluster(member string, rel *release.Release) (release.Cluster, error) {
	c := f.byName[member].Cluster
	sa, user, field := f.serviceAccount(rel)
	if sa == "" {
		return c, nil
	}
	ic, err := release.ImpersonateAs(c, user)
	if err != nil {
		return nil, fmt.Errorf("release %s/%s on member %s: %s %q: %w", rel.Namespace, rel.Name, member, field, sa, err)
	}
	return ic, nil
}
