package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/action"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"

	"github.com/helmfleet/helmfleet/release"
)

var (
	crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// cachedFake is client-go's fake discovery as the cached discovery client a
// getter hands out.
type cachedFake struct {
	*fakediscovery.FakeDiscovery
}

func (cachedFake) Fresh() bool { return true }
func (cachedFake) Invalidate() {}

// fakeGetter is a getter whose discovery client is fake.
type fakeGetter struct {
	*RESTConfigGetter
	dc discovery.CachedDiscoveryInterface
}

func (g fakeGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) { return g.dc, nil }

func apiResources(gv string, kinds ...string) *metav1.APIResourceList {
	l := &metav1.APIResourceList{GroupVersion: gv}
	for _, k := range kinds {
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: strings.ToLower(k) + "s", Kind: k, Namespaced: true})
	}
	return l
}

// newCapsFake returns a cluster over fake discovery (serving v1 and
// apps/v1), its discovery and its dynamic client, which answers writes
// of CRDs, and the lines the cluster logged.
func newCapsFake(t *testing.T) (*Cluster, *fakediscovery.FakeDiscovery, *dynamicfake.FakeDynamicClient, *[]string) {
	t.Helper()
	disc := &fakediscovery.FakeDiscovery{
		Fake: &k8stesting.Fake{Resources: []*metav1.APIResourceList{
			apiResources("v1", "ConfigMap", "Namespace"),
			apiResources("apps/v1", "Deployment", "StatefulSet"),
		}},
		FakedServerVersion: &version.Info{GitVersion: "v1.37.2", Major: "1", Minor: "37"},
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		configMapGVR: "ConfigMapList",
		crdGVR:       "CustomResourceDefinitionList",
		{Group: "example.io", Version: "v1", Resource: "widgets"}: "WidgetList",
	})
	echo := func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(crdGVK)
		u.SetName("widgets.example.io")
		return true, u, nil
	}
	dyn.PrependReactor("patch", "*", echo)
	dyn.PrependReactor("delete", "*", echo)
	mapper := newMapper()
	mapper.Add(crdGVK, meta.RESTScopeRoot)
	var logged []string
	c, err := New(Config{
		Name:       "test",
		Getter:     fakeGetter{RESTConfigGetter: NewRESTConfigGetter(&rest.Config{Host: "https://127.0.0.1:1"}, ""), dc: cachedFake{disc}},
		Dynamic:    dyn,
		Mapper:     mapper,
		Kubernetes: kubefake.NewClientset(),
		Log:        func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) },
	})
	require.NoError(t, err)
	return c, disc, dyn, &logged
}

// discoveries counts the server version reads, one per discovery.
func discoveries(disc *fakediscovery.FakeDiscovery) int {
	n := 0
	for _, a := range disc.Actions() {
		if a.GetResource().Resource == "version" {
			n++
		}
	}
	return n
}

