package release

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/helmfleet/helmfleet/internal/strictyaml"
	"github.com/helmfleet/helmfleet/policy"
	"github.com/helmfleet/helmfleet/source"
)

// kind is one kind helmfleet reads: a row of the table (kinds) that both
// Decode and the schemes are built from.
type kind struct {
	// gk is the kind's API group and name.
	gk schema.GroupKind
	// served is the version the Go types model, the one a scheme
	// registers object and list under.
	served string
	// object and list return empty values of the kind's Go types; nil
	// for a kind no scheme registers.
	object, list func() runtime.Object
	// own is true for a kind AddToScheme registers; the source kinds
	// are registered by source.AddToScheme, from the same source.Kinds.
	own bool
	// decode maps every version Decode reads to the function that
	// decodes (and, for an older version, converts) such a document.
	decode map[string]decodeFunc
}

// gvk is the kind at its served version.
func (k kind) gvk() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: k.gk.Group, Version: k.served, Kind: k.gk.Kind}
}

// kinds is the table of every kind helmfleet reads, in a new slice:
// HelmRelease (v2; v2beta2 and v2beta1 converted), Kustomization (v1),
// the source kinds of source.Kinds (v1, v1beta2) and Karmada's four
// policy kinds (v1alpha1). Decode reads every version of every row;
// AddToScheme registers the served version of HelmRelease and
// Kustomization with their List kinds, source.AddToScheme that of the
// source kinds. Karmada's policies are decoded only: their Go types are
// not runtime.Objects and no scheme registers them.
//
// A kind is added as one row here (for a source kind, one entry of
// source.Kinds and one adder in sourceAdders) and one field in Objects.
//
// The two paths do not give spec.values (and every other map[string]any
// field) the same numbers: Decode reads them as encoding/json does, every
// number a float64, as Helm reads a values file; a client built on the
// scheme decodes them with apimachinery's codec, whole numbers as int64.
// The engine renders both alike (release/controller's
// TestInlineValuesNumbersRenderAlikeThroughCodecAndDecode); which one
// users should see is a decision of its own, not made here.
func kinds() []kind {
	ks := []kind{
		{
			gk: schema.GroupKind{Group: Group, Kind: Kind}, served: Version, own: true,
			object: func() runtime.Object { return &Release{} }, list: func() runtime.Object { return &ReleaseList{} },
			decode: map[string]decodeFunc{
				Version:        into(func(o *Objects, r *Release) { o.Releases = append(o.Releases, r) }),
				VersionV2Beta2: converted(VersionV2Beta2, convertV2Beta2),
				VersionV2Beta1: converted(VersionV2Beta1, convertV2Beta1),
			},
		},
		{
			gk: schema.GroupKind{Group: KustomizationGroup, Kind: KustomizationKind}, served: KustomizationVersion, own: true,
			object: func() runtime.Object { return &Kustomization{} }, list: func() runtime.Object { return &KustomizationList{} },
			decode: versions(into(func(o *Objects, k *Kustomization) { o.Kustomizations = append(o.Kustomizations, k) }), KustomizationVersion),
		},
	}
	adders := sourceAdders()
	for _, sk := range source.Kinds() {
		ks = append(ks, kind{
			gk: schema.GroupKind{Group: source.Group, Kind: sk.Kind}, served: source.Version,
			object: sk.New, list: sk.NewList,
			decode: versions(adders[sk.Kind], sk.Versions...),
		})
	}
	ks = append(ks,
		kind{gk: schema.GroupKind{Kind: "ConfigMap"}, served: "v1", decode: versions(plain[corev1.ConfigMap](false), "v1")},
		kind{gk: schema.GroupKind{Kind: "Secret"}, served: "v1", decode: versions(plain[corev1.Secret](true), "v1")},
		kind{gk: schema.GroupKind{Kind: "Namespace"}, served: "v1", decode: versions(plain[corev1.Namespace](false), "v1")},
	)
	karmadaVersion := schema.FromAPIVersionAndKind(policy.GroupVersion, "").Version
	for _, pk := range []struct {
		kind   string
		decode decodeFunc
	}{
		{policy.KindPropagationPolicy, into(func(o *Objects, p *policy.PropagationPolicy) {
			o.Policies.Propagation = append(o.Policies.Propagation, *p)
		})},
		{policy.KindClusterPropagationPolicy, into(func(o *Objects, p *policy.ClusterPropagationPolicy) {
			o.Policies.ClusterPropagation = append(o.Policies.ClusterPropagation, *p)
		})},
		{policy.KindOverridePolicy, into(func(o *Objects, p *policy.OverridePolicy) {
			o.Policies.Override = append(o.Policies.Override, *p)
		})},
		{policy.KindClusterOverridePolicy, into(func(o *Objects, p *policy.ClusterOverridePolicy) {
			o.Policies.ClusterOverride = append(o.Policies.ClusterOverride, *p)
		})},
	} {
		gk := schema.FromAPIVersionAndKind(policy.GroupVersion, pk.kind).GroupKind()
		ks = append(ks, kind{gk: gk, served: karmadaVersion, decode: versions(pk.decode, karmadaVersion)})
	}
	return ks
}

