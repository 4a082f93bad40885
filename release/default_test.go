package release

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestDefaultMinimal(t *testing.T) {
	r := &Release{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo"},
		Spec: Spec{
			Interval: metav1.Duration{Duration: 10 * time.Minute},
			Chart: &HelmChartTemplate{Spec: HelmChartTemplateSpec{
				Chart:     "podinfo",
				SourceRef: CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"},
			}},
			DependsOn:  []DependencyReference{{Name: "redis"}},
			ValuesFrom: []ValuesReference{{Kind: "ConfigMap", Name: "v"}},
		},
	}
	r.Default()

	five := dur(5 * time.Minute)
	want := Spec{
		Interval: metav1.Duration{Duration: 10 * time.Minute},
		Chart: &HelmChartTemplate{Spec: HelmChartTemplateSpec{
			Chart:             "podinfo",
			Version:           "*",
			SourceRef:         CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo", Namespace: "default"},
			Interval:          dur(10 * time.Minute),
			ReconcileStrategy: "ChartVersion",
		}},
		ReleaseName:      "podinfo",
		TargetNamespace:  "default",
		StorageNamespace: "default",
		DependsOn:        []DependencyReference{{Name: "redis", Namespace: "default"}},
		Timeout:          five,
		MaxHistory:       valuePtr(5),
		PersistentClient: valuePtr(true),
		DriftDetection:   &DriftDetection{Mode: DriftDetectionDisabled},
		Install: &Install{
			Timeout:     five,
			Remediation: &InstallRemediation{IgnoreTestFailures: valuePtr(false), RemediateLastFailure: valuePtr(false)},
			Strategy:    &InstallStrategy{Name: "RemediateOnFailure"},
			CRDs:        Create,
		},
		Upgrade: &Upgrade{
			Timeout: five,
			Remediation: &UpgradeRemediation{
				IgnoreTestFailures:   valuePtr(false),
				RemediateLastFailure: valuePtr(false),
				Strategy:             valuePtr(RollbackRemediationStrategy),
			},
			Strategy:                &UpgradeStrategy{Name: "RemediateOnFailure"},
			CRDs:                    Create,
			ChartNameChangeStrategy: ChartNameChangeReinstall,
		},
		Test:       &Test{Timeout: five},
		Rollback:   &Rollback{Timeout: five},
		Uninstall:  &Uninstall{Timeout: five, DeletionPropagation: valuePtr("background")},
		ValuesFrom: []ValuesReference{{Kind: "ConfigMap", Name: "v", ValuesKey: "values.yaml"}},
	}
	assert.Equal(t, want, r.Spec)
	assert.Equal(t, "default", r.Namespace)
	assert.Equal(t, APIVersion, r.APIVersion)
	require.NoError(t, r.Validate())
}

func TestDefaultRemediationDependsOnOtherFields(t *testing.T) {
	r := &Release{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Spec: Spec{
		Timeout: dur(2 * time.Minute),
		Test:    &Test{Enable: true, IgnoreFailures: true},
		Install: &Install{SkipCRDs: true, Remediation: &InstallRemediation{Retries: 3}, Strategy: &InstallStrategy{Name: "RetryOnFailure"}},
		Upgrade: &Upgrade{Remediation: &UpgradeRemediation{Retries: 2}},
	}}
	r.Default()
	s := r.Spec
	assert.Equal(t, Skip, s.Install.CRDs, "deprecated skipCRDs maps to Skip")
	assert.Equal(t, dur(5*time.Minute), s.Install.Strategy.RetryInterval, "RetryOnFailure retries every 5m")
	assert.False(t, *s.Install.Remediation.RemediateLastFailure, "install: false even with retries")
	assert.True(t, *s.Install.Remediation.IgnoreTestFailures, "from test.ignoreFailures")
	assert.True(t, *s.Upgrade.Remediation.RemediateLastFailure, "upgrade: retries > 0")
	assert.True(t, *s.Upgrade.Remediation.IgnoreTestFailures)
	for _, d := range []*metav1.Duration{s.Install.Timeout, s.Upgrade.Timeout, s.Test.Timeout, s.Rollback.Timeout, s.Uninstall.Timeout} {
		assert.Equal(t, dur(2*time.Minute), d, "action timeouts follow spec.timeout")
	}
}

// TestDefaultKeepsWhatIsSet defaults a Release that sets every field: only
// the one unset dependency namespace changes, and a second Default changes
// nothing.
func TestDefaultKeepsWhatIsSet(t *testing.T) {
	objs, err := decodeFile(t, "allfields.yaml")
	require.NoError(t, err)
	fresh, err := decodeFile(t, "allfields.yaml")
	require.NoError(t, err)
	r, want := objs.Releases[0], fresh.Releases[0]

	r.Default()
	want.Spec.DependsOn[0].Namespace = "apps"
	assert.Equal(t, want, r)

	r.Default()
	assert.Equal(t, want, r, "Default is idempotent")
}

func TestReleaseNameRule(t *testing.T) {
	long := "a-very-long-release-name-for-the-podinfo-application-xyz" // 56 characters
	tests := []struct {
		name            string
		releaseName     string
		targetNamespace string
		objectName      string
		want            string
	}{
		{name: "name", objectName: "podinfo", want: "podinfo"},
		{name: "target namespace prefix", objectName: "podinfo", targetNamespace: "web", want: "web-podinfo"},
		{name: "explicit name wins", objectName: "podinfo", targetNamespace: "web", releaseName: "pi", want: "pi"},
		{name: "53 characters are kept", objectName: strings.Repeat("x", 53), want: strings.Repeat("x", 53)},
		{
			// 60 characters: the first 40, "-", 12 hex digits of the
			// SHA-256 of all 60 (computed independently).
			name: "60 characters are hashed", objectName: long, targetNamespace: "web",
			want: "web-a-very-long-release-name-for-the-pod-1b137994b1a3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Release{ObjectMeta: metav1.ObjectMeta{Name: tt.objectName, Namespace: "apps"},
				Spec: Spec{ReleaseName: tt.releaseName, TargetNamespace: tt.targetNamespace}}
			got := r.GetReleaseName()
			assert.Equal(t, tt.want, got)
			assert.LessOrEqual(t, len(got), MaxReleaseNameLength)
			r.Default()
			assert.Equal(t, tt.want, r.Spec.ReleaseName)
		})
	}
}

func TestObjectsDefaultNamespaces(t *testing.T) {
	objs, err := decodeFile(t, "karmada_v2beta1.yaml")
	require.NoError(t, err)
	require.Empty(t, objs.HelmRepositories[0].Namespace)
	objs.Default()
	assert.Equal(t, "default", objs.HelmRepositories[0].Namespace)
	assert.Equal(t, "default", objs.Releases[0].Namespace)
	assert.Equal(t, "default", objs.Releases[0].Spec.Chart.Spec.SourceRef.Namespace)
}