func TestCapabilitiesAsHelm(t *testing.T) {
	c, disc, _, _ := newCapsFake(t)
	caps, err := c.Capabilities(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", caps.KubeVersion.Version)
	assert.Equal(t, "1", caps.KubeVersion.Major)
	assert.Equal(t, "37", caps.KubeVersion.Minor)
	helm, err := action.GetVersionSet(disc)
	require.NoError(t, err)
	slices.Sort(helm)
	assert.Equal(t, []string{"apps/v1", "apps/v1/Deployment", "apps/v1/StatefulSet", "v1", "v1/ConfigMap", "v1/Namespace"}, []string(helm))
	assert.Equal(t, helm, caps.APIVersions, "the API versions Helm's install computes, sorted")
}

func TestCapabilitiesCached(t *testing.T) {
	c, disc, _, _ := newCapsFake(t)
	first, err := c.Capabilities(t.Context())
	require.NoError(t, err)
	first.APIVersions[0] = "changed/v1"
	first.APIVersions = append(first.APIVersions, "added/v1")
	first.KubeVersion.Version = "v0.0.0"
	second, err := c.Capabilities(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 1, discoveries(disc), "the second call reuses the first discovery")
	assert.Equal(t, "v1.37.2", second.KubeVersion.Version)
	assert.Equal(t, "apps/v1", second.APIVersions[0], "a caller's changes do not reach the cache")
	assert.NotContains(t, second.APIVersions, "added/v1")
}

// TestCapabilitiesRediscoverAfterWrite: writing a CRD or an APIService
// through the cluster, or the mapper meeting an unknown kind, makes the
// next call rediscover; other writes and dry runs do not.
func TestCapabilitiesRediscoverAfterWrite(t *testing.T) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdGVK)
	crd.SetName("widgets.example.io")
	crdRef := release.RefOf(crd)
	apiService := release.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}, Name: "v1.example.io"}
	tests := []struct {
		name  string
		write func(ctx context.Context, c *Cluster) error
		want  bool
	}{
		{name: "apply CRD", want: true, write: func(ctx context.Context, c *Cluster) error {
			_, err := c.Apply(ctx, crd, release.ApplyOptions{})
			return err
		}},
		{name: "dry-run apply CRD", want: false, write: func(ctx context.Context, c *Cluster) error {
			_, err := c.Apply(ctx, crd, release.ApplyOptions{DryRun: true})
			return err
		}},
		{name: "patch CRD", want: true, write: func(ctx context.Context, c *Cluster) error {
			_, err := c.Patch(ctx, crdRef, []byte(`[]`), release.PatchOptions{})
			return err
		}},
		{name: "delete CRD", want: true, write: func(ctx context.Context, c *Cluster) error {
			return c.Delete(ctx, crdRef, release.DeleteOptions{})
		}},
		{name: "delete APIService", want: true, write: func(ctx context.Context, c *Cluster) error {
			c.mapper.(*resettingMapper).Add(apiService.GroupVersionKind, meta.RESTScopeRoot)
			return c.Delete(ctx, apiService, release.DeleteOptions{})
		}},
		{name: "unknown kind", want: true, write: func(ctx context.Context, c *Cluster) error {
			_, err := c.List(ctx, widgetGVK, "a", nil)
			return err
		}},
		{name: "apply ConfigMap", want: false, write: func(ctx context.Context, c *Cluster) error {
			_, err := c.Apply(ctx, configMap("a", "x", nil), release.ApplyOptions{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, disc, _, _ := newCapsFake(t)
			_, err := c.Capabilities(t.Context())
			require.NoError(t, err)
			disc.Resources = append(disc.Resources, apiResources("example.io/v1", "Widget"))
			require.NoError(t, tt.write(t.Context(), c))
			caps, err := c.Capabilities(t.Context())
			require.NoError(t, err)
			if tt.want {
				assert.Equal(t, 2, discoveries(disc))
				assert.Contains(t, caps.APIVersions, "example.io/v1/Widget")
			} else {
				assert.Equal(t, 1, discoveries(disc))
				assert.NotContains(t, caps.APIVersions, "example.io/v1/Widget")
			}
		})
	}
}

func TestCapabilitiesErrors(t *testing.T) {
	boom := errors.New("boom")
	t.Run("server version", func(t *testing.T) {
		c, disc, _, _ := newCapsFake(t)
		disc.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, boom })
		_, err := c.Capabilities(t.Context())
		require.ErrorIs(t, err, boom)
		assert.EqualError(t, err, "cluster test: capabilities: server version: boom")
		disc.ReactionChain = disc.ReactionChain[1:]
		caps, err := c.Capabilities(t.Context())
		require.NoError(t, err, "a failed discovery is not cached")
		assert.Equal(t, "v1.37.2", caps.KubeVersion.Version)
	})
	t.Run("groups", func(t *testing.T) {
		c, disc, _, _ := newCapsFake(t)
		disc.PrependReactor("get", "group", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, boom })
		_, err := c.Capabilities(t.Context())
		require.ErrorIs(t, err, boom)
		assert.ErrorContains(t, err, "cluster test: capabilities: could not get apiVersions from Kubernetes: boom")
	})
	t.Run("orphaned API service", func(t *testing.T) {
		c, disc, _, logged := newCapsFake(t)
		failed := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
		disc.PrependReactor("get", "resource", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{failed: errors.New("service unavailable")}}
		})
		caps, err := c.Capabilities(t.Context())
		require.NoError(t, err, "tolerated, as Helm tolerates it")
		assert.Contains(t, caps.APIVersions, "apps/v1/Deployment", "the groups that answered are kept")
		assert.NotContains(t, caps.APIVersions, "metrics.k8s.io/v1beta1")
		require.Len(t, *logged, 1)
		assert.Contains(t, (*logged)[0], "cluster test: WARNING: discovery failed for metrics.k8s.io/v1beta1: service unavailable")
	})
	t.Run("cancelled", func(t *testing.T) {
		c, disc, _, _ := newCapsFake(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := c.Capabilities(ctx)
		require.ErrorIs(t, err, context.Canceled)
		assert.ErrorContains(t, err, "cluster test: capabilities")
		assert.Zero(t, discoveries(disc))
	})
	t.Run("cancelled while another call discovers", func(t *testing.T) {
		c, disc, _, _ := newCapsFake(t)
		entered, release := make(chan struct{}), make(chan struct{})
		disc.PrependReactor("get", "version", func(k8stesting.Action) (bool, runtime.Object, error) {
			close(entered)
			<-release
			return false, nil, nil
		})
		done := make(chan error)
		go func() {
			_, err := c.Capabilities(context.WithoutCancel(t.Context()))
			done <- err
		}()
		<-entered
		ctx, cancel := context.WithCancel(t.Context())
		waiting := make(chan error)
		go func() {
			_, err := c.Capabilities(ctx)
			waiting <- err
		}()
		cancel()
		assert.ErrorIs(t, <-waiting, context.Canceled, "a waiting call gives up when its context ends")
		close(release)
		assert.NoError(t, <-done)
	})
}

// TestCapabilitiesConcurrent: calls on a cold cache discover once.
func TestCapabilitiesConcurrent(t *testing.T) {
	c, disc, _, _ := newCapsFake(t)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			caps, err := c.Capabilities(t.Context())
			assert.NoError(t, err)
			caps.APIVersions = append(caps.APIVersions, "mine/v1")
		})
	}
	wg.Wait()
	assert.Equal(t, 1, discoveries(disc))
}

// discoveryServer serves legacy discovery (/version, /api, /apis and one
// resource list per group version), tagging /apis with an ETag when etag
// is set, and counts requests by path.
type discoveryServer struct {
	mu       sync.Mutex
	groups   map[string][]string // group version -> kinds
	etag     bool
	status   int // when set, /apis answers with it
	requests map[string]int
	revalid  int // requests with an If-None-Match
}

func newDiscoveryServer(t *testing.T, etag bool) (*discoveryServer, *httptest.Server) {
	d := &discoveryServer{groups: map[string][]string{"apps/v1": {"Deployment"}}, etag: etag, requests: map[string]int{}}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv
}

func (d *discoveryServer) set(gv string, kinds ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.groups[gv] = kinds
}

func (d *discoveryServer) take() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.requests
	d.requests = map[string]int{}
	return out
}

func (d *discoveryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.requests[r.URL.Path]++
	var body any
	switch p := r.URL.Path; {
	case p == "/version":
		body = version.Info{GitVersion: "v1.37.2", Major: "1", Minor: "37"}
	case p == "/api":
		body = metav1.APIVersions{Versions: []string{"v1"}}
	case p == "/api/v1":
		body = apiResources("v1", "ConfigMap")
	case p == "/apis":
		if d.status != 0 {
			http.Error(w, "unavailable", d.status)
			return
		}
		list := metav1.APIGroupList{}
		for _, gv := range slices.Sorted(mapKeys(d.groups)) {
			g, v, _ := strings.Cut(gv, "/")
			gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv, Version: v}
			list.Groups = append(list.Groups, metav1.APIGroup{Name: g, Versions: []metav1.GroupVersionForDiscovery{gvd}, PreferredVersion: gvd})
		}
		body = list
	case strings.HasPrefix(p, "/apis/"):
		gv := strings.TrimPrefix(p, "/apis/")
		kinds, ok := d.groups[gv]
		if !ok {
			http.NotFound(w, r)
			return
		}
		body = apiResources(gv, kinds...)
	default:
		http.NotFound(w, r)
		return
	}
	data, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/apis" && d.etag {
		sum := sha256.Sum256(data)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if inm := r.Header.Get("If-None-Match"); inm != "" {
			d.revalid++
			if inm == etag {
				w.WriteHeader(http.StatusNotModified)
				return
			}
		}
	}
	_, _ = w.Write(data)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestCapabilitiesProbe: against a server, a cached result costs one
