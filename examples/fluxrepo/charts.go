package main

import (
	"embed"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/helmfleet/helmfleet/release/fleettest"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

//go:embed all:charts
var chartFiles embed.FS

// charts serves the versions the example's chart repositories offer,
// what a HelmRepository's index.yaml would list, choosing among them as
// Flux's source-controller does ("1.15.x" is the newest 1.15 release,
// ">=1.16.0-0" admits pre-releases): cert-manager is a small stand-in
// kept in charts/, podinfo release/fleettest's small chart. A real
// program resolves charts with package source instead.
func charts() reconcile.ChartGetter {
	var all []*chart.Chart
	for _, v := range []string{"1.14.5", "1.15.3", "1.16.0-beta.1"} {
		ch, err := fleettest.LoadDir(chartFiles, "charts/cert-manager", v)
		if err != nil {
			panic(err) // the embedded chart loads
		}
		ch.Metadata.AppVersion = "v" + v // as cert-manager tags its images
		all = append(all, ch)
	}
	for _, v := range []string{"6.5.0", "6.5.1", "6.6.0-rc.1"} {
		all = append(all, fleettest.Podinfo(v))
	}
	return fleettest.NewCharts(all...)
}
