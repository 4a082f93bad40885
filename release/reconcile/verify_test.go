package reconcile_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/helmfleet/helmfleet/internal/ocitest"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/memory"
	"github.com/helmfleet/helmfleet/release/reconcile"
	"github.com/helmfleet/helmfleet/source"
)

// TestReconcileVerifiesChart runs releases whose chart.spec.verify asks
// for cosign verification through the reconciler on in-memory clusters,
// with charts signed in the test: a chart signed by a trusted key is
// installed and SourceVerified names the signer; an unsigned chart, or one
// signed by another key, is refused, SourceVerified and Ready say why, and
// Helm's history stays empty.
func TestReconcileVerifiesChart(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(ocitest.App(t, "", ""))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	opts := []registry.ClientOption{registry.ClientOptPlainHTTP(), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json"))}
	client, err := registry.NewClient(opts...)
	require.NoError(t, err)
	digests := map[string]string{}
	for _, v := range []string{"6.5.0", "6.5.1", "6.5.2"} {
		path, err := chartutil.Save(testchart.MustLoad(v), t.TempDir())
		require.NoError(t, err)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		res, err := client.Push(data, host+"/charts/podinfo:"+v)
		require.NoError(t, err)
		digests[v] = res.Manifest.Digest
	}
	trusted, other := ocitest.NewKey(t), ocitest.NewKey(t)
	repo := ocitest.Repository(t, host, "charts/podinfo", nil)
	trusted.Sign(t, repo, digests["6.5.0"], ocitest.SimpleSigning(host+"/charts/podinfo", digests["6.5.0"]), nil)
	// 6.5.1 is not signed; 6.5.2 is signed by a key nobody trusts.
	other.Sign(t, repo, digests["6.5.2"], ocitest.SimpleSigning(host+"/charts/podinfo", digests["6.5.2"]), nil)

	objs := &release.Objects{HelmRepositories: []*source.HelmRepository{{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "flux"},
		Spec:       source.HelmRepositorySpec{URL: "oci://" + host + "/charts", Type: source.RepositoryTypeOCI},
	}}}
	secrets := source.SecretReaderFunc(func(_ context.Context, namespace, name string) (map[string][]byte, error) {
		require.Equal(t, "flux/cosign-keys", namespace+"/"+name, "the Secret is read in the repository's namespace, as Flux's HelmChart")
		return map[string][]byte{"cosign.pub": trusted.PublicPEM}, nil
	})
	resolver := source.NewOCIResolver(source.OCIOptions{ClientOptions: opts, Secrets: secrets})
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.Charts(resolver, objs)})
	require.NoError(t, err)
	newRelease := func(version string) *release.Release {
		rel := &release.Release{
			ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "apps", Generation: 1},
			Spec: release.Spec{Interval: metav1.Duration{Duration: time.Minute}, Chart: &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{
				Chart: "podinfo", Version: version,
				SourceRef: release.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo", Namespace: "flux"},
				Verify:    &release.HelmChartTemplateVerification{SecretRef: &release.LocalObjectReference{Name: "cosign-keys"}},
			}}},
		}
		rel.Default()
		require.NoError(t, rel.Validate())
		return rel
	}
	releases := func(c *memory.Cluster) int {
		cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
		require.NoError(t, err)
		all, err := action.NewList(cfg).Run()
		require.NoError(t, err)
		return len(all)
	}

	t.Run("signed by the trusted key", func(t *testing.T) {
		c := memory.New("m")
		rel := newRelease("6.5.0")
		plan := rec.Plan(ctx, c, rel)
		require.NoError(t, plan.Err)
		assert.Equal(t, &source.Verified{Provider: "cosign", Digest: digests["6.5.0"], Signer: "flux/cosign-keys:cosign.pub"}, plan.Verified)

		res, err := rec.Reconcile(ctx, c, rel)
		require.NoError(t, err)
		assert.Equal(t, reconcile.ActionInstall, res.Last())
		assert.Equal(t, 1, releases(c))
		cond := rel.Status.GetCondition(release.ConditionSourceVerified)
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionTrue, cond.Status)
		assert.Equal(t, release.ReasonVerificationSucceeded, cond.Reason)
		assert.Equal(t, "verified cosign signature of version 6.5.0 ("+digests["6.5.0"]+") by flux/cosign-keys:cosign.pub", cond.Message)
		assert.Equal(t, digests["6.5.0"], rel.Status.LastAttemptedRevisionDigest)

		// The verification is dropped with the verify block.
		rel.Spec.Chart.Spec.Verify = nil
		_, err = rec.Reconcile(ctx, c, rel)
		require.NoError(t, err)
		assert.Nil(t, rel.Status.GetCondition(release.ConditionSourceVerified))
	})

	for _, tt := range []struct {
		name, version, reason string
	}{
		{name: "unsigned", version: "6.5.1", reason: "no cosign signature: the registry has no signature at tag sha256-"},
		{name: "signed by an untrusted key", version: "6.5.2", reason: "no signature verifies with the 1 trusted key(s) of Secret flux/cosign-keys"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := memory.New("m")
			rel := newRelease(tt.version)
			plan := rec.Plan(ctx, c, rel)
			require.ErrorIs(t, plan.Err, source.ErrUnverified)
			assert.Nil(t, plan.Verified)

			_, err := rec.Reconcile(ctx, c, rel)
			require.ErrorIs(t, err, source.ErrUnverified)
			for _, want := range []string{"HelmRelease apps/podinfo spec.chart.spec.verify", digests[tt.version], tt.reason, "oci://" + host + "/charts"} {
				assert.Contains(t, err.Error(), want)
			}
			assert.Zero(t, releases(c), "nothing installed")
			cond := rel.Status.GetCondition(release.ConditionSourceVerified)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionFalse, cond.Status)
			assert.Equal(t, release.ReasonVerificationError, cond.Reason)
			assert.Equal(t, err.Error(), cond.Message)
			ready := rel.Status.GetCondition(release.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, metav1.ConditionFalse, ready.Status)
			assert.Equal(t, release.ReasonArtifactFailed, ready.Reason)
			assert.Contains(t, ready.Message, tt.reason)
			assert.Empty(t, rel.Status.History)
		})
	}
}

