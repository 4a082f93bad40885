package release

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GetReleaseName returns the name of the Helm release: spec.releaseName, or
// [targetNamespace-]name, passed through ShortenName so that it fits Helm's
// 53-character limit as Flux does.
func (in *Release) GetReleaseName() string {
	name := in.Spec.ReleaseName
	if name == "" {
		name = in.Name
		if in.Spec.TargetNamespace != "" {
			name = in.Spec.TargetNamespace + "-" + in.Name
		}
	}
	return ShortenName(name)
}

// ShortenName returns name unchanged when it has at most 53 characters,
// else its first 40 characters, "-" and the first 12 hex digits of the
// SHA-256 of the whole name: Flux's rule, so both pick the same release.
func ShortenName(name string) string {
	if len(name) <= MaxReleaseNameLength {
		return name
	}
	const hashLen = 12
	sum := sha256.Sum256([]byte(name))
	return name[:MaxReleaseNameLength-hashLen-1] + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// GetTargetNamespace returns spec.targetNamespace, or the Release's
// namespace. Flux calls it GetReleaseNamespace; both names are provided.
func (in *Release) GetTargetNamespace() string {
	if in.Spec.TargetNamespace != "" {
		return in.Spec.TargetNamespace
	}
	return in.Namespace
}

// GetReleaseNamespace is GetTargetNamespace under Flux's name.
func (in *Release) GetReleaseNamespace() string { return in.GetTargetNamespace() }

// GetStorageNamespace returns spec.storageNamespace, or the Release's
// namespace.
func (in *Release) GetStorageNamespace() string {
	if in.Spec.StorageNamespace != "" {
		return in.Spec.StorageNamespace
	}
	return in.Namespace
}

// GetMaxHistory returns spec.maxHistory, or 5; 0 means unlimited.
func (in *Release) GetMaxHistory() int {
	if in.Spec.MaxHistory == nil {
		return DefaultMaxHistory
	}
	return *in.Spec.MaxHistory
}

// GetTimeout returns spec.timeout, or 5m.
func (in *Release) GetTimeout() metav1.Duration {
	return durationOr(in.Spec.Timeout, metav1.Duration{Duration: 5 * time.Minute})
}

// UsePersistentClient returns spec.persistentClient, or true.
func (in *Release) UsePersistentClient() bool {
	return boolOr(in.Spec.PersistentClient, true)
}

// GetDriftDetection returns spec.driftDetection, or its zero value
// (disabled). The result is a copy: changing it does not change in.
func (in *Release) GetDriftDetection() DriftDetection {
	if in.Spec.DriftDetection == nil {
		return DriftDetection{}
	}
	return *in.Spec.DriftDetection
}

// GetInstall returns spec.install, or its zero value. The result is a copy.
func (in *Release) GetInstall() Install {
	if in.Spec.Install == nil {
		return Install{}
	}
	return *in.Spec.Install
}

// GetUpgrade returns spec.upgrade, or its zero value. The result is a copy.
func (in *Release) GetUpgrade() Upgrade {
	if in.Spec.Upgrade == nil {
		return Upgrade{}
	}
	return *in.Spec.Upgrade
}

// GetTest returns spec.test, or its zero value. The result is a copy.
func (in *Release) GetTest() Test {
	if in.Spec.Test == nil {
		return Test{}
	}
	return *in.Spec.Test
}

// GetRollback returns spec.rollback, or its zero value. The result is a
// copy.
func (in *Release) GetRollback() Rollback {
	if in.Spec.Rollback == nil {
		return Rollback{}
	}
	return *in.Spec.Rollback
}

// GetUninstall returns spec.uninstall, or its zero value. The result is a
// copy.
func (in *Release) GetUninstall() Uninstall {
	if in.Spec.Uninstall == nil {
		return Uninstall{}
	}
	return *in.Spec.Uninstall
}

// GetActiveRemediation returns the remediation of the last attempted
// action (status.lastAttemptedReleaseAction), or nil before any attempt.
func (in *Release) GetActiveRemediation() Remediation {
	switch in.Status.LastAttemptedReleaseAction {
	case ReleaseActionInstall:
		return in.GetInstall().GetRemediation()
	case ReleaseActionUpgrade:
		return in.GetUpgrade().GetRemediation()
	default:
		return nil
	}
}

// GetDependsOn returns spec.dependsOn.
func (in *Release) GetDependsOn() []DependencyReference { return in.Spec.DependsOn }

// HasChartRef reports whether spec.chartRef is set.
func (in *Release) HasChartRef() bool { return in.Spec.ChartRef != nil }

// HasChartTemplate reports whether spec.chart is set.
func (in *Release) HasChartTemplate() bool { return in.Spec.Chart != nil }

// GetHelmChartName returns the name Flux gives the HelmChart it creates
// for a chart template: namespace-name.
func (in *Release) GetHelmChartName() string { return in.Namespace + "-" + in.Name }

// GetRequeueAfter returns spec.interval.
func (in *Release) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }
