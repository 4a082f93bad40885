package release

import "helm.sh/helm/v3/pkg/postrender"

// postRendererOf returns the post-renderer of rel's spec.postRenderers and
// spec.commonMetadata, nil when there is none.
func postRendererOf(rel *Release) postrender.PostRenderer { return nil }