// TestReconcileRefusesUnverifiedChart: a chart getter that ignores
// chart.spec.verify cannot get a chart installed unverified.
func TestReconcileRefusesUnverifiedChart(t *testing.T) {
	ctx := context.Background()
	rec, err := reconcile.New(reconcile.Config{Charts: reconcile.ChartGetterFunc(func(context.Context, *release.Release) (*reconcile.Chart, error) {
		return &reconcile.Chart{Chart: testchart.MustLoad("6.5.0"), Digest: "sha256:0123"}, nil
	})})
	require.NoError(t, err)
	rel := &release.Release{
		ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Namespace: "apps", Generation: 1},
		Spec: release.Spec{Interval: metav1.Duration{Duration: time.Minute}, Chart: &release.HelmChartTemplate{Spec: release.HelmChartTemplateSpec{
			Chart: "podinfo", Version: "6.5.0", SourceRef: release.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "podinfo"},
			Verify: &release.HelmChartTemplateVerification{SecretRef: &release.LocalObjectReference{Name: "cosign-keys"}},
		}}},
	}
	rel.Default()
	c := memory.New("m")
	require.ErrorIs(t, rec.Plan(ctx, c, rel).Err, source.ErrUnverified)
	_, err = rec.Reconcile(ctx, c, rel)
	require.ErrorIs(t, err, source.ErrUnverified)
	assert.Contains(t, err.Error(), "HelmRelease apps/podinfo spec.chart.spec.verify (artifact sha256:0123): the chart getter returned the chart without verifying it")
	cond := rel.Status.GetCondition(release.ConditionSourceVerified)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	cfg, err := c.HelmConfig(ctx, release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	all, err := action.NewList(cfg).Run()
	require.NoError(t, err)
	assert.Empty(t, all, "nothing installed")
}
