package memory

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// withStatus returns obj with the status its controller would have
// written, given the health the cluster's HealthFunc reports: the
// in-memory cluster has no controllers, so it plays their part at read
// time, in the shape kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status)
// reads. An object whose status a writer set is returned unchanged.
func withStatus(obj *unstructured.Unstructured, h Health) *unstructured.Unstructured {
	if _, ok := obj.Object["status"]; ok {
		return obj
	}
	gen := obj.GetGeneration()
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	ready := int64(0)
	if h.Ready {
		ready = replicas
	}
	var st map[string]any
	switch obj.GetKind() {
	case "Deployment":
		progressing := cond("Progressing", "True", "NewReplicaSetAvailable", "")
		if !h.Ready {
			progressing = cond("Progressing", "True", "ReplicaSetUpdated", h.Message)
		}
		if h.Failed {
			progressing = cond("Progressing", "False", "ProgressDeadlineExceeded", h.Message)
		}
		available := cond("Available", "True", "MinimumReplicasAvailable", "")
		if !h.Ready {
			available = cond("Available", "False", "MinimumReplicasUnavailable", h.Message)
		}
		st = map[string]any{
			"observedGeneration": gen, "replicas": replicas, "updatedReplicas": replicas,
			"readyReplicas": ready, "availableReplicas": ready,
			"conditions": []any{available, progressing},
		}
	case "ReplicaSet":
		st = map[string]any{"observedGeneration": gen, "replicas": replicas, "readyReplicas": ready, "availableReplicas": ready, "fullyLabeledReplicas": replicas}
	case "StatefulSet":
		st = map[string]any{
			"observedGeneration": gen, "replicas": replicas, "readyReplicas": ready, "currentReplicas": ready,
			"updatedReplicas": replicas, "availableReplicas": ready, "currentRevision": "r1", "updateRevision": "r1",
		}
	case "DaemonSet":
		st = map[string]any{
			"observedGeneration": gen, "desiredNumberScheduled": int64(1), "currentNumberScheduled": int64(1),
			"updatedNumberScheduled": int64(1), "numberAvailable": min(ready, 1), "numberReady": min(ready, 1),
		}
	case "Job":
		switch {
		case h.Failed:
			st = map[string]any{"failed": int64(1), "conditions": []any{cond("Failed", "True", "BackoffLimitExceeded", h.Message)}}
		case h.Ready:
			st = map[string]any{"succeeded": int64(1), "conditions": []any{cond("Complete", "True", "", "")}}
		default:
			st = map[string]any{"active": int64(1)}
		}
	case "Pod":
		switch {
		case h.Failed:
			st = map[string]any{"phase": "Failed", "message": h.Message}
		case h.Ready:
			st = map[string]any{"phase": "Running", "conditions": []any{cond("Ready", "True", "", "")}}
			if p, _, _ := unstructured.NestedString(obj.Object, "spec", "restartPolicy"); p == "Never" || p == "OnFailure" {
				st = map[string]any{"phase": "Succeeded"}
			}
		default:
			st = map[string]any{"phase": "Pending", "conditions": []any{cond("Ready", "False", "ContainersNotReady", h.Message)}}
		}
	case "CustomResourceDefinition":
		if h.Ready {
			st = map[string]any{"conditions": []any{cond("NamesAccepted", "True", "NoConflicts", ""), cond("Established", "True", "InitialNamesAccepted", "")}}
		} else {
			st = map[string]any{"conditions": []any{cond("Established", "False", "Installing", h.Message)}}
		}
	case "APIService":
		if h.Ready {
			st = map[string]any{"conditions": []any{cond("Available", "True", "Passed", "all checks passed")}}
		} else {
			st = map[string]any{"conditions": []any{cond("Available", "False", "FailedDiscoveryCheck", h.Message)}}
		}
	case "PersistentVolumeClaim":
		st = map[string]any{"phase": "Bound"}
		if !h.Ready {
			st = map[string]any{"phase": "Pending"}
		}
	case "Service":
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t == "LoadBalancer" && h.Ready {
			st = map[string]any{"loadBalancer": map[string]any{"ingress": []any{map[string]any{"ip": "192.0.2.10"}}}}
		} else if t == "LoadBalancer" {
			st = map[string]any{"loadBalancer": map[string]any{}}
		}
	default:
		switch {
		case h.Failed:
			st = map[string]any{"observedGeneration": gen, "conditions": []any{cond("Stalled", "True", "Failed", h.Message), cond("Ready", "False", "Failed", h.Message)}}
		case !h.Ready:
			st = map[string]any{"observedGeneration": gen, "conditions": []any{cond("Reconciling", "True", "Progressing", h.Message), cond("Ready", "False", "Progressing", h.Message)}}
		}
	}
	if st == nil {
		return obj
	}
	obj.Object["status"] = st
	return obj
}

func cond(typ, status, reason, message string) map[string]any {
	c := map[string]any{"type": typ, "status": status}
	if reason != "" {
		c["reason"] = reason
	}
	if message != "" {
		c["message"] = message
	}
	return c
}
