package source

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is source.toolkit.fluxcd.io/v1, the group and version the
// scheme registers the source kinds under.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// SchemeBuilder registers the source kinds (HelmRepository,
// OCIRepository, HelmChart and their lists) under GroupVersion. Most
// callers want AddToScheme.
var SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme registers HelmRepository, OCIRepository and HelmChart (and
// their List kinds) under source.toolkit.fluxcd.io/v1 in s, with the meta
// types a client needs for list and watch options, so that a
// controller-runtime client, cache or fake client, or a client-go REST
// client built on s, reads and writes them as typed objects.
func AddToScheme(s *runtime.Scheme) error { return SchemeBuilder.AddToScheme(s) }

// VersionV1Beta2 is the older API version of the source kinds whose
// documents decode into the same Go types as Version.
const VersionV1Beta2 = "v1beta2"

// KindInfo is one source kind: its name, its Go types, and the versions
// whose documents decode into them. Kinds lists them; AddToScheme and
// release.Decode are both built from that list, so neither knows a source
// kind the other does not.
type KindInfo struct {
	// Kind is the kind's name, e.g. HelmRepository.
	Kind string
	// New returns an empty object of the kind and NewList an empty list
	// of them: the Go types AddToScheme registers under GroupVersion, as
	// Kind and Kind+"List".
	New, NewList func() runtime.Object
	// Versions are the versions of Group whose documents release.Decode
	// reads into New's type: Version first. The scheme registers only
	// Version.
	Versions []string
}

// Kinds returns the source kinds, HelmRepository, OCIRepository and
// HelmChart, in that order, in a new slice.
func Kinds() []KindInfo {
	return []KindInfo{
		{Kind: KindHelmRepository, Versions: []string{Version, VersionV1Beta2},
			New: func() runtime.Object { return &HelmRepository{} }, NewList: func() runtime.Object { return &HelmRepositoryList{} }},
		{Kind: KindOCIRepository, Versions: []string{Version, VersionV1Beta2},
			New: func() runtime.Object { return &OCIRepository{} }, NewList: func() runtime.Object { return &OCIRepositoryList{} }},
		{Kind: KindHelmChart, Versions: []string{Version, VersionV1Beta2},
			New: func() runtime.Object { return &HelmChart{} }, NewList: func() runtime.Object { return &HelmChartList{} }},
	}
}

func addKnownTypes(s *runtime.Scheme) error {
	for _, k := range Kinds() {
		s.AddKnownTypeWithName(GroupVersion.WithKind(k.Kind), k.New())
		s.AddKnownTypeWithName(GroupVersion.WithKind(k.Kind+"List"), k.NewList())
	}
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
