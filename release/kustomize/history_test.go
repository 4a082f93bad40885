package kustomize_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/kustomize"
	"github.com/helmfleet/helmfleet/release/memory"
)

// .status.history (Flux 2.9) records each reconcile of a set of objects:
// the same objects count again, a new revision with other objects is a
// new snapshot at the front, with its revision and how long it took.
func TestReconcileRecordsHistory(t *testing.T) {
	src := &changingTree{}
	src.set("main@sha1:1", appTree("a"))
	c := memory.New("dev")
	now := time.Unix(1_800_000_000, 0)
	r := newReconciler(t, src, func(cfg *kustomize.ReconcilerConfig) {
		cfg.Now = func() time.Time { now = now.Add(time.Second); return now }
	})
	k := ks("./app", func(k *release.Kustomization) { k.Spec.Prune = true })

	_, err := r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	_, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	require.Len(t, k.Status.History, 1, "the same objects, reconciled twice")
	first := k.Status.History[0]
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, first.Digest)
	assert.Equal(t, int64(2), first.TotalReconciliations)
	assert.Equal(t, release.ReasonReconciliationSucceeded, first.LastReconciledStatus)
	assert.Equal(t, map[string]string{"revision": "main@sha1:1"}, first.Metadata)
	assert.Positive(t, first.LastReconciledDuration.Duration)
	assert.True(t, first.LastReconciled.After(first.FirstReconciled.Time))

	src.set("main@sha1:2", appTree("a", "b"))
	_, err = r.Reconcile(t.Context(), c, k)
	require.NoError(t, err)
	require.Len(t, k.Status.History, 2)
	assert.Equal(t, "main@sha1:2", k.Status.History[0].Metadata["revision"], "newest first")
	assert.NotEqual(t, first.Digest, k.Status.History[0].Digest)
	assert.Equal(t, first.Digest, k.Status.History[1].Digest)
}
