package postrender

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// The digests are Flux's: the SHA-256 of the JSON encoding, as
// json.Encoder writes it (trailing newline, HTML escaped), of the
// HelmRelease fields. The package's types carry Flux's JSON tags in Flux's
// field order, so a status written by helm-controller compares equal to
// one written by helmfleet for the same spec.

// postRenderer is Flux's v2.PostRenderer: {"kustomize": {...}}.
type postRenderer struct {
	Kustomize Kustomize `json:"kustomize"`
}

// Digest returns the digest of a release's kustomize post-renderers,
// "sha256:<hex>", the value of Flux's status.observedPostRenderersDigest:
// a reconciler that finds it differs from the digest recorded at the last
// release upgrades. It depends on every field and on the order of
// renderers, patches and images (order changes the result). No renderers
// give "", so a release without post-renderers matches a status that
// never recorded any.
func Digest(renderers []Kustomize) string {
	if len(renderers) == 0 {
		return ""
	}
	w := make([]postRenderer, len(renderers))
	for i, k := range renderers {
		w[i].Kustomize = k
	}
	return digestJSON(w)
}

// DigestCommonMetadata returns the digest of a release's common metadata,
// "sha256:<hex>", the value of Flux's status.observedCommonMetadataDigest;
// map order does not matter. Nil, or no labels and no annotations, gives
// "".
func DigestCommonMetadata(m *CommonMetadata) string {
	if m == nil || (len(m.Labels) == 0 && len(m.Annotations) == 0) {
		return ""
	}
	return digestJSON(m)
}

func digestJSON(v any) string {
	h := sha256.New()
	// The types hold only strings, slices and string maps: encoding cannot
	// fail.
	_ = json.NewEncoder(h).Encode(v)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
