package fleet

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/helmfleet/helmfleet/release/reconcile"
)

// StateDeferred is the state of a release plan item that cannot be
// rendered yet because the member does not serve kinds its chart uses
// (a custom resource whose CRD a unit it depends on brings): it is
// planned after its dependencies, and Apply plans and reconciles it for
// real once they are ready, as Flux, which never plans ahead, would.
const StateDeferred reconcile.State = "Deferred"

// StateRemoved is the state of a plan item for a unit the fleet ran on a
// member and no longer places there (or no longer has among its inputs):
// its action says what Apply does about it (uninstall, delete, or none
// when it is kept), and its reason why. Such a unit is not in sync with
// anything, so it does not show as InSync.
const StateRemoved reconcile.State = "Removed"

// noKindMatch matches the message of a meta.NoKindMatchError when the
// error chain lost its type (Helm wraps some errors as text).
var noKindMatch = regexp.MustCompile(`no matches for kind "([^"]+)" in (?:version|group) "([^"]*)"`)

// missingKinds returns the kinds err says the cluster does not serve,
// each as "Kind (group/version)", sorted; nil when err is about
// something else.
func missingKinds(err error) []string {
	if err == nil {
		return nil
	}
	version := map[string]string{} // group/Kind -> version, when known
	add := func(group, v, kind string) {
		gk := group + "/" + kind
		if old, ok := version[gk]; !ok || old == "" {
			version[gk] = v
		}
	}
	var nk *meta.NoKindMatchError
	if errors.As(err, &nk) {
		v := ""
		if len(nk.SearchedVersions) > 0 {
			v = nk.SearchedVersions[0]
		}
		add(nk.GroupKind.Group, v, nk.GroupKind.Kind)
	}
	for _, m := range noKindMatch.FindAllStringSubmatch(err.Error(), -1) {
		group, v := "", m[2]
		if i := strings.LastIndexByte(v, '/'); i >= 0 {
			group, v = v[:i], v[i+1:]
		}
		add(group, v, m[1])
	}
	if len(version) == 0 {
		return nil
	}
	out := make([]string, 0, len(version))
	for gk, v := range version {
		i := strings.LastIndexByte(gk, '/')
		group, kind := gk[:i], gk[i+1:]
		gv := v
		if group != "" {
			gv = group + "/" + v
		}
		out = append(out, kind+" ("+strings.TrimSuffix(gv, "/")+")")
	}
	sort.Strings(out)
	return out
}

// deferMissingKinds turns the items whose plan failed only because the
// member does not serve a kind their chart uses into items planned after
// their dependencies (StateDeferred), when they have dependencies in the
// plan that could bring the kind (a CRD Kustomization, a CRD chart).
// Without dependencies the error stays: nothing the fleet runs first can
// make the kind appear.
func (p *Plan) deferMissingKinds() {
	deferred := map[Key]bool{}
	for _, it := range p.Items {
		kinds := missingKinds(it.Err)
		if kinds == nil || it.Release == nil {
			continue
		}
		k := keyOfPlan(it)
		if p.removed(k) || !p.hasDependencies(k) {
			continue
		}
		it.Reason = fmt.Sprintf("planned after its dependencies: the member does not serve %s yet", strings.Join(kinds, ", "))
		it.Err = nil
		it.State = StateDeferred
		it.Action = reconcile.ActionInstall
		if it.Revision > 0 || it.Release.Status.LastAttemptedRevision != "" {
			it.Action = reconcile.ActionUpgrade
		}
		deferred[k] = true
	}
	if len(deferred) == 0 {
		return
	}
	kept := p.Errors[:0]
	for _, e := range p.Errors {
		var ie *ItemError
		if errors.As(e, &ie) && deferred[ie.Key] && !ie.Key.IsKustomization() {
			continue
		}
		kept = append(kept, e)
	}
	p.Errors = kept
}

// hasDependencies reports whether k depends, in the plan's graph, on any
// unit (directly or through the Kustomization that produces it).
func (p *Plan) hasDependencies(k Key) bool {
	if p.graph == nil {
		return false
	}
	for _, n := range p.graph.Nodes() {
		if n.Key == k {
			return len(n.Deps) > 0
		}
	}
	return false
}
