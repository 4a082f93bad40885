package controller

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// Kinds the controller reads from the cluster it runs on, as typed
// objects: release.Release and the source package's kinds.
var (
	// HelmReleaseGVK is Flux's HelmRelease, helm.toolkit.fluxcd.io/v2.
	HelmReleaseGVK = release.GroupVersion.WithKind(release.Kind)
	// HelmRepositoryGVK is Flux's HelmRepository.
	HelmRepositoryGVK = source.GroupVersion.WithKind(source.KindHelmRepository)
	// OCIRepositoryGVK is Flux's OCIRepository.
	OCIRepositoryGVK = source.GroupVersion.WithKind(source.KindOCIRepository)
	// HelmChartGVK is Flux's HelmChart.
	HelmChartGVK = source.GroupVersion.WithKind(source.KindHelmChart)
)

// AddToScheme registers the kinds the controller reads (release.Release
// as HelmRelease, and the source kinds) in s: add it to the manager's
// scheme, beside client-go's.
func AddToScheme(s *runtime.Scheme) error {
	return errors.Join(release.AddToScheme(s), source.AddToScheme(s))
}

// schemeError says which kind a scheme lacks.
func schemeError(s *runtime.Scheme, gvks ...schema.GroupVersionKind) error {
	for _, gvk := range gvks {
		if !s.Recognizes(gvk) {
			return fmt.Errorf("controller: the manager's scheme does not know %s: call controller.AddToScheme on it", gvk)
		}
	}
	return nil
}

// managerSchemeError says which kind mgr's scheme lacks: HelmRelease,
// and with sources the source kinds a Resolver reads.
func managerSchemeError(mgr interface{ GetScheme() *runtime.Scheme }, sources bool) error {
	if err := schemeError(mgr.GetScheme(), HelmReleaseGVK); err != nil || !sources {
		return err
	}
	return schemeError(mgr.GetScheme(), HelmRepositoryGVK, OCIRepositoryGVK, HelmChartGVK)
}

// InvalidSpecError reports a HelmRelease that does not validate as a
// release.Release; its field errors carry the field paths and bad values
// (release.ValidationError).
type InvalidSpecError struct {
	// Release is namespace/name of the HelmRelease.
	Release string
	// Err is the validation error.
	Err error
}

func (e *InvalidSpecError) Error() string {
	return fmt.Sprintf("HelmRelease %s: invalid spec: %v", e.Release, e.Err)
}

// Unwrap returns the validation error.
func (e *InvalidSpecError) Unwrap() error { return e.Err }

// prepare returns a defaulted copy of obj, validated: what the
// reconciler runs. The CRD's schema checks types; Validate checks what
// a schema cannot (exactly one of chart and chartRef, paths, names).
func prepare(obj *release.Release) (*release.Release, error) {
	rel := obj.DeepCopy()
	rel.Default()
	if err := rel.Validate(); err != nil {
		return nil, &InvalidSpecError{Release: obj.Namespace + "/" + obj.Name, Err: err}
	}
	return rel, nil
}
