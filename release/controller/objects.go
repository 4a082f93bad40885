package controller

import (
	"bytes"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/release"
	"github.com/helmfleet/helmfleet/source"
)

// SourceVersion is the API version of the Flux source objects the
// controller reads and watches (source.toolkit.fluxcd.io/v1).
const SourceVersion = "v1"

// Kinds the controller reads from the cluster it runs on.
var (
	// HelmReleaseGVK is Flux's HelmRelease, helm.toolkit.fluxcd.io/v2.
	HelmReleaseGVK = schema.GroupVersionKind{Group: release.Group, Version: release.Version, Kind: release.Kind}
	// HelmRepositoryGVK is Flux's HelmRepository.
	HelmRepositoryGVK = schema.GroupVersionKind{Group: source.Group, Version: SourceVersion, Kind: source.KindHelmRepository}
	// OCIRepositoryGVK is Flux's OCIRepository.
	OCIRepositoryGVK = schema.GroupVersionKind{Group: source.Group, Version: SourceVersion, Kind: source.KindOCIRepository}
	// HelmChartGVK is Flux's HelmChart.
	HelmChartGVK = schema.GroupVersionKind{Group: source.Group, Version: SourceVersion, Kind: source.KindHelmChart}
)

// newObject returns an empty object of gvk, as the client and the cache
// take it.
func newObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// DecodeError reports a HelmRelease read from the cluster that does not
// decode or validate as a release.Release: its field errors carry the
// field paths and bad values (release.DecodeError, release.ValidationError).
type DecodeError struct {
	// Release is namespace/name of the HelmRelease.
	Release string
	// Err is the decoding or validation error.
	Err error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("HelmRelease %s: invalid spec: %v", e.Release, e.Err)
}

// Unwrap returns the decoding or validation error.
func (e *DecodeError) Unwrap() error { return e.Err }

// toRelease turns a HelmRelease read from the API server into a
// defaulted, validated release.Release. Everything but the status is
// decoded strictly by release.Decode (unknown fields and bad values are
// errors with their field path); the status is the controller's own
// record and is read leniently, so a field a newer writer added does not
// stop the release.
func toRelease(u *unstructured.Unstructured) (*release.Release, error) {
	ref := u.GetNamespace() + "/" + u.GetName()
	data, err := specJSON(u)
	if err != nil {
		return nil, &DecodeError{Release: ref, Err: err}
	}
	objs, err := release.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, &DecodeError{Release: ref, Err: err}
	}
	if len(objs.Releases) != 1 {
		return nil, &DecodeError{Release: ref, Err: fmt.Errorf("decoded %d releases from one %s object", len(objs.Releases), u.GetKind())}
	}
	rel := objs.Releases[0]
	rel.Default()
	if err := rel.Validate(); err != nil {
		return nil, &DecodeError{Release: ref, Err: err}
	}
	if st, ok := u.Object["status"]; ok {
		data, err := json.Marshal(st)
		if err == nil {
			// Lenient on purpose: see above. A status that does not
			// parse at all is dropped, as if the release were new.
			_ = json.Unmarshal(data, &rel.Status)
		}
	}
	return rel, nil
}

// statusObject returns st as the unstructured value of .status.
func statusObject(st release.Status) (map[string]any, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// specJSON is u without its status, as JSON: what release.Decode reads
// strictly (the status is the controllers' record, not the user's).
func specJSON(u *unstructured.Unstructured) ([]byte, error) {
	obj := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k != "status" {
			obj[k] = v
		}
	}
	return json.Marshal(obj)
}
