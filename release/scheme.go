package release

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is helm.toolkit.fluxcd.io/v2, the group and version the
// scheme registers a Release under.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// KustomizationGroupVersion is kustomize.toolkit.fluxcd.io/v1, the group
// and version the scheme registers a Kustomization under.
var KustomizationGroupVersion = schema.GroupVersion{Group: KustomizationGroup, Version: KustomizationVersion}

// SchemeBuilder registers Release as HelmRelease and ReleaseList as
// HelmReleaseList under GroupVersion, and Kustomization and
// KustomizationList under KustomizationGroupVersion. Most callers want
// AddToScheme.
var SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme registers Release as HelmRelease and ReleaseList as
// HelmReleaseList under helm.toolkit.fluxcd.io/v2, and Kustomization and
// KustomizationList under kustomize.toolkit.fluxcd.io/v1, in s, with the meta
// types a client needs for list and watch options, so that a
// controller-runtime client, cache or fake client, or a client-go REST
// client built on s, reads and writes Releases as typed objects. The
// source kinds a Release refers to are registered by source.AddToScheme.
func AddToScheme(s *runtime.Scheme) error { return SchemeBuilder.AddToScheme(s) }
