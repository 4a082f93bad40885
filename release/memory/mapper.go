package memory

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// clusterScoped lists the built-in kinds that have no namespace. Every
// other kind known to client-go's scheme is namespaced.
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole": true, "ClusterRoleBinding": true, "CustomResourceDefinition": true,
	"StorageClass": true, "CSIDriver": true, "CSINode": true, "VolumeAttachment": true,
	"PriorityClass": true, "RuntimeClass": true, "IngressClass": true,
	"ValidatingWebhookConfiguration": true, "MutatingWebhookConfiguration": true,
	"ValidatingAdmissionPolicy": true, "ValidatingAdmissionPolicyBinding": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionPolicyBinding": true,
	"APIService": true, "CertificateSigningRequest": true, "ClusterTrustBundle": true,
	"FlowSchema": true, "PriorityLevelConfiguration": true, "IPAddress": true,
	"ServiceCIDR": true, "DeviceClass": true, "ResourceSlice": true,
	"VolumeAttributesClass": true, "StorageVersionMigration": true,
	"SelfSubjectReview": true, "TokenReview": true, "SubjectAccessReview": true,
	"SelfSubjectAccessReview": true, "SelfSubjectRulesReview": true,
}

// servedKind is one kind a cluster serves, as discovery lists it.
type servedKind struct {
	gvk              schema.GroupVersionKind
	plural, singular string
	namespaced       bool
	// shortNames and categories come from a CRD's names.
	shortNames, categories []string
}

// crdKind is a kind a stored CustomResourceDefinition serves.
type crdKind struct {
	mapping *meta.RESTMapping
	res     servedKind
	// status: the CRD version declares subresources.status.
	status bool
}

// restMapper maps kinds to resources: the built-in kinds from the start,
// and the kinds of every CustomResourceDefinition stored in the cluster,
// like a real API server's discovery.
type restMapper struct {
	mu       sync.RWMutex
	base     *meta.DefaultRESTMapper // builtInMapper's, shared and only read
	builtins []servedKind            // builtInMapper's, shared and only read
	crds     map[schema.GroupVersionKind]crdKind
	// served names what crds serve (kinds, names, scope), so that clusters
	// serving the same kinds share what discovery derives from them; ""
	// when there are none, stale when servedOK is false.
	served   string
	servedOK bool
}

func newRESTMapper(base *meta.DefaultRESTMapper, builtins []servedKind) *restMapper {
	return &restMapper{base: base, builtins: builtins, crds: map[schema.GroupVersionKind]crdKind{}}
}

// notServed lists kinds of client-go's scheme that no API server serves as
// resources of their own: subresource bodies and internal records.
var notServed = map[string]bool{
	"WatchEvent": true, "Status": true, "APIVersions": true, "APIGroupList": true, "APIGroup": true,
	"APIResourceList": true, "TokenRequest": true, "Scale": true, "Eviction": true, "PodStatusResult": true,
	"RangeAllocation": true, "SerializedReference": true, "ConversionReview": true,
}

// builtInMapper maps the built-in kinds an API server of the libraries'
// release serves by default: the kinds of client-go's scheme in GA
// versions (v1, v2: a current API server serves no alpha or beta version
// unless told to, and the older betas are gone), plus
// CustomResourceDefinition and APIService, which client-go's scheme does
// not hold. It returns them as discovery lists them, sorted by group,
// version and kind, too. Nothing writes to either once made, so clusters
// sharing a Schemas share them.
func builtInMapper() (*meta.DefaultRESTMapper, []servedKind) {
	var gvks []schema.GroupVersionKind
	for gvk := range scheme.Scheme.AllKnownTypes() {
		if !gaVersion(gvk.Version) || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") || notServed[gvk.Kind] {
			continue
		}
		gvks = append(gvks, gvk)
	}
	// Neither is in client-go's scheme.
	gvks = append(gvks, crdGVK, apiServiceGVK)
	sort.Slice(gvks, func(i, j int) bool { return gvkLess(gvks[i], gvks[j]) })
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	for _, gvk := range gvks {
		if !seen[gvk.GroupVersion()] {
			seen[gvk.GroupVersion()] = true
			gvs = append(gvs, gvk.GroupVersion())
		}
	}
	m := meta.NewDefaultRESTMapper(gvs)
	resources := make([]servedKind, 0, len(gvks))
	for _, gvk := range gvks {
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.Kind] {
			scope = meta.RESTScopeRoot
		}
		m.Add(gvk, scope)
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		resources = append(resources, servedKind{gvk: gvk, plural: plural.Resource, singular: singular.Resource, namespaced: scope == meta.RESTScopeNamespace})
	}
	return m, resources
}

