package distribute_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/fixture"
	"github.com/helmfleet/helmfleet/internal/testcharts"
	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/release/distribute"
	"github.com/helmfleet/helmfleet/release/memory"
)

// apiHub is a memory hub that keeps Helm's records as a real API server
// does, in Secrets of the storage namespace: a record written into a
// namespace the hub lacks fails as Helm's Secret driver fails there
// (memory keeps records without a namespace).
type apiHub struct{ *memory.Cluster }

func (h apiHub) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	cfg, err := h.Cluster.HelmConfig(ctx, scope)
	if err != nil {
		return nil, err
	}
	st := storage.Init(&secretsInNamespace{Driver: cfg.Releases.Driver, hub: h.Cluster, namespace: scope.StorageNamespace})
	st.MaxHistory, st.Log = cfg.Releases.MaxHistory, cfg.Releases.Log
	cfg.Releases = st
	return cfg, nil
}

// helmOnlyHub is an apiHub that offers only Helm's configuration: the
// Distributor cannot write its objects.
type helmOnlyHub struct{ hub apiHub }

func (h helmOnlyHub) Name() string { return h.hub.Name() }

func (h helmOnlyHub) HelmConfig(ctx context.Context, scope release.HelmScope) (*action.Configuration, error) {
	return h.hub.HelmConfig(ctx, scope)
}

type secretsInNamespace struct {
	driver.Driver
	hub       *memory.Cluster
	namespace string
}

// missing returns the error of Kubernetes for a Secret in a namespace
// that does not exist, as Helm's Secret driver wraps it.
func (d *secretsInNamespace) missing(verb string) error {
	_, err := d.hub.Get(context.Background(), release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: d.namespace})
	if errors.Is(err, release.ErrNotFound) {
		err = apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, d.namespace)
	}
	if err != nil {
		return fmt.Errorf("%s: failed to %s: %w", verb, verb, err)
	}
	return nil
}

func (d *secretsInNamespace) Create(key string, rls *helmrelease.Release) error {
	if err := d.missing("create"); err != nil {
		return err
	}
	return d.Driver.Create(key, rls)
}

func (d *secretsInNamespace) Update(key string, rls *helmrelease.Release) error {
	if err := d.missing("update"); err != nil {
		return err
	}
	return d.Driver.Update(key, rls)
}

// With install.createNamespace the hub gets the namespace its Secret
// records need (a real hub refuses them otherwise, and did for every
// chart), while the release's namespace and objects go to the members
// only. A hub the Distributor cannot write, or an install without
// createNamespace into a namespace the hub lacks, fails with an error
// that says it is the hub's storage, and where.
func TestRealChartsCreateNamespaceOnTheHub(t *testing.T) {
	ctx := context.Background()
	tc := chartCases()[0]
	tc.policy = workloadPolicy("podinfo", "web", "Deployment", "podinfo", weightedThree)
	nsRef := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, Name: "web"}
	fleet := func(t *testing.T, hub func(*memory.Cluster) release.HelmConfigurer) (*realFleet, *distribute.Distributor) {
		f := newRealFleet(t, tc.policy, false, nil)
		d, err := distribute.New(distribute.Config{Hub: hub(f.hub), Members: f.dist.Members(), Policies: fixture.PolicySet(t, tc.policy), PollInterval: time.Millisecond})
		require.NoError(t, err)
		return f, d
	}
	install := func(t *testing.T, d *distribute.Distributor, createNamespace bool) error {
		rel := realRelease(testcharts.Podinfo, "web", tc.values)
		rel.Spec.Install = &release.Install{CreateNamespace: createNamespace}
		_, err := realReconciler(t).Reconcile(ctx, d, rel)
		return err
	}

	t.Run("createNamespace", func(t *testing.T) {
		f, d := fleet(t, func(c *memory.Cluster) release.HelmConfigurer { return apiHub{c} })
		require.NoError(t, install(t, d, true))
		ns, err := f.hub.Get(ctx, nsRef)
		require.NoError(t, err, "the hub holds the namespace of the release records")
		assert.Equal(t, "web", ns.GetLabels()["name"], "as Helm creates it")
		assert.Len(t, f.hub.Objects(), 1, "and nothing else")
		rec, err := f.hub.Storage("web").Last("podinfo")
		require.NoError(t, err)
		assert.Equal(t, helmrelease.StatusDeployed, rec.Info.Status)
		for _, name := range f.names {
			_, err := f.members[name].Get(ctx, nsRef)
			require.NoError(t, err, name)
		}
	})
	t.Run("no createNamespace", func(t *testing.T) {
		f, d := fleet(t, func(c *memory.Cluster) release.HelmConfigurer { return apiHub{c} })
		err := install(t, d, false)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `hub hub: release records in namespace web: create: failed to create: namespaces "web" not found`)
		var st *apierrors.StatusError
		require.ErrorAs(t, err, &st, "the hub's error stays in the chain")
		assert.True(t, apierrors.IsNotFound(st))
		_, err = f.hub.Get(ctx, nsRef)
		assert.ErrorIs(t, err, release.ErrNotFound, "Helm creates no namespace unasked, nor does the Distributor")
	})
	t.Run("a hub the Distributor cannot write", func(t *testing.T) {
		_, d := fleet(t, func(c *memory.Cluster) release.HelmConfigurer { return helmOnlyHub{apiHub{c}} })
		err := install(t, d, true)
		require.Error(t, err)
		assert.Contains(t, err.Error(), `hub hub: release records in namespace web: create: failed to create: namespaces "web" not found`)
	})
}
