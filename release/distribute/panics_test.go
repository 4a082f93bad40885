package distribute_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testchart"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/memory"
)

// typoPolicy names a Deployment the chart does not have: every install
// has placement warnings.
const typoPolicy = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: podinfo-web}
  placement:
    clusterAffinity: {clusterNames: [m1]}
`

// oneMember is a Distributor over a memory hub and member, as the
// member's backend sees it through wrap (nil: the memory cluster itself).
func oneMember(t *testing.T, policies string, wrap func(*memory.Cluster) release.Cluster, onWarning func(distribute.Warning)) (*distribute.Distributor, *memory.Cluster) {
	t.Helper()
	m1 := memory.New("m1", memory.WithPollInterval(time.Millisecond))
	var member release.Cluster = m1
	if wrap != nil {
		member = wrap(m1)
	}
	d, err := distribute.New(distribute.Config{
		Hub:          memory.New("hub", memory.WithPollInterval(time.Millisecond)),
		Members:      []release.Member{{Cluster: member, Facts: policy.Cluster{}}},
		Policies:     fixture.PolicySet(t, policies),
		PollInterval: time.Millisecond,
		OnWarning:    onWarning,
	})
	require.NoError(t, err)
	return d, m1
}

// helmInstall installs podinfo with Helm alone on d's configuration, no
// Reconciler around it.
func helmInstall(t *testing.T, d *distribute.Distributor) error {
	t.Helper()
	cfg, err := d.HelmConfig(context.Background(), release.HelmScope{StorageNamespace: "apps", Namespace: "apps"})
	require.NoError(t, err)
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace = "podinfo", "apps"
	require.NotPanics(t, func() { _, err = in.RunWithContext(context.Background(), testchart.MustLoad("6.5.0"), nil) })
	return err
}

// A panic of OnWarning, which runs on Helm's goroutine, fails the action
// before anything is written, through the Reconciler or through Helm
// alone, and the process goes on.
func TestDistributorOnWarningPanicFailsTheAction(t *testing.T) {
	newDist := func(t *testing.T) (*distribute.Distributor, *memory.Cluster) {
		return oneMember(t, typoPolicy, nil, func(w distribute.Warning) { panic("warning sink bug: " + w.String()) })
	}
	check := func(t *testing.T, err error, m1 *memory.Cluster) {
		t.Helper()
		var pe *release.CallbackPanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "distribute.Config.OnWarning", pe.Callback)
		assert.ErrorContains(t, err, "release apps/podinfo: distribute.Config.OnWarning panicked: warning sink bug: release apps/podinfo: ")
		assert.Empty(t, m1.Objects(), "nothing is written")
	}
	t.Run("reconciler", func(t *testing.T) {
		d, m1 := newDist(t)
		var err error
		require.NotPanics(t, func() { _, err = fixture.Reconciler(t, nil).Reconcile(context.Background(), d, fixture.Release()) })
		check(t, err, m1)
	})
	t.Run("helm", func(t *testing.T) {
		d, m1 := newDist(t)
		check(t, helmInstall(t, d), m1)
	})
}

// onM1Policy places podinfo and what it uses on m1.
const onM1Policy = `
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: podinfo, namespace: apps}
spec:
  propagateDeps: true
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  placement:
    clusterAffinity: {clusterNames: [m1]}
`

// applyPanics is a member backend whose Apply has a bug.
type applyPanics struct{ *memory.Cluster }

func (applyPanics) Apply(context.Context, *unstructured.Unstructured, release.ApplyOptions) (*unstructured.Unstructured, error) {
	panic("member backend bug")
}

// The Distributor writes to members on goroutines of its own, under
// Helm's: a panic of a member's backend fails that member, not the
// process.
func TestDistributorMemberPanicFailsTheMember(t *testing.T) {
	d, _ := oneMember(t, onM1Policy, func(m1 *memory.Cluster) release.Cluster { return applyPanics{m1} }, nil)
	err := helmInstall(t, d)
	var me *distribute.MemberError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, "m1", me.Member)
	var pe *release.CallbackPanicError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "release.Cluster of member m1", pe.Callback)
}
