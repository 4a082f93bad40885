package fleettest

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release/memory"
)

// ImageNeverReady is a health script under which a workload (Deployment,
// StatefulSet, DaemonSet, ReplicaSet, Job or Pod) that runs image in any
// of its containers never becomes ready, as with a crash-looping image;
// everything else is ready at once. An image with no tag or digest
// matches every tag of that repository.
func ImageNeverReady(image string) memory.HealthFunc {
	return func(u *unstructured.Unstructured) memory.Health {
		for _, got := range images(u) {
			if got == image || (!strings.ContainsAny(image, ":@") && (strings.HasPrefix(got, image+":") || strings.HasPrefix(got, image+"@"))) {
				return memory.Health{Message: "container image " + got + ": crash loop back-off"}
			}
		}
		return memory.Health{Ready: true}
	}
}

// ChartNeverReady is a health script under which the workloads of one
// chart version (labelled helm.sh/chart=<name>-<version>, as charts made
// by `helm create` label them) never become ready; everything else is
// ready at once.
func ChartNeverReady(name, version string) memory.HealthFunc {
	label := name + "-" + version
	return func(u *unstructured.Unstructured) memory.Health {
		if u.GetLabels()["helm.sh/chart"] == label && images(u) != nil {
			return memory.Health{Message: "chart " + label + ": crash loop back-off"}
		}
		return memory.Health{Ready: true}
	}
}

// images returns the images of a workload's containers, nil for an object
// that runs none.
func images(u *unstructured.Unstructured) []string {
	var spec []string
	switch u.GetKind() {
	case "Pod":
		spec = []string{"spec"}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job":
		spec = []string{"spec", "template", "spec"}
	default:
		return nil
	}
	var out []string
	for _, field := range []string{"initContainers", "containers"} {
		cs, _, _ := unstructured.NestedSlice(u.Object, append(spec, field)...)
		for _, c := range cs {
			if m, ok := c.(map[string]any); ok {
				if img, ok := m["image"].(string); ok {
					out = append(out, img)
				}
			}
		}
	}
	if out == nil {
		out = []string{}
	}
	return out
}
