// Package postrender runs the post-renderers of a release over the
// manifests Helm renders, exactly as Flux's helm-controller does:
//
//   - Kustomize: a release's spec.postRenderers[].kustomize, its patches
//     (strategic merge or JSON 6902, each with an optional target
//     selector) applied in order and then its image changes, by kustomize
//     itself (krusty over an in-memory filesystem, builtin transformers
//     only). A Kustomize value is a Helm post-renderer.
//   - CommonMetadata: spec.commonMetadata, labels and annotations set on
//     every object's metadata, after the user's post-renderers, so no
//     patch can remove them.
//   - OriginLabels: "<group>/name" and "<group>/namespace" labels naming
//     the release that produced an object, last (Flux's origin labels).
//   - Combined: several post-renderers, one after the other.
//
// Build puts them together in that order and returns one Helm
// postrender.PostRenderer for action.Install and action.Upgrade, or nil
// when there is nothing to do. Digest and DigestCommonMetadata give the
// values of Flux's status.observedPostRenderersDigest and
// observedCommonMetadataDigest, computed the way Flux computes them, so a
// reconciler upgrades a release when they change.
//
// # Output
//
// Objects keep the order Helm rendered them in (its install order):
// kustomize's reordering is off, as in Flux. Unlike Flux, every object
// keeps the "# Source: <chart>/templates/<file>" line Helm wrote above it
// (kustomize drops comments; the package puts them back), so helm get
// manifest stays readable. Kustomize rewrites each object with sorted keys
// and drops other comments. The output of a given input is always the same.
//
// # Errors
//
// Build, Kustomize.Validate and every Run return *Error, whose Path names
// what failed in the release spec's terms, e.g.
// "postRenderers[0].kustomize.patches[1]", with the patch's Target and
// text. Kustomize does not say which patch failed; the package finds out by
// replaying growing prefixes of the post-renderer, on the error path only.
// Run does not panic on bad patches or manifests: a panic inside kustomize
// becomes an error.
//
// # Hooks
//
// Helm v3 post-renders only the release manifest, not hooks (nor CRDs from
// the chart's crds/ directory): a caller that wants hooks post-rendered
// has to run the post-renderer over them itself.
package postrender
