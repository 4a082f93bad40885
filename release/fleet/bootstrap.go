package fleet

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
)

// placedDirectly is what taken records of a unit placed on its member by
// the inputs.
const placedDirectly = "placed on the member directly"

// sameKustomization reports whether c, a Kustomization that parent (it)
// produces, is a unit the plan already has rather than a new one: parent
// itself (a `flux bootstrap` repository's flux-system Kustomization,
// whose gotk-sync.yaml holds the very Kustomization that points at its
// directory: Flux's flux-system manages itself) or a Kustomization placed
// on the member directly with the same namespace and name. The placed
// copy is kept: taking the produced spec would change what was built
// from, after the build. When the produced spec differs, a plan warning
// says so, with both sources.
func (p *Plan) sameKustomization(taken map[Key]string, it *KustomizationPlan, c *release.Kustomization, ck Key) bool {
	kk := it.Key()
	placed := it.Kustomization
	if ck != kk {
		if taken[ck] != placedDirectly {
			return false
		}
		kp, ok := p.kitems[ck]
		if !ok {
			return false
		}
		placed = kp.Kustomization
	}
	if !equality.Semantic.DeepEqual(placed.Spec, c.Spec) {
		p.Warnings = append(p.Warnings, policy.Warning{Message: fmt.Sprintf(
			"%s produces %s, the same unit as the one placed on the member, with another spec (%s); the placed spec (%s) is kept: make them the same",
			kk, ck.unit(), kustomizationSource(c), kustomizationSource(placed))})
	}
	return true
}