// gaVersion reports whether version names a GA API version (v1, v2, …).
func gaVersion(version string) bool {
	n := strings.TrimPrefix(version, "v")
	if n == version || n == "" {
		return false
	}
	for _, r := range n {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func gvkLess(a, b schema.GroupVersionKind) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Version != b.Version {
		return a.Version < b.Version
	}
	return a.Kind < b.Kind
}

var (
	crdGVK        = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	apiServiceGVK = schema.GroupVersionKind{Group: "apiregistration.k8s.io", Version: "v1", Kind: "APIService"}
)

// mapping returns the REST mapping of gvk, or a meta.NoKindMatchError.
func (m *restMapper) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m.mu.RLock()
	ck, ok := m.crds[gvk]
	m.mu.RUnlock()
	if ok {
		return ck.mapping, nil
	}
	return m.base.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// learnCRD registers (or with remove, forgets) the kinds a stored
// CustomResourceDefinition serves: those of its versions with served
// true.
func (m *restMapper) learnCRD(crd *unstructured.Unstructured, remove bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	names, _, _ := unstructured.NestedMap(crd.Object, "spec", "names")
	kind, _ := names["kind"].(string)
	plural, _ := names["plural"].(string)
	singular, _ := names["singular"].(string)
	if singular == "" {
		singular = strings.ToLower(kind)
	}
	shortNames, _, _ := unstructured.NestedStringSlice(names, "shortNames")
	categories, _, _ := unstructured.NestedStringSlice(names, "categories")
	scopeName, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	scope := meta.RESTScopeNamespace
	if scopeName == "Cluster" {
		scope = meta.RESTScopeRoot
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.servedOK = false
	// Versions a CRD no longer lists, or no longer serves, go too.
	for gvk := range m.crds {
		if gvk.Group == group && gvk.Kind == kind {
			delete(m.crds, gvk)
		}
	}
	if remove {
		return
	}
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if served, ok := vm["served"].(bool); name == "" || kind == "" || (ok && !served) {
			continue
		}
		gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
		status, _, _ := unstructured.NestedFieldNoCopy(vm, "subresources", "status")
		m.crds[gvk] = crdKind{
			mapping: &meta.RESTMapping{
				Resource:         schema.GroupVersionResource{Group: group, Version: name, Resource: plural},
				GroupVersionKind: gvk,
				Scope:            scope,
			},
			res: servedKind{
				gvk: gvk, plural: plural, singular: singular, namespaced: scope == meta.RESTScopeNamespace,
				shortNames: shortNames, categories: categories,
			},
			status: status != nil,
		}
	}
}

// crdStatus reports whether gvk is served by a stored CRD (crd) and
// whether that CRD version declares a status subresource (status).
func (m *restMapper) crdStatus(gvk schema.GroupVersionKind) (status, crd bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ck, crd := m.crds[gvk]
	return ck.status, crd
}

// resources returns every kind served now: the built-in ones, then those
// of stored CRDs sorted by group, version and kind.
func (m *restMapper) resources() []servedKind {
	m.mu.RLock()
	out := make([]servedKind, 0, len(m.builtins)+len(m.crds))
	out = append(out, m.builtins...)
	for _, ck := range m.crds {
		out = append(out, ck.res)
	}
	m.mu.RUnlock()
	crds := out[len(m.builtins):]
	sort.Slice(crds, func(i, j int) bool { return gvkLess(crds[i].gvk, crds[j].gvk) })
	return out
}

// kindFor returns the kind served as gvr.
func (m *restMapper) kindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	m.mu.RLock()
	for gvk, ck := range m.crds {
		if ck.mapping.Resource == gvr {
			m.mu.RUnlock()
			return gvk, nil
		}
	}
	m.mu.RUnlock()
	return m.base.KindFor(gvr)
}

// servedKey returns a string equal for two mappers exactly when their
// stored CRDs serve the same kinds under the same names and scopes (""
// when they serve none).
func (m *restMapper) servedKey() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.servedOK {
		return m.served
	}
	kinds := make([]servedKind, 0, len(m.crds))
	for _, ck := range m.crds {
		kinds = append(kinds, ck.res)
	}
	sort.Slice(kinds, func(i, j int) bool { return gvkLess(kinds[i].gvk, kinds[j].gvk) })
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "%q %q %q %t %q %q\n", k.gvk.String(), k.plural, k.singular, k.namespaced, k.shortNames, k.categories)
	}
	m.served, m.servedOK = b.String(), true
	return m.served
}