// request of /apis per call, and a change there (a CRD created by any
// client) is rediscovered.
func TestCapabilitiesProbe(t *testing.T) {
	for _, etag := range []bool{true, false} {
		t.Run(fmt.Sprintf("etag=%v", etag), func(t *testing.T) {
			d, srv := newDiscoveryServer(t, etag)
			c, err := New(Config{Name: "test", REST: &rest.Config{Host: srv.URL}})
			require.NoError(t, err)
			caps, err := c.Capabilities(t.Context())
			require.NoError(t, err)
			assert.Contains(t, caps.APIVersions, "apps/v1/Deployment")
			assert.Equal(t, 1, d.take()["/version"], "the first call discovers")

			for range 3 {
				_, err = c.Capabilities(t.Context())
				require.NoError(t, err)
			}
			assert.Equal(t, map[string]int{"/apis": 3}, d.take(), "then one request per call")
			if etag {
				assert.Equal(t, 3, d.revalid, "answered 304 Not Modified")
			}

			d.set("example.io/v1", "Widget") // another client's CRD
			caps, err = c.Capabilities(t.Context())
			require.NoError(t, err)
			assert.Contains(t, caps.APIVersions, "example.io/v1/Widget")
			assert.Equal(t, 1, d.take()["/version"], "a changed /apis is rediscovered")
			_, err = c.Capabilities(t.Context())
			require.NoError(t, err)
			assert.Equal(t, map[string]int{"/apis": 1}, d.take(), "and cached again")
		})
	}
}

func TestCapabilitiesProbeError(t *testing.T) {
	d, srv := newDiscoveryServer(t, true)
	c, err := New(Config{Name: "test", REST: &rest.Config{Host: srv.URL}})
	require.NoError(t, err)
	_, err = c.Capabilities(t.Context())
	require.NoError(t, err)
	d.mu.Lock()
	d.status = http.StatusServiceUnavailable
	d.mu.Unlock()
	_, err = c.Capabilities(t.Context())
	require.Error(t, err, "an unchecked cache is not served")
	assert.ErrorContains(t, err, "cluster test: capabilities: discovery probe: GET "+srv.URL+"/apis: 503 Service Unavailable: unavailable")
}

// TestCapabilitiesProbeConcurrent: concurrent calls on a cold cache
// discover once, and calls that wait while another checks share its
// check.
func TestCapabilitiesProbeConcurrent(t *testing.T) {
	d, srv := newDiscoveryServer(t, true)
	c, err := New(Config{Name: "test", REST: &rest.Config{Host: srv.URL}})
	require.NoError(t, err)
	call := func() {
		var wg sync.WaitGroup
		for range 16 {
			wg.Go(func() {
				caps, err := c.Capabilities(t.Context())
				if assert.NoError(t, err) {
					assert.Contains(t, caps.APIVersions, "apps/v1/Deployment")
				}
			})
		}
		wg.Wait()
	}
	call()
	got := d.take()
	assert.Equal(t, 1, got["/version"], "one discovery: %v", got)
	call()
	got = d.take()
	assert.Zero(t, got["/version"], "no rediscovery: %v", got)
	assert.LessOrEqual(t, got["/apis"], 16, "at most one check per call: %v", got)
	t.Logf("16 concurrent calls on a warm cache made %d requests of /apis", got["/apis"])
}
