// Command helmfleet builds, plans, diffs and tests a Flux repository
// across a fleet of clusters, offline, with helmfleet's engine: Flux's
// Kustomization and HelmRelease semantics, Karmada's placement and
// overrides, and each member's Kubernetes version.
//
//	helmfleet build PATH --fleet fleet.yaml [--member NAME]
//	helmfleet plan PATH --fleet fleet.yaml [-o table|diff|json|markdown]
//	helmfleet diff BASE HEAD --fleet fleet.yaml [-o table|diff|json|markdown]
//	helmfleet test PATH --fleet fleet.yaml
//
// Install it with
//
//	go install github.com/helmfleet/helmfleet/cmd/helmfleet@latest
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/helmfleet/helmfleet/cmd/helmfleet/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
