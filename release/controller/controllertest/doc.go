// Package controllertest runs release/controller's reconcilers without an
// API server: a controller-runtime fake client with the controller's
// scheme, status subresources and every field index its watches use,
// metrics on a private registry, an event recorder to read back, and
// in-memory clusters (release/memory) as the release targets.
//
// NewEnv gives a one-cluster HelmReleaseReconciler, NewFleetEnv a
// FleetReconciler over in-memory members built with
// release/fleettest; a test then creates objects with Env.Client, calls
// Reconcile and reads statuses, as the manager's watches would make it
// happen.
package controllertest
