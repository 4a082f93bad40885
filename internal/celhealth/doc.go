// Package celhealth judges the health of Kubernetes objects with CEL, as
// Flux does for spec.healthCheckExprs (Kustomization, HelmRelease) and
// spec.dependsOn[].readyExpr.
//
// A health check names an apiVersion and, optionally, a kind, and holds
// up to three boolean expressions: current (required), inProgress and
// failed. They are parsed, not type-checked, so that they can read any
// top-level field of the object (apiVersion, kind, metadata, spec,
// status, data, …) as a variable. An object is judged thus:
//
//  1. when status.observedGeneration and metadata.generation are both
//     integers and differ, it is InProgress;
//  2. else the first of inProgress, failed, current that is true gives
//     InProgress, Failed or Current;
//  3. else it is InProgress.
//
// An expression that fails to evaluate (a missing field, a result that
// is not a boolean) makes the judgement an error; kstatus callers count
// that as Unknown and keep waiting.
//
// A [Set] matches objects by group and kind, the version being ignored:
// a check with a kind applies to that kind of its group, one without a
// kind to every kind of its group that no check names; two checks for
// the same group and kind are refused. An object no check matches is
// left to the caller's default (kstatus).
//
// A readyExpr is compiled and type-checked with two variables, self
// (the dependent) and dep (the dependency), and must yield a boolean.
//
// Expressions come from tenants: every evaluation is bounded by a cost
// limit and is interrupted when its context is done.
package celhealth
