package release

import (
	"context"
	"github.com/helmfleet/helmfleet/drift"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"time"
)

// ContextWaiter is an optional role of a Helm kube client that waits for
// readiness itself, with a context: a client that spreads objects over
// member clusters waits on every member's copy. The reconciler's waits
// defer to it when the cluster's kube client has it.
type ContextWaiter interface {
	WaitContext(ctx context.Context, resources kube.ResourceList, timeout time.Duration, jobs bool) error
}

// CapabilitiesReader is the role of a cluster that says which Kubernetes
// version it runs and which API versions it serves: what Helm shows
// templates as .Capabilities and checks a chart's kubeVersion against.
// Every render the library does itself (reconcile.Reconciler.Plan, and the Distributor's
// render-once) asks it first, so a plan renders a chart as an install on
// that cluster would. release/memory answers from its own schema,
// release/kube from discovery (cached, refreshed when a CRD is added).
//
// The result must be a value the caller may keep and modify.
type CapabilitiesReader interface {
	Capabilities(ctx context.Context) (*chartutil.Capabilities, error)
}

// DriftDetector is an optional role of a cluster that knows better than a
// plain comparison of the manifest with its objects what drift is: a
// cluster that spreads a release's objects over member clusters compares
// each member's copy with what that member should hold. The reconciler
// uses it when the cluster has it.
type DriftDetector interface {
	// DetectDrift compares the objects of manifest, the manifest of the
	// Helm release scope names (scope.HelmReleaseName, its objects'
	// namespace scope.Namespace, its records in scope.StorageNamespace),
	// with what runs, under rules. A scope without HelmReleaseName leaves
	// the detector to find the release from the manifest alone, which it
	// may refuse.
	DetectDrift(ctx context.Context, scope HelmScope, manifest string, rules []drift.IgnoreRule, mode drift.Mode) (*drift.Report, error)
	// CorrectDrift applies the corrections of a report DetectDrift made.
	CorrectDrift(ctx context.Context, report *drift.Report, fieldManager string) error
}

// Patcher is the optional role a cluster needs for drift correction:
// applying an RFC 6902 JSON patch to one live object. Both shipped
// backends implement it.
type Patcher interface {
	Patch(ctx context.Context, ref ObjectRef, jsonPatch []byte, opts PatchOptions) (*unstructured.Unstructured, error)
}

// PatchOptions tune one patch.
type PatchOptions struct {
	// FieldManager owns the patched fields.
	FieldManager string
}
