// Package integration holds the integration suite: release/kube and the
// conformance suite against real kube-apiservers (a hub and two members)
// that internal/kubeharness starts once for the whole package.
//
// Build the binaries once (about 5 minutes cold), then run the suite:
//
//	.ci/kube-binaries.sh
//	HELMFLEET_INTEGRATION=1 go test ./internal/integration/
//
// Without the binaries the tests skip, unless HELMFLEET_INTEGRATION=1, in
// which case they fail.
package integration
