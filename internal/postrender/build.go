package postrender

import (
	"bytes"
	"fmt"

	helmpostrender "helm.sh/helm/v3/pkg/postrender"
)

// Combined runs post-renderers one after the other, each over the output of
// the one before, and stops at the first error. It implements Helm's
// postrender.PostRenderer.
type Combined []helmpostrender.PostRenderer

// Run runs every post-renderer of c in order.
func (c Combined) Run(renderedManifests *bytes.Buffer) (*bytes.Buffer, error) {
	out := renderedManifests
	for _, r := range c {
		var err error
		if out, err = r.Run(out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Option is an optional setting of Build.
type Option func(*options)

type options struct {
	origin *OriginLabels
}

// WithOriginLabels makes Build label every object "<group>/name: <name>"
// and "<group>/namespace: <namespace>" last, after the common metadata, as
// Flux labels the objects of a HelmRelease (group
// "helm.toolkit.fluxcd.io"), so neither a patch nor commonMetadata can
// change them.
func WithOriginLabels(group, namespace, name string) Option {
	return func(o *options) { o.origin = &OriginLabels{Group: group, Namespace: namespace, Name: name} }
}

// Build returns the post-renderer of a release, in Flux's order: the
// kustomize post-renderers in the order given, then common (so no user
// patch can remove or change common labels and annotations), then the
// origin labels if asked for. It validates every kustomize post-renderer
// first (see Kustomize.Validate); errors are *Error with paths such as
// "postRenderers[1].kustomize.patches[0]".
//
// Build returns nil, nil when there is nothing to do: no kustomize
// post-renderer with a patch or image, no common labels or annotations and
// no origin labels. Pass the result as action.Install.PostRenderer and
// action.Upgrade.PostRenderer; Helm v3 does not post-render hooks.
func Build(renderers []Kustomize, common *CommonMetadata, opts ...Option) (helmpostrender.PostRenderer, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	var c Combined
	for i, k := range renderers {
		prefix := fmt.Sprintf("postRenderers[%d].", i)
		if err := k.Validate(); err != nil {
			return nil, withPrefix(prefix, err)
		}
		if len(k.Patches) > 0 || len(k.Images) > 0 {
			c = append(c, atPath{prefix: prefix, r: k})
		}
	}
	if common != nil && (len(common.Labels) > 0 || len(common.Annotations) > 0) {
		c = append(c, *common)
	}
	if o.origin != nil {
		c = append(c, *o.origin)
	}
	switch len(c) {
	case 0:
		return nil, nil
	case 1:
		return c[0], nil
	}
	return c, nil
}

// atPath prefixes the Path of the errors of r, which is the renderer at
// that place in the release spec.
type atPath struct {
	prefix string
	r      helmpostrender.PostRenderer
}

func (a atPath) Run(renderedManifests *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := a.r.Run(renderedManifests)
	if err != nil {
		return nil, withPrefix(a.prefix, err)
	}
	return out, nil
}
