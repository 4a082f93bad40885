package release_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/release"
)

// The spec.interval every Kustomization sets is not read: it is said
// once for all, counting a Kustomization copied to several members once.
func TestKustomizationIntervalWarning(t *testing.T) {
	k := func(ns, name string, iv time.Duration) *release.Kustomization {
		out := &release.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		out.Spec.Interval = metav1.Duration{Duration: iv}
		return out
	}
	assert.Equal(t,
		"spec.interval of 3 Kustomizations (10m0s, 1h0m0s): not read: a Kustomization is applied when its fleet is planned and applied (release/controller requeues a fleet by its HelmReleases' spec.interval)",
		release.KustomizationIntervalWarning([]*release.Kustomization{
			k("infra", "base", time.Hour), k("apps", "web", 10*time.Minute), k("apps", "web", 10*time.Minute), k("apps", "api", 10*time.Minute)}))
	assert.Empty(t, release.KustomizationIntervalWarning(nil))
	assert.Empty(t, release.KustomizationIntervalWarning([]*release.Kustomization{k("apps", "web", 0)}))
}
