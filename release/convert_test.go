package release

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestConvertV2Beta1(t *testing.T) {
	objs, err := decodeFile(t, "betas.yaml")
	require.NoError(t, err)
	require.Len(t, objs.Releases, 2)
	r := objs.Releases[0]

	assert.Equal(t, metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind}, r.TypeMeta)
	assert.Equal(t, "legacy", r.Name)
	assert.Equal(t, []string{"values-base.yaml", "values-prod.yaml"}, r.Spec.Chart.Spec.ValuesFiles,
		"valuesFile is merged first")
	assert.Equal(t, "6.5.x", r.Spec.Chart.Spec.Version)

	require.Len(t, r.Spec.PostRenderers, 1)
	k := r.Spec.PostRenderers[0].Kustomize
	require.Len(t, k.Patches, 3, "strategic merge, patches, JSON 6902: kustomize's order")
	assert.Equal(t, Patch{Patch: `apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  replicas: 3
`}, k.Patches[0])
	assert.Equal(t, "- op: remove\n  path: /spec/template/spec/securityContext\n", k.Patches[1].Patch)
	assert.Equal(t, &Selector{Kind: "Deployment"}, k.Patches[1].Target)
	assert.Equal(t, Patch{
		Patch:  "- op: add\n  path: /metadata/labels/tier\n  value: web\n",
		Target: &Selector{Version: "v1", Kind: "Service", Name: "podinfo"},
	}, k.Patches[2])
	assert.Equal(t, []Image{{Name: "podinfo", NewTag: "6.5.4"}}, k.Images)

	assert.Equal(t, Status{
		ObservedGeneration:          2,
		LastHandledReconcileAt:      "2026-12-01T10:00:00Z",
		LastAttemptedRevision:       "6.5.4",
		LastAttemptedValuesChecksum: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		LastReleaseRevision:         4,
		HelmChart:                   "apps/apps-legacy",
		Failures:                    1,
		UpgradeFailures:             1,
		StorageNamespace:            "apps",
		Conditions: []metav1.Condition{{
			Type: "Ready", Status: "False", Reason: "UpgradeFailed", Message: "upgrade failed",
			LastTransitionTime: metav1.NewTime(time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC).Local()),
		}},
	}, r.Status, "lastAppliedRevision has no v2 field and is dropped")

	r.Default()
	require.NoError(t, r.Validate(), "the converted patches are valid")
}

func TestConvertV2Beta2(t *testing.T) {
	objs, err := decodeFile(t, "betas.yaml")
	require.NoError(t, err)
	r := objs.Releases[1]

	assert.Equal(t, APIVersion, r.APIVersion)
	assert.Nil(t, r.Spec.Chart)
	assert.Equal(t, &CrossNamespaceSourceReference{Kind: "OCIRepository", Name: "podinfo"}, r.Spec.ChartRef)
	assert.Equal(t, &DriftDetection{Mode: DriftDetectionEnabled, Ignore: []IgnoreRule{{Paths: []string{"/spec/replicas"}}}},
		r.Spec.DriftDetection)
	assert.Equal(t, UninstallRemediationStrategy, r.GetUpgrade().GetRemediation().GetStrategy())
	assert.Equal(t, 2, r.GetUpgrade().GetRemediation().GetRetries())
	assert.Equal(t, []Filter{{Name: "smoke"}}, r.GetTest().Filters)
	require.Len(t, r.Status.History, 1)
	assert.Equal(t, "apps/drifty.v1", r.Status.History.Latest().FullReleaseName())

	r.Default()
	require.NoError(t, r.Validate())
}

func TestConvertKustomizeNil(t *testing.T) {
	assert.Nil(t, convertKustomize(nil))
	assert.Equal(t, &Kustomize{}, convertKustomize(&kustomizeBeta{}))
}
