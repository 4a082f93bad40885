package release_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/release"
)

// TestDriftHelmOwnershipMetadata follows helm-controller v1.6.3
// (internal/action/diff.go setHelmMetadata, tested by TestDiff "configures
// Helm metadata"): the objects of a release carry Helm's ownership label
// and annotations, and a live object that lost them has drifted; the
// correction puts them back.
func TestDriftHelmOwnershipMetadata(t *testing.T) {
	ctx := context.Background()
	c := newHealthyCluster(&health{})
	rec := fixture.Reconciler(t, nil)
	rel := fixture.Release()
	rel.Spec.DriftDetection = &release.DriftDetection{Mode: release.DriftDetectionEnabled}
	_, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)

	ref := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: "apps", Name: "podinfo"}
	cm, err := c.Get(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, "Helm", cm.GetLabels()["app.kubernetes.io/managed-by"], "Helm labels what it creates")
	wantName := cm.GetAnnotations()["meta.helm.sh/release-name"]
	require.NotEmpty(t, wantName)

	// Someone strips the ownership metadata.
	unstructured.RemoveNestedField(cm.Object, "metadata", "labels", "app.kubernetes.io/managed-by")
	unstructured.RemoveNestedField(cm.Object, "metadata", "annotations", "meta.helm.sh/release-name")
	_, err = c.Update(ctx, cm, "kubectl-edit")
	require.NoError(t, err)

	res, err := rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Equal(t, []release.Action{release.ActionCorrectDrift}, res.Actions)
	require.NotNil(t, res.Drift)
	assert.Equal(t, 1, res.Drift.Count("Modified"))
	cm, err = c.Get(ctx, ref)
	require.NoError(t, err)
	assert.Equal(t, "Helm", cm.GetLabels()["app.kubernetes.io/managed-by"], "corrected")
	assert.Equal(t, wantName, cm.GetAnnotations()["meta.helm.sh/release-name"], "corrected")

	// An edit by a field manager that Flux does not override by default
	// (kubectl), adding a key the chart does not set, is not drift.
	cm.Object["data"].(map[string]any)["extra"] = "x"
	_, err = c.Update(ctx, cm, "kubectl")
	require.NoError(t, err)
	res, err = rec.Reconcile(ctx, c, rel)
	require.NoError(t, err)
	assert.Empty(t, res.Actions)
}
