package policy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ReplicasValuesPathAnnotation, on a PropagationPolicy or
// ClusterPropagationPolicy, names the Helm values path (dotted keys, e.g.
// "replicaCount" or "controller.replicaCount") that holds the replica
// count of the HelmReleases it places. With Divided replica scheduling
// each member's copy of the HelmRelease then gets its share of the count
// at spec.values.<path>, divided exactly as a Deployment's replicas are.
// The release must set the total there (the policy engine cannot see the
// chart's defaults); a release that does not is an error of its placement.
//
// Karmada has no replica interpreter for HelmRelease, so a Divided policy
// on one is Duplicated without a word; helmfleet divides when the policy
// names the path, and warns (WarnDividedWithoutReplicas) when it does not.
const ReplicasValuesPathAnnotation = "policy.helmfleet.io/replicas-values-path"

// WarnDividedWithoutReplicas: a propagation policy with Divided replica
// scheduling places an object that has no replica count (a HelmRelease
// whose policy names no ReplicasValuesPathAnnotation), so every cluster
// gets it whole.
const WarnDividedWithoutReplicas WarningCode = "DividedWithoutReplicas"

// valuesPathOf parses the annotation's path into its keys; ok is false when
// the annotation is absent.
func valuesPathOf(annotations map[string]string) (keys []string, ok bool, err error) {
	raw, ok := annotations[ReplicasValuesPathAnnotation]
	if !ok {
		return nil, false, nil
	}
	keys = strings.Split(raw, ".")
	for _, k := range keys {
		if k == "" {
			return nil, true, fmt.Errorf("is not a dotted values path (an empty key)")
		}
	}
	return keys, true, nil
}

func isHelmRelease(k ObjectKey) bool {
	return k.Kind == "HelmRelease" && strings.HasPrefix(k.APIVersion, "helm.toolkit.fluxcd.io/")
}

// helmReleaseReplicas returns, for a HelmRelease placed by a Divided policy
// that names a values path, where its replica count lives and the count.
// ok is false when the object is no such HelmRelease; an error says that
// the release does not set the path to a whole number.
func helmReleaseReplicas(pp *propPolicy, obj *unstructured.Unstructured, key ObjectKey) (path []string, replicas int64, ok bool, err error) {
	rs := pp.spec.Placement.ReplicaScheduling
	if pp.valuesPath == nil || !isHelmRelease(key) || rs == nil || !divided(rs) {
		return nil, 0, false, nil
	}
	path = append([]string{"spec", "values"}, pp.valuesPath...)
	field := "spec.values." + strings.Join(pp.valuesPath, ".")
	v, found, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	if !found {
		return nil, 0, false, fmt.Errorf("%s: %s is not set, and policy %s divides its replicas there (annotation %s); set the total in the release's values", key, field, pp.ref, ReplicasValuesPathAnnotation)
	}
	switch t := v.(type) {
	case int64:
		replicas = t
	case int:
		replicas = int64(t)
	case float64:
		if t != float64(int64(t)) {
			return nil, 0, false, fmt.Errorf("%s: %s is %v, not a whole number of replicas", key, field, t)
		}
		replicas = int64(t)
	default:
		return nil, 0, false, fmt.Errorf("%s: %s is %v (%T), not a number of replicas", key, field, v, v)
	}
	if replicas < 0 {
		return nil, 0, false, fmt.Errorf("%s: %s is %d, a negative number of replicas", key, field, replicas)
	}
	return path, replicas, true, nil
}

// dividedWithoutReplicas warns about HelmReleases a Divided policy places
// whole because the policy names no values path.
func dividedWithoutReplicas(p *Placement) []Warning {
	var out []Warning
	for _, op := range p.Objects {
		pp := op.policy
		if pp == nil || op.Replicas != nil || !isHelmRelease(op.Object) {
			continue
		}
		rs := pp.spec.Placement.ReplicaScheduling
		if rs == nil || !divided(rs) || pp.valuesPath != nil {
			continue
		}
		out = append(out, Warning{Code: WarnDividedWithoutReplicas, Policy: pp.ref, Object: op.Object, Path: "spec.placement.replicaScheduling",
			Message: fmt.Sprintf("policy %s divides replicas, but %s has no replica count, so every cluster gets the release's own; name the values path that holds it with the annotation %s (e.g. replicaCount)", pp.ref, op.Object, ReplicasValuesPathAnnotation)})
	}
	return out
}
