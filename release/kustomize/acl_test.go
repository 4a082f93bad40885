package kustomize_test

import (
	"context"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

// countingSources serves appTree for every sourceRef and counts reads.
type countingSources struct{ reads atomic.Int32 }

func (s *countingSources) FS(context.Context, *release.Kustomization) (fs.FS, string, error) {
	s.reads.Add(1)
	return appTree("a"), "main@sha1:1", nil
}

// TestNoCrossNamespaceRefs: with the option on, a Kustomization whose
// sourceRef or dependsOn names another namespace is refused before its
// source is read (Build, Plan, Reconcile), Ready False and Stalled with
// reason AccessDenied, and nothing is applied; references in its own
// namespace (unset or spelled out) still work; with the option off (the
// default, as in Flux) a cross-namespace reference works.
func TestNoCrossNamespaceRefs(t *testing.T) {
	source := func(ns string) func(*release.Kustomization) {
		return func(k *release.Kustomization) { k.Spec.SourceRef.Namespace = ns }
	}
	dependsOn := func(ns string) func(*release.Kustomization) {
		return func(k *release.Kustomization) {
			k.Spec.DependsOn = []release.DependencyReference{{Name: "infra"}, {Name: "db", Namespace: ns}}
		}
	}
	for _, tc := range []struct {
		name   string
		on     bool
		mutate func(*release.Kustomization)
		want   string // the refusal; "" when applied
	}{
		{"on: sourceRef in another namespace", true, source("tenant-b"),
			"Kustomization apps/app: spec.sourceRef.namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"},
		{"on: dependsOn in another namespace", true, dependsOn("tenant-b"),
			"Kustomization apps/app: spec.dependsOn[1].namespace: cross-namespace reference to tenant-b is not allowed (NoCrossNamespaceRefs)"},
		{"on: own namespace unset", true, dependsOn(""), ""},
		{"on: own namespace spelled out", true, func(k *release.Kustomization) { source("apps")(k); dependsOn("apps")(k) }, ""},
		{"off: sourceRef in another namespace", false, source("tenant-b"), ""},
		{"off: dependsOn in another namespace", false, dependsOn("tenant-b"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &countingSources{}
			r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) { cfg.NoCrossNamespaceRefs = tc.on })
			c := memory.New("dev")
			before := snapshot(c)
			k := ks("./app", tc.mutate)

			res, err := r.Reconcile(t.Context(), c, k)
			if tc.want == "" {
				require.NoError(t, err)
				assert.True(t, k.IsReady())
				assert.NotEmpty(t, res.Applied)
				return
			}
			require.EqualError(t, err, tc.want)
			var denied *release.AccessDeniedError
			require.ErrorAs(t, err, &denied)
			assert.Empty(t, res.Applied)
			assert.Equal(t, before, snapshot(c), "the cluster is untouched")
			rc := ready(t, k)
			assert.Equal(t, metav1.ConditionFalse, rc.Status)
			assert.Equal(t, release.ReasonAccessDenied, rc.Reason)
			assert.Equal(t, tc.want, rc.Message)
			stalled := k.Status.GetCondition(release.ConditionStalled)
			require.NotNil(t, stalled, "it will not fix itself: Stalled")
			assert.Equal(t, metav1.ConditionTrue, stalled.Status)
			assert.Equal(t, release.ReasonAccessDenied, stalled.Reason)

			_, err = r.Plan(t.Context(), c, k)
			require.ErrorAs(t, err, &denied, "Plan refuses alike")
			_, err = r.Build(t.Context(), k)
			require.ErrorAs(t, err, &denied, "Build refuses alike")
			assert.Zero(t, src.reads.Load(), "the source is never read")

			// The spec changes to its own namespace: no longer stalled.
			k.Spec.SourceRef.Namespace, k.Spec.DependsOn = "apps", nil
			_, err = r.Reconcile(t.Context(), c, k)
			require.NoError(t, err)
			assert.True(t, k.IsReady())
			assert.Nil(t, k.Status.GetCondition(release.ConditionStalled))
		})
	}
}
