package reconcile

import (
	helmpostrender "helm.sh/helm/v3/pkg/postrender"

	"github.com/helmfleet/helmfleet/internal/postrender"
	"github.com/helmfleet/helmfleet/release"
)

// postRenderSpec converts spec.postRenderers and spec.commonMetadata to
// the post-render package's types, one entry per index so that error
// paths match the spec.
func postRenderSpec(rel *release.Release) ([]postrender.Kustomize, *postrender.CommonMetadata) {
	var ks []postrender.Kustomize
	for _, pr := range rel.Spec.PostRenderers {
		var k postrender.Kustomize
		if pr.Kustomize != nil {
			for _, p := range pr.Kustomize.Patches {
				pp := postrender.Patch{Patch: p.Patch}
				if t := p.Target; t != nil {
					pp.Target = &postrender.Selector{Group: t.Group, Version: t.Version, Kind: t.Kind, Namespace: t.Namespace,
						Name: t.Name, AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector}
				}
				k.Patches = append(k.Patches, pp)
			}
			for _, im := range pr.Kustomize.Images {
				k.Images = append(k.Images, postrender.Image{Name: im.Name, NewName: im.NewName, NewTag: im.NewTag, Digest: im.Digest})
			}
		}
		ks = append(ks, k)
	}
	var cm *postrender.CommonMetadata
	if c := rel.Spec.CommonMetadata; c != nil {
		cm = &postrender.CommonMetadata{Labels: c.Labels, Annotations: c.Annotations}
	}
	return ks, cm
}

// postRendererOf builds the post-renderer of rel: its kustomize
// post-renderers in order, then common metadata, then (with origin) the
// labels naming the Release, as Flux orders them. It returns nil when
// there is nothing to do.
func postRendererOf(rel *release.Release, origin bool) (helmpostrender.PostRenderer, error) {
	ks, cm := postRenderSpec(rel)
	var opts []postrender.Option
	if origin {
		opts = append(opts, postrender.WithOriginLabels(release.Group, rel.Namespace, rel.Name))
	}
	return postrender.Build(ks, cm, opts...)
}

func postRenderersDigest(rel *release.Release) string {
	ks, _ := postRenderSpec(rel)
	return postrender.Digest(ks)
}

func commonMetadataDigest(rel *release.Release) string {
	_, cm := postRenderSpec(rel)
	return postrender.DigestCommonMetadata(cm)
}
