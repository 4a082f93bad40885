package fleettest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/release/fleettest"
)

func workload(kind, chart string, images ...string) *unstructured.Unstructured {
	var cs []any
	for _, img := range images {
		cs = append(cs, map[string]any{"name": "c", "image": img})
	}
	spec := map[string]any{"containers": cs}
	if kind != "Pod" {
		spec = map[string]any{"template": map[string]any{"spec": spec}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "spec": spec}}
	u.SetLabels(map[string]string{"helm.sh/chart": chart})
	return u
}

func TestHealthScripts(t *testing.T) {
	img := fleettest.ImageNeverReady("ghcr.io/acme/app")
	pinned := fleettest.ImageNeverReady("ghcr.io/acme/app:1.2.0")
	chart := fleettest.ChartNeverReady("app", "1.2.0")
	tests := []struct {
		name                     string
		obj                      *unstructured.Unstructured
		wantImg, wantPin, wantCh bool // ready under each script
	}{
		{"the image at any tag", workload("Deployment", "app-1.1.0", "ghcr.io/acme/app:1.1.0"), false, true, true},
		{"the pinned tag", workload("StatefulSet", "app-1.2.0", "ghcr.io/acme/app:1.2.0"), false, false, false},
		{"by digest", workload("Pod", "app-1.1.0", "ghcr.io/acme/app@sha256:abc"), false, true, true},
		{"a longer repository name is another image", workload("DaemonSet", "app-1.1.0", "ghcr.io/acme/app-sidecar:1.2.0"), true, true, true},
		{"one container of several", workload("Job", "other-1.0.0", "busybox", "ghcr.io/acme/app:2"), false, true, true},
		{"not a workload", &unstructured.Unstructured{Object: map[string]any{"kind": "ConfigMap", "metadata": map[string]any{"labels": map[string]any{"helm.sh/chart": "app-1.2.0"}}}}, true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantImg, img(tc.obj).Ready, "ImageNeverReady(repository)")
			assert.Equal(t, tc.wantPin, pinned(tc.obj).Ready, "ImageNeverReady(repository:tag)")
			assert.Equal(t, tc.wantCh, chart(tc.obj).Ready, "ChartNeverReady")
			if !img(tc.obj).Ready {
				assert.Contains(t, img(tc.obj).Message, "ghcr.io/acme/app", "says which image")
			}
		})
	}
}
