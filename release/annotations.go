package release

// Annotations a caller (or a user with kubectl, as `flux reconcile hr
// --reset` / `--force` do) sets on a Release to ask for a reset of the
// failure counters or a forced upgrade. As in Flux, a reset or force
// request is a token that counts only when it equals the value of
// ReconcileRequestAnnotation, and each is handled once per distinct value.
const (
	// ReconcileRequestAnnotation asks for a reconcile; its value is the
	// token that a reset or force request must repeat.
	ReconcileRequestAnnotation = "reconcile.fluxcd.io/requestedAt"
	// ResetRequestAnnotation clears failure counters and a Stalled state.
	ResetRequestAnnotation = "reconcile.fluxcd.io/resetAt"
	// ForceRequestAnnotation forces one upgrade even when in sync or out
	// of retries.
	ForceRequestAnnotation = "reconcile.fluxcd.io/forceAt"
)
