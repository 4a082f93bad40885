package release

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound is matched (errors.Is) by every error that reports an absent
// object or release, whatever the backend.
var ErrNotFound = errors.New("not found")

// NotFoundError says which object of which cluster is absent.
type NotFoundError struct {
	// Cluster is the cluster's name.
	Cluster string
	// Object is the absent object.
	Object ObjectRef
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("cluster %s: %s not found", e.Cluster, e.Object)
}

// Is makes errors.Is(err, ErrNotFound) true.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// FieldConflict is one field another manager owns.
type FieldConflict struct {
	// Manager owns the field now.
	Manager string
	// Path is the field, in the API server's notation (.spec.replicas).
	Path string
}

// ConflictError reports a server-side apply that would have taken fields
// another field manager owns.
type ConflictError struct {
	// Cluster is the cluster's name.
	Cluster string
	// Object is the object applied.
	Object ObjectRef
	// Conflicts lists the contested fields, sorted by path.
	Conflicts []FieldConflict
	// Err is the backend's own error.
	Err error
}

func (e *ConflictError) Error() string {
	parts := make([]string, 0, len(e.Conflicts))
	for _, c := range e.Conflicts {
		parts = append(parts, fmt.Sprintf("%s (owned by %q)", c.Path, c.Manager))
	}
	return fmt.Sprintf("cluster %s: apply %s: conflicts: %s", e.Cluster, e.Object, strings.Join(parts, ", "))
}

// Unwrap returns the backend's error.
func (e *ConflictError) Unwrap() error { return e.Err }

// ForbiddenError reports an RBAC denial with what was denied.
type ForbiddenError struct {
	// Cluster is the cluster's name.
	Cluster string
	// Verb is the denied verb (get, list, patch, delete, …).
	Verb string
	// Resource is the resource (group/resource) and, where known, namespace.
	Resource string
	// Err is the backend's own error.
	Err error
}

func (e *ForbiddenError) Error() string {
	return fmt.Sprintf("cluster %s: forbidden: cannot %s %s: %v", e.Cluster, e.Verb, e.Resource, e.Err)
}

// Unwrap returns the backend's error.
func (e *ForbiddenError) Unwrap() error { return e.Err }

// KubeVersionError reports a chart whose kubeVersion constraint the
// cluster's Kubernetes version does not satisfy.
type KubeVersionError struct {
	// Chart and Version name the chart.
	Chart, Version string
	// Constraint is the chart's kubeVersion.
	Constraint string
	// Cluster is the cluster's name and KubeVersion the version it runs.
	Cluster, KubeVersion string
}

func (e *KubeVersionError) Error() string {
	return fmt.Sprintf("chart %s %s requires kubeVersion %s, and cluster %s runs Kubernetes %s", e.Chart, e.Version, e.Constraint, e.Cluster, e.KubeVersion)
}
