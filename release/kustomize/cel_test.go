package kustomize_test

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

// widgetTree is a Widget whose controller reports only status.phase, no
// conditions: kstatus takes it as Current whatever the phase, only CEL
// can judge it.
func widgetTree(phase string) fstest.MapFS {
	return fstest.MapFS{
		"app/kustomization.yaml": file("resources: [ns.yaml, crd.yaml, widget.yaml]\n"),
		"app/ns.yaml":            file("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: apps\n"),
		"app/crd.yaml":           file(crd),
		"app/widget.yaml": file("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n  namespace: apps\nspec:\n  size: 1\n" +
			"status:\n  phase: " + phase + "\n"),
	}
}

// TestReconcileHealthCheckExprs: with spec.wait, a custom resource is
// judged by the spec.healthCheckExprs of its group (kind left out, as
// Flux 2.9 allows): Current, InProgress until the timeout, or Failed at
// once, each saying which expression decided.
func TestReconcileHealthCheckExprs(t *testing.T) {
	for _, tc := range []struct {
		name, phase, status, message string
	}{
		{name: "ready", phase: "Ready"},
		{name: "in progress until the timeout", phase: "Pending", status: "InProgress", message: "spec.healthCheckExprs[0].current is not true yet"},
		{name: "failed", phase: "Broken", status: "Failed", message: "spec.healthCheckExprs[0].failed is true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &changingTree{}
			src.set("1", widgetTree(tc.phase))
			r := newReconciler(t, src)
			k := ks("./app", func(k *release.Kustomization) {
				k.Spec.Wait = true
				k.Spec.Timeout = &metav1.Duration{Duration: 300 * time.Millisecond}
				k.Spec.HealthCheckExprs = []release.CustomHealthCheck{{APIVersion: "example.com/v1", HealthCheckExpressions: release.HealthCheckExpressions{
					Current:    "status.phase == 'Ready'",
					InProgress: "has(status.phase) && status.phase == 'Starting'",
					Failed:     "status.phase == 'Broken'",
				}}}
			})
			_, err := r.Reconcile(t.Context(), memory.New("dev"), k)
			if tc.status == "" {
				require.NoError(t, err)
				assert.True(t, k.IsReady())
				assert.True(t, k.Status.IsConditionTrue(release.ConditionHealthy))
				return
			}
			var he *kustomize.HealthError
			require.ErrorAs(t, err, &he)
			require.Len(t, he.Objects, 1, "%v", err)
			assert.Equal(t, "w", he.Objects[0].Object.Name)
			assert.Equal(t, tc.status, he.Objects[0].Status)
			assert.Equal(t, tc.message, he.Objects[0].Message)
			rc := ready(t, k)
			assert.Equal(t, metav1.ConditionFalse, rc.Status)
			assert.Equal(t, release.ReasonHealthCheckFailed, rc.Reason)
			assert.Contains(t, rc.Message, "Widget apps/w: "+tc.status+" "+tc.message)
		})
	}
}

// TestReconcileHealthCheckExprsLeaveJobs: kustomize-controller's Job
// status reader comes before its CEL one, so a check for batch Jobs is
// never used: the Job is judged by kstatus (complete), not by the
// expression that never holds.
func TestReconcileHealthCheckExprsLeaveJobs(t *testing.T) {
	src := &changingTree{}
	src.set("1", fstest.MapFS{
		"app/kustomization.yaml": file("resources: [job.yaml]\n"),
		"app/job.yaml": file("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  namespace: apps\nspec:\n  template:\n    spec:\n" +
			"      restartPolicy: Never\n      containers:\n      - name: m\n        image: busybox\n"),
	})
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.Wait = true
		k.Spec.Timeout = &metav1.Duration{Duration: 300 * time.Millisecond}
		k.Spec.HealthCheckExprs = []release.CustomHealthCheck{{APIVersion: "batch/v1", Kind: "Job", HealthCheckExpressions: release.HealthCheckExpressions{Current: "false"}}}
	})
	_, err := r.Reconcile(t.Context(), memory.New("dev"), k)
	require.NoError(t, err)
	assert.True(t, k.Status.IsConditionTrue(release.ConditionHealthy))
}

// TestReadyExprIsNotWarned: a Kustomization's dependsOn[].readyExpr is
// evaluated where dependencies are ordered (release/fleet), so neither
// the Result nor the Plan warns of it any more.
func TestReadyExprIsNotWarned(t *testing.T) {
	src := &changingTree{}
	src.set("1", widgetTree("Ready"))
	r := newReconciler(t, src)
	k := ks("./app", func(k *release.Kustomization) {
		k.Spec.DependsOn = []release.DependencyReference{{Name: "infra", ReadyExpr: "dep.status.observedGeneration == dep.metadata.generation"}}
	})
	c := memory.New("dev")
	p, err := r.Plan(t.Context(), c, k)
	require.NoError(t, err)
	res, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	for _, w := range append(p.Warnings, res.Warnings...) {
		assert.NotContains(t, w, "readyExpr")
	}
}
