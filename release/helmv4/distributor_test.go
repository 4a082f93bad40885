package helmv4_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/helmv4"
	"github.com/helmfleet/helmfleet/release/memory"
)

// fullGetterHub is a memory hub whose Helm configuration carries a full
// RESTClientGetter, as a release/kube hub's does.
type fullGetterHub struct{ *memory.Cluster }

func (h fullGetterHub) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	cfg, err := h.Cluster.HelmConfig(ctx, scope)
	if err != nil {
		return nil, err
	}
	cfg.RESTClientGetter = genericclioptions.NewConfigFlags(false)
	return cfg, nil
}

// Helm v4's native kube client on a rendered-manifest Distributor would be
// built on the hub's getter and write the chart's objects to the hub
// instead of the members: the engine refuses it with an error that says
// so, and nothing reaches the hub or a member.
func TestNativeClientRefusedOnDistributor(t *testing.T) {
	hub := memory.New("hub")
	member := memory.New("member-1")
	d, err := distribute.New(distribute.Config{
		Hub:     fullGetterHub{hub},
		Members: []release.Member{{Cluster: member}},
	})
	require.NoError(t, err)
	rel := podinfo()
	rel.Spec.Test = nil
	_, err = reconciler(t, helmv4.Engine{NativeKubeClient: true}).Reconcile(t.Context(), d, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "NativeKubeClient needs a cluster whose Helm configuration has a full RESTClientGetter")
	for _, c := range []*memory.Cluster{hub, member} {
		objs, err := c.List(t.Context(), schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "", nil)
		require.NoError(t, err)
		assert.Empty(t, objs, c.Name())
	}
}
