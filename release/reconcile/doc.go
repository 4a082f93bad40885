// Package reconcile runs one Helm release on one cluster: Flux's
// helm-controller state machine over the cluster roles of package release,
// with its offline Plan. Package release holds the types it reads and
// writes (Release, Status, the conditions); this package holds the engine.
//
// # Reconciling one release
//
// A Reconciler (New) takes charts from a ChartGetter (Charts
// adapts package source's resolvers) and valuesFrom objects from a
// values.Reader. Reconcile runs Flux's state machine, each action type at
// most once, stopping after a remediation: Absent → install; Locked
// (pending-*) → unlock; Unmanaged → upgrade; OutOfSync (chart, values,
// post-renderers, common metadata) → upgrade; Untested → test; Failed →
// remediate by rollback or uninstall while retries remain (RetryOnFailure
// upgrades again after its interval); Uninstalling (an uninstall that did
// not complete) → stalled once retries are used up, else uninstall again,
// once; Drifted → correct or report; InSync → nothing. Drift is detected
// as helm-controller v1.6.3 configures its Diff: objects carry Helm's
// ownership metadata, the field managers of Config.OverrideManagers (its
// --override-manager, empty by default) are overridden, and the diff is
// rationalized (a map whose every key changed is one replace of it;
// drift.Options.Rationalize). It records Flux's conditions, history
// snapshots and failure counters in the release.Release's status, and the
// Result says what was done and what to do next (Next: done, requeue,
// stalled); the caller owns scheduling. Waits judge the release's objects with kstatus and observe
// the context, so a cancelled reconcile returns promptly with nothing left
// pending. A failed upgrade configured to remediate by uninstall
// (upgrade.remediation.strategy: uninstall) is uninstalled, as Flux does,
// even when the previous revision was deployed and healthy: the user chose
// it, usually because the chart cannot roll back. helmfleet says so
// loudly instead: Plan.Warnings (before the upgrade) and Result.Warnings
// (when it decides the upgrade or the remediation) hold "release
// <namespace>/<name>: remediation would uninstall revision N, which is
// deployed and healthy (…)". Plan computes what Reconcile would do, with
// the rendered objects and a diff, without writing anything. What the
// chart's source accepted with a warning (an index entry without a digest,
// under the HelmRepository's opt-in) is in Plan.Warnings, Result.Warnings
// and the status's SourceWarnings condition.
//
// Where this package differs from Flux's helm-controller is listed, with
// the library's other differences, in the README's table "How helmfleet
// differs from Flux and Karmada".
//
// A chart whose source asks for signature verification (chart.spec.verify,
// or the spec.verify of the OCIRepository or HelmChart of chartRef) is
// installed only once it verifies (package source, "Signature
// verification"): the Release's SourceVerified condition, Flux's type, is
// True naming the version, digest and signer, or False with the refusal,
// and then nothing is installed and Ready is False (ArtifactFailed);
// Plan.Verified names the signer. Keyless cosign is verified against the
// trusted root of spec.verify.trustedRootSecretRef (offline: Sigstore's
// public-good root needs TUF, so keyless without it is refused).
// release.Validate refuses the verify modes the resolvers cannot check
// (notation), rather than accepting them unchecked.
//
// # Panics of the caller's code
//
// The Reconciler's ChartGetter and values reader run through
// release.Contain: a panic fails the reconcile at its stage
// (ArtifactFailed, ValuesError) as a *release.CallbackPanicError. Helm
// calls its kube client on goroutines of its own, where a panic cannot be
// recovered by the caller: the Reconciler runs every call of a cluster's
// Helm kube client, and the object reads of its waits, through Contain,
// so a panic there fails the Helm action, which records the release as
// failed, and it hands Helm a result on every path, failed and cancelled
// ones included. The packages built on this one do the same for their
// callbacks (distribute.Config.OnWarning, fleet.Config.Events,
// fleet.Rollout.Gate, kube.Config.Log, memory's HealthFunc and Fault) and
// say in each callback's documentation where its panic is reported; where
// they work on a member on a goroutine of their own, a panic of that
// member's backend fails that member's part.
//
// # Fidelity to Flux
//
// The state machine follows Flux helm-controller v1.6.3, checked by that
// project's own test data, ported into the package's tests: the state and
// action tables, the atomic-release scenarios and the suites of each
// action. As in Flux, an install starts a new history, a failure counts
// against the retries only when it wrote a release record, Ready is
// composed from Remediated, TestSuccess and Released (SummarizeReady), and
// a stall keeps Ready's failure reason beside Stalled. Documented
// differences: a reconcile in which an action failed returns that failure as its error even when a
// remediation followed, where Flux returns none after a remediation; and a
// snapshot's digest leaves out what Helm changes over a revision's life
// (its status when superseded, its hooks' last run), so a rollback target
// stays verifiable, where Flux's digest covers the status. Because the
// digests differ, helmfleet marks its snapshots apiVersion helmfleet.io/v1
// (release.SnapshotAPIVersion) and checks the digest of those alone; a
// snapshot of any other format (Flux's apiVersion v2, or Flux's legacy
// snapshots with none, from a HelmRelease moved to helmfleet) is matched by
// name, namespace and revision alone, as Flux treats its legacy snapshots,
// rather than counted as a release someone else changed.
//
// Uninstall checks ownership as Flux does: it removes a Helm release only
// when the status history's latest snapshot is Helm's latest record of
// it, and otherwise refuses with an *OwnershipError (ErrNoLatest,
// ErrReleaseMismatch), so deleting a Release never removes a Helm release
// someone else installed under the same name. Unlike Flux, which runs
// Helm's uninstall and then reports the mismatch, it checks before
// removing anything.
//
// # Chart versions with Flux's build metadata
//
// Flux's HelmChart gives a chart it builds with valuesFiles its
// generation as build metadata (chart version 1.2.3+4); helmfleet keeps
// the repository's version (1.2.3). A release Flux installed so, taken
// over by helmfleet with a spec that resolves 1.2.3, is the same chart
// version: InSync, not upgraded. Only that case ignores build metadata:
// the deployed version is the wanted one with "+<meta>" added; any other
// difference (1.2.3+4 wanted as 1.2.3+5) is a change, as in Flux.
// Alerts keyed on the "+N" suffix keep seeing it until the next upgrade
// (a new chart version or values), which records the repository's
// version, without the suffix.
//
// # Secret values in errors and plans
//
// A release whose composed values hold data read from a Secret (through
// spec.valuesFrom; values.Result knows which leaves), or whose
// spec.valuesFrom names a Secret, gets no error text from Helm in any
// output. Helm's messages quote values in any form a chart gives them: a
// fail or required message, %q, quote, toJson, upper, b64enc, the text
// of a broken tpl fragment, a YAML parser's "unknown anchor" naming a
// value that starts with '*', an API server refusing a rendered object,
// a readiness wait quoting an object's conditions. So every error Helm
// returns for such a release (render, install, upgrade, test, rollback,
// uninstall, drift detection and correction, health, including
// post-renderer and hook failures) is replaced where it leaves Helm, before
// anything wraps or formats it, by a *release.WithheldError (errors.Is
// release.ErrWithheld) that names the HelmRelease, the step, the chart and
// version and, when Helm's message begins with a template location
// ("template: NAME:LINE:COL:", "execution error at (NAME:LINE:COL)",
// "parse error at (NAME:LINE)", "YAML parse error on NAME"), the template
// file and line; only that location prefix is read, and only a file of
// the chart is accepted. A withheld readiness wait says it was one. For
// example:
//
//	release apps/app on cluster dev-1: helm install failed: HelmRelease apps/app:
//	install failed at chart app 1.2.0, template app/templates/secret.yaml line 12:
//	the error text is withheld because it may contain Secret values
//
// That is what the Reconcile and Plan errors, the Released, Ready,
// TestSuccess, Remediated, Drifted and Stalled conditions, and every layer
// above (fleet plans, reports and events; controller events and logs)
// show. Nothing filters the text: it is never kept (release.WithheldError keeps
// only whether the cause was a cancellation or a deadline, for
// errors.Is). Releases without Secret-derived values keep Helm's full
// text, for debugging.
//
// Errors of helmfleet's own pass unchanged, because their text is fixed
// or made of names from the spec and the cluster, never of values: the
// chart, values and post-renderer stage errors (*StageError; package
// values withholds Secret text itself), *StalledError, the cancellation
// of a reconcile, Helm storage errors (release records are read whole,
// never quoted), the configuration and kubeVersion checks, and drift
// detection's ignore rules (spec.driftDetection).
//
// Plans and results show no Secret data either. Plan's
// MarshalJSON, String and Format (every fmt verb) show its objects
// masked (MaskedObjects): the data and stringData of every Secret the
// chart renders, whatever the values it was given, replaced by digests,
// and every value that came from a Secret, with its upper-case, quoted
// and base64 forms, replaced by "(secret sha256:<12 hex>)" wherever it
// was rendered; Diff is masked the same way. Result shows Helm's release
// record by name, revision, status and chart only. The objects applied
// (Plan.Objects, the cluster's) keep the real values.
//
// Inline values count as a Secret's where the HelmRelease's
// release.SecretFieldsAnnotation says so (a Kustomization sets it on the
// HelmReleases whose spec.values it substituted from a Secret): they are
// masked in the plan, its diff, the values' provenance and every
// encoding of the values and of the Release in a plan, and Helm's errors
// for that release are withheld. The annotation only adds marking:
// removing or garbling it never unmarks a valuesFrom Secret's values,
// and a value that does not read as a list of pointers marks all of
// spec.values.
//
// To debug a withheld error, render the chart where the Secret may be
// read: helm template with the same values, or Plan on a Reconciler made
// with Config.InsecureHelmErrorText, an explicit opt-out that is
// off by default and insecure: with it, Helm's text, Secret values
// included, reaches every output of that Reconciler.
//
// # Steps of a rollout
//
// Reconciler.Health, RollbackToPrevious and Drift are the per-release
// steps a rollout and a fleet-wide drift check (package release/fleet)
// are made of.
package reconcile
