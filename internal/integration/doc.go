// Package integration holds the integration suite: release/kube and the
// conformance suite against real kube-apiservers (a hub and two members)
// that internal/kubeharness starts once for the whole package; and the
// community charts of internal/testcharts (podinfo, prometheus-node-exporter,
// kube-state-metrics, ingress-nginx, kube-prometheus-stack) through the fleet, one Helm release per member
// (charts_test.go), and through the Distributor, rendered once on the hub
// (charts_rendered_test.go), each compared with Helm's own rendering for the
// member's real capabilities. The apiservers run no controller-manager or
// kubelet: those tests install with disableWait and complete hook Jobs
// themselves.
//
// Build the binaries once (about 5 minutes cold), then run the suite:
//
//	.ci/kube-binaries.sh
//	HELMFLEET_INTEGRATION=1 go test ./internal/integration/
//
// Without the binaries the tests skip, unless HELMFLEET_INTEGRATION=1, in
// which case they fail.
package integration