// plain returns a decodeFunc that checks a core object against its
// Kubernetes type T strictly (unknown fields, wrong types) and keeps it in
// Objects.Plain as an unstructured object. For a Secret, the problems
// under data and stringData say where but neither quote the value nor
// pass on the decoder's message, which may.
func plain[T any](secret bool) decodeFunc {
	return func(data []byte, tree any, objs *Objects) ([]FieldError, *Objects) {
		var errs []FieldError
		if secret {
			errs = secretData(tree)
		}
		if len(errs) == 0 {
			errs = strictyaml.UnmarshalParsed(data, tree, new(T))
		}
		if len(errs) == 0 {
			u := &unstructured.Unstructured{}
			err := u.UnmarshalJSON(data)
			switch {
			case err == nil:
				objs.Plain = append(objs.Plain, u)
				return nil, nil
			case secret:
				errs = []FieldError{{Message: "cannot read the object; " + ErrWithheld.Error()}}
			default:
				errs = []FieldError{{Message: "cannot read the object: " + err.Error()}}
			}
		}
		if secret {
			for i := range errs {
				if p := errs[i].Path; p == "data" || p == "stringData" || strings.HasPrefix(p, "data.") || strings.HasPrefix(p, "data[") ||
					strings.HasPrefix(p, "stringData.") || strings.HasPrefix(p, "stringData[") {
					errs[i].Value, errs[i].Message = "", "invalid value; "+ErrWithheld.Error()
				}
			}
		}
		return errs, nil
	}
}

// secretData reports the values of a Secret's data that are strings but
// not base64, by key, in key order; the decoder's own error would name
// neither the key nor the path.
func secretData(tree any) []FieldError {
	obj, _ := tree.(map[string]any)
	data, _ := obj["data"].(map[string]any)
	var errs []FieldError
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if v, ok := data[k].(string); ok {
			if _, err := base64.StdEncoding.DecodeString(v); err != nil {
				errs = append(errs, FieldError{Path: "data." + k, Message: "is not base64"})
			}
		}
	}
	return errs
}

// sourceAdders decodes each source kind, by name, into its field of
// Objects.
func sourceAdders() map[string]decodeFunc {
	return map[string]decodeFunc{
		source.KindHelmRepository: into(func(o *Objects, r *source.HelmRepository) {
			o.HelmRepositories = append(o.HelmRepositories, r)
		}),
		source.KindOCIRepository: into(func(o *Objects, r *source.OCIRepository) {
			o.OCIRepositories = append(o.OCIRepositories, r)
		}),
		source.KindHelmChart: into(func(o *Objects, c *source.HelmChart) {
			o.HelmCharts = append(o.HelmCharts, c)
		}),
	}
}

// versions maps each of vs to f.
func versions(f decodeFunc, vs ...string) map[string]decodeFunc {
	m := make(map[string]decodeFunc, len(vs))
	for _, v := range vs {
		m[v] = f
	}
	return m
}

// decoders is the registry Decode looks documents up in: API group and
// kind, then version, to the function that decodes such a document; it
// is built from kinds.
func decoders() map[schema.GroupKind]map[string]decodeFunc {
	ks := kinds()
	m := make(map[schema.GroupKind]map[string]decodeFunc, len(ks))
	for _, k := range ks {
		m[k.gk] = k.decode
	}
	return m
}

// addKnownTypes registers the kinds of kinds that are release's own, at
// their served version, with their List kinds.
func addKnownTypes(s *runtime.Scheme) error {
	for _, k := range kinds() {
		if !k.own {
			continue
		}
		gv := k.gvk().GroupVersion()
		s.AddKnownTypeWithName(k.gvk(), k.object())
		s.AddKnownTypeWithName(gv.WithKind(k.gk.Kind+"List"), k.list())
		metav1.AddToGroupVersion(s, gv)
	}
	return nil
}
