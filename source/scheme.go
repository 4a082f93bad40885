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

func addKnownTypes(s *runtime.Scheme) error {
	for _, kt := range []struct {
		kind string
		obj  runtime.Object
	}{
		{KindHelmRepository, &HelmRepository{}},
		{KindHelmRepository + "List", &HelmRepositoryList{}},
		{KindOCIRepository, &OCIRepository{}},
		{KindOCIRepository + "List", &OCIRepositoryList{}},
		{KindHelmChart, &HelmChart{}},
		{KindHelmChart + "List", &HelmChartList{}},
	} {
		s.AddKnownTypeWithName(GroupVersion.WithKind(kt.kind), kt.obj)
	}
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
