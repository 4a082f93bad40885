package memory

import (
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

// restMapper maps kinds to resources: the built-in kinds of client-go's
// scheme from the start, and the kinds of every CustomResourceDefinition
// stored in the cluster, like a real API server's discovery.
type restMapper struct {
	mu   sync.RWMutex
	base *meta.DefaultRESTMapper // builtInMapper's, shared and only read
	crds map[schema.GroupVersionKind]*meta.RESTMapping
	// status holds the CRD kinds whose version declares
	// subresources.status.
	status map[schema.GroupVersionKind]bool
}

func newRESTMapper(base *meta.DefaultRESTMapper) *restMapper {
	return &restMapper{base: base, crds: map[schema.GroupVersionKind]*meta.RESTMapping{}, status: map[schema.GroupVersionKind]bool{}}
}

// builtInMapper maps the built-in kinds of client-go's scheme and
// CustomResourceDefinition. Nothing writes to it once made, so clusters
// sharing a Schemas share it.
func builtInMapper() *meta.DefaultRESTMapper {
	var gvs []schema.GroupVersion
	seen := map[schema.GroupVersion]bool{}
	kinds := scheme.Scheme.AllKnownTypes()
	for gvk := range kinds {
		if !seen[gvk.GroupVersion()] {
			seen[gvk.GroupVersion()] = true
			gvs = append(gvs, gvk.GroupVersion())
		}
	}
	sort.Slice(gvs, func(i, j int) bool { return gvs[i].String() < gvs[j].String() })
	m := meta.NewDefaultRESTMapper(gvs)
	for gvk := range kinds {
		if gvk.Version == "__internal" || strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") ||
			gvk.Kind == "WatchEvent" || gvk.Kind == "Status" || gvk.Kind == "APIVersions" || gvk.Kind == "APIGroupList" ||
			gvk.Kind == "APIGroup" || gvk.Kind == "APIResourceList" || gvk.Kind == "Event" && gvk.Group == "" && gvk.Version == "" {
			continue
		}
		scope := meta.RESTScopeNamespace
		if clusterScoped[gvk.Kind] {
			scope = meta.RESTScopeRoot
		}
		m.Add(gvk, scope)
	}
	// CustomResourceDefinitions are not in client-go's scheme.
	m.Add(crdGVK, meta.RESTScopeRoot)
	return m
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// mapping returns the REST mapping of gvk, or a meta.NoKindMatchError.
func (m *restMapper) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m.mu.RLock()
	cm, ok := m.crds[gvk]
	m.mu.RUnlock()
	if ok {
		return cm, nil
	}
	return m.base.RESTMapping(gvk.GroupKind(), gvk.Version)
}

// learnCRD registers (or with remove, forgets) the kinds a stored
// CustomResourceDefinition serves.
func (m *restMapper) learnCRD(crd *unstructured.Unstructured, remove bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	scopeName, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	scope := meta.RESTScopeNamespace
	if scopeName == "Cluster" {
		scope = meta.RESTScopeRoot
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range versions {
		vm, _ := v.(map[string]any)
		name, _ := vm["name"].(string)
		if name == "" || kind == "" {
			continue
		}
		gvk := schema.GroupVersionKind{Group: group, Version: name, Kind: kind}
		if remove {
			delete(m.crds, gvk)
			delete(m.status, gvk)
			continue
		}
		status, _, _ := unstructured.NestedFieldNoCopy(vm, "subresources", "status")
		m.status[gvk] = status != nil
		m.crds[gvk] = &meta.RESTMapping{
			Resource:         schema.GroupVersionResource{Group: group, Version: name, Resource: plural},
			GroupVersionKind: gvk,
			Scope:            scope,
		}
	}
}

// crdStatus reports whether gvk is served by a stored CRD (crd) and
// whether that CRD version declares a status subresource (status).
func (m *restMapper) crdStatus(gvk schema.GroupVersionKind) (status, crd bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	_, crd = m.crds[gvk]
	return m.status[gvk], crd
}

// kindFor returns the kind served as gvr.
func (m *restMapper) kindFor(gvr schema.GroupVersionResource) (schema.GroupVersionKind, error) {
	m.mu.RLock()
	for gvk, cm := range m.crds {
		if cm.Resource == gvr {
			m.mu.RUnlock()
			return gvk, nil
		}
	}
	m.mu.RUnlock()
	return m.base.KindFor(gvr)
}
