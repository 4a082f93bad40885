package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/helmfleet/helmfleet/release"
)

var _ release.CapabilitiesReader = (*Cluster)(nil)

// Capabilities returns what the cluster shows charts as .Capabilities at
// this moment: its Kubernetes version (DefaultKubeVersion unless
// WithKubeVersion) and the API versions it serves, sorted: every
// "group/version" and "group/version/Kind" of the built-in kinds, of each
// CustomResourceDefinition stored now, and of WithAPIVersions. It is
// exactly what Helm's own actions on HelmConfig's configuration discover
// (action.GetVersionSet over the same discovery).
func (c *Cluster) Capabilities(ctx context.Context) (*chartutil.Capabilities, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.name, err)
	}
	kv, err := c.kubeVersionOf()
	if err != nil {
		return nil, err
	}
	if err := c.reachable(); err != nil {
		return nil, err
	}
	// Clusters of one Schemas that serve the same kinds share the version
	// set: discovery of the same kinds gives the same set.
	memoKey := strings.Join(c.apiVersions, "\x00") + "\x01" + c.store.mapper.servedKey()
	set, ok := c.store.schemas.versionSet(memoKey)
	if !ok {
		if set, err = action.GetVersionSet(&discoveryClient{c: c}); err != nil {
			return nil, err
		}
		sort.Strings(set)
		c.store.schemas.keepVersionSet(memoKey, set)
	}
	return &chartutil.Capabilities{KubeVersion: *kv, APIVersions: slices.Clone(set), HelmVersion: chartutil.DefaultCapabilities.HelmVersion}, nil
}

// kubeVersionOf parses the cluster's Kubernetes version.
func (c *Cluster) kubeVersionOf() (*chartutil.KubeVersion, error) {
	kv, err := chartutil.ParseKubeVersion(c.kubeVersion)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: kube version %q: %w", c.name, c.kubeVersion, err)
	}
	return kv, nil
}

// parseAPIVersion reads one of WithAPIVersions' entries, in the forms of
// Helm's VersionSet: "group/version", "version" (the core group),
// "group/version/Kind" and "version/Kind". A second part that starts with
// an upper-case letter is a kind.
func parseAPIVersion(s string) (schema.GroupVersion, string, error) {
	parts := strings.Split(s, "/")
	for _, p := range parts {
		if p == "" {
			return schema.GroupVersion{}, "", fmt.Errorf("api version %q: empty part", s)
		}
	}
	switch {
	case len(parts) == 1:
		return schema.GroupVersion{Version: parts[0]}, "", nil
	case len(parts) == 2 && unicode.IsUpper([]rune(parts[1])[0]):
		return schema.GroupVersion{Version: parts[0]}, parts[1], nil
	case len(parts) == 2:
		return schema.GroupVersion{Group: parts[0], Version: parts[1]}, "", nil
	case len(parts) == 3:
		return schema.GroupVersion{Group: parts[0], Version: parts[1]}, parts[2], nil
	}
	return schema.GroupVersion{}, "", fmt.Errorf("api version %q: not group/version or group/version/Kind", s)
}

// apiDocs is what the cluster's discovery answers at one moment.
type apiDocs struct {
	// groups: the core group first, then by name; each group's versions
	// preferred (newest) first.
	groups []*metav1.APIGroup
	// lists holds the resources of each group version, in groups' order.
	lists []*metav1.APIResourceList
}

// discover builds the discovery documents from what the cluster serves
// now: the built-in kinds, those of stored CRDs, and WithAPIVersions.
func (c *Cluster) discover() (*apiDocs, error) {
	if err := c.reachable(); err != nil {
		return nil, err
	}
	kinds := c.store.mapper.resources()
	extraGVs := map[schema.GroupVersion]bool{}
	for _, s := range c.apiVersions {
		gv, kind, err := parseAPIVersion(s)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.name, err)
		}
		extraGVs[gv] = true
		if kind != "" {
			gvk := gv.WithKind(kind)
			plural, singular := meta.UnsafeGuessKindToResource(gvk)
			kinds = append(kinds, servedKind{gvk: gvk, plural: plural.Resource, singular: singular.Resource, namespaced: true})
		}
	}
	verbs := metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	byGV := map[schema.GroupVersion][]metav1.APIResource{}
	seen := map[schema.GroupVersionKind]bool{}
	for _, k := range kinds {
		if seen[k.gvk] {
			continue
		}
		seen[k.gvk] = true
		gv := k.gvk.GroupVersion()
		byGV[gv] = append(byGV[gv], metav1.APIResource{
			Name: k.plural, SingularName: k.singular, Namespaced: k.namespaced, Kind: k.gvk.Kind,
			Verbs: verbs, ShortNames: k.shortNames, Categories: k.categories,
		})
	}
	for gv := range extraGVs {
		if _, ok := byGV[gv]; !ok {
			byGV[gv] = nil
		}
	}
	versions := map[string][]string{}
	for gv := range byGV {
		versions[gv.Group] = append(versions[gv.Group], gv.Version)
	}
	names := make([]string, 0, len(versions))
	for g := range versions {
		names = append(names, g)
	}
	sort.Strings(names) // "" (core) sorts first
	docs := &apiDocs{}
	for _, g := range names {
		vs := versions[g]
		sort.Slice(vs, func(i, j int) bool { return version.CompareKubeAwareVersionStrings(vs[i], vs[j]) > 0 })
		group := &metav1.APIGroup{Name: g}
		for _, v := range vs {
			gv := schema.GroupVersion{Group: g, Version: v}
			group.Versions = append(group.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: v})
			docs.lists = append(docs.lists, &metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: gv.String(), APIResources: byGV[gv],
			})
		}
		group.PreferredVersion = group.Versions[0]
		docs.groups = append(docs.groups, group)
	}
	return docs, nil
}

