package postrender

// The JSON tags of these types are those of Flux's API types, in Flux's
// field order: Digest and DigestCommonMetadata hash their JSON encoding.

// Kustomize is one kustomize post-renderer, the equivalent of a Flux
// HelmRelease's spec.postRenderers[].kustomize. Its patches run first, in
// order, then its image changes. A Kustomize is itself a Helm post-renderer
// (see Run); Build combines several with common metadata.
type Kustomize struct {
	// Patches are strategic merge patches (a YAML object) or JSON 6902
	// patches (a YAML list of operations), applied in order.
	Patches []Patch `json:"patches,omitempty"`
	// Images change the name, tag or digest of matching container images.
	Images []Image `json:"images,omitempty"`
}

// Patch is one kustomize patch (Flux's kustomize.Patch).
type Patch struct {
	// Patch is the patch as YAML text: a strategic merge patch, which names
	// its object by apiVersion, kind and metadata.name unless Target is set,
	// or a JSON 6902 patch, which needs a Target.
	Patch string `json:"patch,omitempty"`
	// Target selects the objects to patch; nil for a strategic merge patch
	// means the object the patch itself names.
	Target *Selector `json:"target,omitempty"`
}

// Selector selects rendered objects, as kustomize does. Group, Version,
// Kind, Namespace and Name are regular expressions anchored at both ends;
// LabelSelector and AnnotationSelector use Kubernetes label selector syntax.
// Empty fields match everything.
type Selector struct {
	// Group is the API group.
	Group string `json:"group,omitempty"`
	// Version is the API version within the group.
	Version string `json:"version,omitempty"`
	// Kind is the object kind.
	Kind string `json:"kind,omitempty"`
	// Namespace is the object namespace.
	Namespace string `json:"namespace,omitempty"`
	// Name is the object name.
	Name string `json:"name,omitempty"`
	// AnnotationSelector selects by annotations, e.g. "team=web,!skip".
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	// LabelSelector selects by labels, e.g. "app in (web,api)".
	LabelSelector string `json:"labelSelector,omitempty"`
}

// Image changes one container image (Flux's kustomize.Image).
type Image struct {
	// Name is the image name to match, without tag or digest.
	Name string `json:"name"`
	// NewName replaces the name.
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the tag.
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the tag with a digest; NewTag is then ignored.
	Digest string `json:"digest,omitempty"`
}

// CommonMetadata adds labels and annotations to the metadata of every
// rendered object (Flux's spec.commonMetadata). It overwrites keys the
// chart or a user patch set. It is a Helm post-renderer itself (see Run);
// Build runs it after the kustomize post-renderers.
type CommonMetadata struct {
	// Annotations added to metadata.annotations of every object.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels added to metadata.labels of every object (not to selectors or
	// pod templates).
	Labels map[string]string `json:"labels,omitempty"`
}

// OriginLabels labels every rendered object with the object that produced
// it, as Flux labels objects "helm.toolkit.fluxcd.io/name" and
// "helm.toolkit.fluxcd.io/namespace". Build runs it last (WithOriginLabels).
type OriginLabels struct {
	// Group prefixes the label keys, e.g. "helm.toolkit.fluxcd.io".
	Group string
	// Namespace is the value of the "<Group>/namespace" label.
	Namespace string
	// Name is the value of the "<Group>/name" label.
	Name string
}

// Labels returns the labels o adds.
func (o OriginLabels) Labels() map[string]string {
	return map[string]string{
		o.Group + "/name":      o.Name,
		o.Group + "/namespace": o.Namespace,
	}
}
