package controller

import (
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/helmfleet/helmfleet/release"
)

func updateEvent(old, new *release.Release) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: old, ObjectNew: new}
}

func genericEvent(rel *release.Release) event.GenericEvent {
	return event.GenericEvent{Object: rel}
}