// resourcesOf returns the resources of group version gv, or a NotFound
// error as an API server answers for a group version it does not serve.
func (d *apiDocs) resourcesOf(gv string) (*metav1.APIResourceList, error) {
	for _, l := range d.lists {
		if l.GroupVersion == gv {
			return l, nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{}, gv)
}

// discoveryClient is the cluster's discovery for Helm's actions: it
// answers from the store at each call, so it is always fresh and there is
// no cache to invalidate. It has no OpenAPI documents.
type discoveryClient struct{ c *Cluster }

var _ discovery.CachedDiscoveryInterface = (*discoveryClient)(nil)

// RESTClient returns a client of the cluster's read-only HTTP API.
func (d *discoveryClient) RESTClient() rest.Interface { return d.c.restClient(schema.GroupVersion{}) }

// ServerGroups returns the served groups.
func (d *discoveryClient) ServerGroups() (*metav1.APIGroupList, error) {
	docs, err := d.c.discover()
	if err != nil {
		return nil, err
	}
	out := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range docs.groups {
		out.Groups = append(out.Groups, *g)
	}
	return out, nil
}

// ServerResourcesForGroupVersion returns the resources of one group
// version, or a NotFound error.
func (d *discoveryClient) ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error) {
	docs, err := d.c.discover()
	if err != nil {
		return nil, err
	}
	return docs.resourcesOf(groupVersion)
}

// ServerGroupsAndResources returns the served groups and their resources.
func (d *discoveryClient) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	docs, err := d.c.discover()
	if err != nil {
		return nil, nil, err
	}
	return docs.groups, docs.lists, nil
}

// ServerPreferredResources returns the resources of each group's
// preferred version (client-go's own selection).
func (d *discoveryClient) ServerPreferredResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredResources(d)
}

// ServerPreferredNamespacedResources returns the namespaced ones of
// ServerPreferredResources.
func (d *discoveryClient) ServerPreferredNamespacedResources() ([]*metav1.APIResourceList, error) {
	return discovery.ServerPreferredNamespacedResources(d)
}

// ServerVersion returns the cluster's Kubernetes version.
func (d *discoveryClient) ServerVersion() (*version.Info, error) {
	if err := d.c.reachable(); err != nil {
		return nil, err
	}
	kv, err := d.c.kubeVersionOf()
	if err != nil {
		return nil, err
	}
	return &version.Info{Major: kv.Major, Minor: kv.Minor, GitVersion: kv.Version}, nil
}

// OpenAPISchema fails: the in-memory cluster has no OpenAPI documents.
func (d *discoveryClient) OpenAPISchema() (*openapi_v2.Document, error) {
	return nil, fmt.Errorf("cluster %s: the in-memory cluster serves no OpenAPI v2 document", d.c.name)
}

// OpenAPIV3 returns a client whose requests fail with NotFound: the
// in-memory cluster has no OpenAPI documents.
func (d *discoveryClient) OpenAPIV3() openapi.Client { return openapi.NewClient(d.RESTClient()) }

// WithLegacy returns d: there is one discovery format.
func (d *discoveryClient) WithLegacy() discovery.DiscoveryInterface { return d }

// Fresh is true: every answer is read from the store.
func (d *discoveryClient) Fresh() bool { return true }

// Invalidate does nothing: there is no cache (see Fresh).
func (d *discoveryClient) Invalidate() {}

// restClientGetter gives Helm's actions the cluster as a real API server
// looks to them: discovery (so an install that creates a chart's CRDs
// renders its templates with the new API versions, as Helm does on a real
// cluster), a REST mapper over it, and a REST config whose transport
// answers reads from the store (so a template's lookup sees the stored
// objects).
type restClientGetter struct{ c *Cluster }

// ToRESTConfig returns the config of the cluster's read-only HTTP API.
func (g restClientGetter) ToRESTConfig() (*rest.Config, error) { return g.c.restConfig(), nil }

// ToDiscoveryClient returns the cluster's discovery.
func (g restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	return &discoveryClient{c: g.c}, nil
}

// ToRESTMapper returns client-go's deferred mapper over the cluster's
// discovery, which Helm resets after it creates CRDs.
func (g restClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	return restmapper.NewDeferredDiscoveryRESTMapper(&discoveryClient{c: g.c}), nil
}
