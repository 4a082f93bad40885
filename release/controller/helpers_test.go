package controller

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/helmfleet/helmfleet/release"
)

func updateEvent(old, new *release.Release) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: old, ObjectNew: new}
}

func genericEvent(rel *release.Release) event.GenericEvent {
	return event.GenericEvent{Object: rel}
}

// podinfoInterval is spec.interval of podinfoYAML.
const podinfoInterval = 10 * time.Minute

func testutilCounter(t *testing.T, m *Metrics, cluster, action string) float64 {
	t.Helper()
	return testutil.ToFloat64(m.actions.WithLabelValues(cluster, action))
}
