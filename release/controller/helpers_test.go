package controller

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func updateEvent(old, new *unstructured.Unstructured) event.UpdateEvent {
	return event.UpdateEvent{ObjectOld: old, ObjectNew: new}
}

func genericEvent(u *unstructured.Unstructured) event.GenericEvent {
	return event.GenericEvent{Object: u}
}
