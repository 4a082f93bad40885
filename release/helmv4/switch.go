package helmv4

import (
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// EngineAnnotation is the annotation (or label) of a release that
// chooses its engine: EngineV4 or EngineV3. Set on the member's copy of
// a release (a Karmada OverridePolicy's annotationsOverrider whose
// targetCluster is one wave's members), it moves that member's release
// to Helm v4 at its next action, so the fleet's waves and gates govern
// the switch as they govern any change.
const EngineAnnotation = "fleet.helmfleet.io/helm-engine"

// Values of EngineAnnotation.
const (
	// EngineV3 runs the release with Helm v3 (reconcile.HelmV3).
	EngineV3 = "v3"
	// EngineV4 runs the release with Helm v4.
	EngineV4 = "v4"
)

// EngineFor returns a reconcile.Config.EngineFor that reads
// EngineAnnotation of a release, its annotations before its labels:
// EngineV4 runs the release with v4, EngineV3 with Helm v3, and any
// other value or none leaves it to Config.Engine.
func EngineFor(v4 Engine) func(*release.Release) reconcile.Engine {
	return func(rel *release.Release) reconcile.Engine {
		v, ok := rel.GetAnnotations()[EngineAnnotation]
		if !ok {
			v = rel.GetLabels()[EngineAnnotation]
		}
		switch v {
		case EngineV4:
			return v4
		case EngineV3:
			return reconcile.HelmV3{}
		}
		return nil
	}
}
