package policy

import "fmt"

// AddOption sets how Set.Add takes a policy.
type AddOption func(*addOptions)

type addOptions struct {
	namespace string // "" = leave namespaces as they are
	enforce   bool
}

// WithDefaultNamespace gives a PropagationPolicy or OverridePolicy without
// metadata.namespace the namespace ns, as kubectl does with the namespace
// of its context. Cluster-scoped policies get none. An empty ns changes
// nothing.
func WithDefaultNamespace(ns string) AddOption {
	return func(o *addOptions) { o.namespace, o.enforce = ns, false }
}

// WithEnforceNamespace is WithDefaultNamespace, and a PropagationPolicy or
// OverridePolicy in another namespace is refused with a *ValidationError
// at metadata.namespace, as kubectl refuses with an explicit --namespace.
func WithEnforceNamespace(ns string) AddOption {
	return func(o *addOptions) { o.namespace, o.enforce = ns, ns != "" }
}

// NamespaceMismatchReason is the reason given when an object's namespace
// is not the one the caller enforces; wanted is that namespace.
func NamespaceMismatchReason(wanted string) string {
	return fmt.Sprintf("does not match the namespace %q the caller enforces (kubectl's --namespace); remove it or use that namespace", wanted)
}

// namespaceOf fills or checks the namespace *ns of a namespaced policy.
func (o *addOptions) namespaceOf(ref Ref, ns *string) error {
	switch {
	case o.namespace == "":
	case *ns == "":
		*ns = o.namespace
	case o.enforce && *ns != o.namespace:
		return &ValidationError{Policy: ref, Problems: []*FieldError{{Policy: ref, Path: "metadata.namespace", Value: *ns, Reason: NamespaceMismatchReason(o.namespace)}}}
	}
	return nil
}
