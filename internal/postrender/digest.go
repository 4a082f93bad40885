package postrender

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The digests are Flux's: the SHA-256 of the JSON encoding (with a trailing
// newline, as json.Encoder writes it) of the HelmRelease fields, so a
// status written by helm-controller compares equal to one written by
// helmfleet for the same spec. The wire types below give the JSON the field
// names, order and omissions of Flux's API types.

type wirePostRenderer struct {
	Kustomize wireKustomize `json:"kustomize"`
}

type wireKustomize struct {
	Patches []wirePatch `json:"patches,omitempty"`
	Images  []wireImage `json:"images,omitempty"`
}

type wirePatch struct {
	Patch  string        `json:"patch,omitempty"`
	Target *wireSelector `json:"target,omitempty"`
}

type wireSelector struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	Name               string `json:"name,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
}

type wireImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName,omitempty"`
	NewTag  string `json:"newTag,omitempty"`
	Digest  string `json:"digest,omitempty"`
}

type wireCommonMetadata struct {
	Annotations map[string]string `json:"annotations,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
}

// Digest returns the digest of a release's kustomize post-renderers,
// "sha256:<hex>", the value of Flux's status.observedPostRenderersDigest:
// a reconciler that finds it differs from the digest recorded at the last
// release upgrades. It depends on every field and on the order of
// renderers, patches and images (order changes the result), not on map
// order. No renderers give "", so a release without post-renderers
// matches a status that never recorded any.
func Digest(renderers []Kustomize) string {
	if len(renderers) == 0 {
		return ""
	}
	w := make([]wirePostRenderer, len(renderers))
	for i, k := range renderers {
		for _, p := range k.Patches {
			wp := wirePatch{Patch: p.Patch}
			if s := p.Target; s != nil {
				ws := wireSelector(*s)
				wp.Target = &ws
			}
			w[i].Kustomize.Patches = append(w[i].Kustomize.Patches, wp)
		}
		for _, img := range k.Images {
			w[i].Kustomize.Images = append(w[i].Kustomize.Images, wireImage(img))
		}
	}
	return digestJSON(w)
}

// DigestCommonMetadata returns the digest of a release's common metadata,
// "sha256:<hex>", the value of Flux's status.observedCommonMetadataDigest.
// Nil, or no labels and no annotations, gives "".
func DigestCommonMetadata(m *CommonMetadata) string {
	if m == nil || (len(m.Labels) == 0 && len(m.Annotations) == 0) {
		return ""
	}
	return digestJSON(wireCommonMetadata{Annotations: m.Annotations, Labels: m.Labels})
}

func digestJSON(v any) string {
	h := sha256.New()
	// The wire types hold only strings, slices and string maps: encoding
	// cannot fail.
	_ = json.NewEncoder(h).Encode(v)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
