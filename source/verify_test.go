package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestVerifyRefusedWhereUnverifiable: a source that asks for verification
// and cannot be verified (an HTTP(S) HelmRepository, a local chart) is
// refused before any request, whichever resolver is asked, naming the
// object and the field; Flux's HelmChart from an HTTP repository with
// spec.verify fails to build too.
func TestVerifyRefusedWhereUnverifiable(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		http.NotFound(w, nil)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	archive := filepath.Join(dir, "app-1.0.0.tgz")
	require.NoError(t, os.WriteFile(archive, packageChart(t, "app", "1.0.0", nil), 0o600))

	repo := &HelmRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "charts"}, Spec: HelmRepositorySpec{URL: srv.URL}}
	keys := &LocalObjectReference{Name: "cosign-keys"}
	helmChart := &HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "flux", Name: "app"}, Spec: HelmChartSpec{Chart: "app",
		Verify: &OCIRepositoryVerification{Provider: "cosign", SecretRef: keys}}}
	release := &Verification{Provider: "cosign", SecretRef: keys, Namespace: "flux", Object: "HelmRelease apps/app", Field: "spec.chart.spec.verify"}
	http := NewHTTPResolver(srv.Client(), HTTPOptions{})
	local := NewLocalResolver(0)
	all := Composite{HTTP: http, Local: local}
	tests := []struct {
		name     string
		resolver Resolver
		ref      Ref
		object   string
		field    string
	}{
		{name: "HelmChart from an HTTP repository", resolver: http, ref: Ref{HelmChart: helmChart, HelmRepository: repo},
			object: "HelmChart flux/app", field: "spec.verify.provider"},
		{name: "HelmChart from an HTTP repository through Composite", resolver: all, ref: Ref{HelmChart: helmChart, HelmRepository: repo},
			object: "HelmChart flux/app", field: "spec.verify.provider"},
		{name: "release chart.spec.verify on an HTTP repository", resolver: all, ref: Ref{Chart: "app", HelmRepository: repo, Verify: release},
			object: "HelmRelease apps/app", field: "spec.chart.spec.verify.provider"},
		{name: "local archive", resolver: local, ref: Ref{Path: archive, Verify: release},
			object: "HelmRelease apps/app", field: "spec.chart.spec.verify.provider"},
		{name: "local archive through Composite with another resolver", resolver: Composite{Local: ResolverFunc(func(context.Context, Ref) (*Chart, error) {
			return &Chart{}, nil
		})}, ref: Ref{Path: archive, Verify: release}, object: "HelmRelease apps/app", field: "spec.chart.spec.verify.provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.resolver.Resolve(context.Background(), tt.ref)
			require.ErrorIs(t, err, ErrUnverified)
			assert.Nil(t, got)
			var ve *VerifyError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, tt.object, ve.Object)
			assert.Equal(t, tt.field, ve.Field)
			assert.Contains(t, err.Error(), tt.object+" "+tt.field+": cosign verification applies only to OCI artifacts")
			assert.Contains(t, err.Error(), "refusing rather than installing it unverified")
		})
	}
	assert.Zero(t, requests.Load(), "refused before any request")

	t.Run("without verify the same sources resolve", func(t *testing.T) {
		_, err := local.Resolve(context.Background(), Ref{Path: archive})
		require.NoError(t, err)
	})
}
