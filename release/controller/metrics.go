package controller

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/reconcile"
)

// Metric names. The condition gauge follows Flux's gotk_reconcile_condition:
// one series per release, condition type and status, 1 for the status the
// condition has and 0 for the others.
const (
	MetricReconcileDuration = "helmfleet_reconcile_duration_seconds"
	MetricCondition         = "helmfleet_reconcile_condition"
	MetricActions           = "helmfleet_release_actions_total"
)

// conditionStatuses are the values the condition gauge has a series for.
var conditionStatuses = []string{string(metav1.ConditionTrue), string(metav1.ConditionFalse), string(metav1.ConditionUnknown)}

// Metrics are the controller's Prometheus collectors. Register them once
// per registry with NewMetrics; reconcilers of one process share them.
type Metrics struct {
	duration  *prometheus.HistogramVec
	condition *prometheus.GaugeVec
	actions   *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg
// (controller-runtime's metrics.Registry in a manager, which serves them
// on the manager's metrics endpoint). Collectors already registered there
// by an earlier call are reused, so two reconcilers in one process share
// them. A nil reg registers nothing (tests, examples).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    MetricReconcileDuration,
			Help:    "Duration of one reconcile of an object, by kind.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"kind"}),
		condition: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: MetricCondition,
			Help: "Condition of a release: 1 for the status the condition has, 0 for the others.",
		}, []string{"kind", "namespace", "name", "type", "status"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: MetricActions,
			Help: "Helm actions run, by cluster (or fleet member) and action.",
		}, []string{"cluster", "action"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	m.duration = register(reg, m.duration, &err)
	m.condition = register(reg, m.condition, &err)
	m.actions = register(reg, m.actions, &err)
	return m, err
}

// register registers c with reg, or returns the collector registered
// before it under the same name.
func register[C prometheus.Collector](reg prometheus.Registerer, c C, errp *error) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		*errp = errors.Join(*errp, err)
	}
	return c
}

// observe records one reconcile of kind that took d.
func (m *Metrics) observe(kind string, d time.Duration) {
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
}

// recordConditions sets the condition gauge of a release from its status.
func (m *Metrics) recordConditions(kind, namespace, name string, st *release.Status) {
	m.deleted(kind, namespace, name) // conditions removed from the status go too
	for _, c := range st.Conditions {
		for _, s := range conditionStatuses {
			v := 0.0
			if s == string(c.Status) {
				v = 1
			}
			m.condition.WithLabelValues(kind, namespace, name, c.Type, s).Set(v)
		}
	}
}

// deleted drops every condition series of a deleted release, so no
// stale series outlives it.
func (m *Metrics) deleted(kind, namespace, name string) {
	m.condition.DeletePartialMatch(prometheus.Labels{"kind": kind, "namespace": namespace, "name": name})
}

// countActions counts the actions run on cluster.
func (m *Metrics) countActions(cluster string, actions []reconcile.Action) {
	for _, a := range actions {
		m.actions.WithLabelValues(cluster, string(a)).Inc()
	}
}
