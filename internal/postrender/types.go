package postrender

// Kustomize is one kustomize post-renderer, the equivalent of a Flux
// HelmRelease's spec.postRenderers[].kustomize. Its patches run first, in
// order, then its image changes. A Kustomize is itself a Helm post-renderer
// (see Run); Build combines several with common metadata.
type Kustomize struct {
	// Patches are strategic merge patches (a YAML object) or JSON 6902
	// patches (a YAML list of operations), applied in order.
	Patches []Patch
	// Images change the name, tag or digest of matching container images.
	Images []Image
}

// Patch is one kustomize patch (Flux's kustomize.Patch).
type Patch struct {
	// Patch is the patch as YAML text: a strategic merge patch, which names
	// its object by apiVersion, kind and metadata.name unless Target is set,
	// or a JSON 6902 patch, which needs a Target.
	Patch string
	// Target selects the objects to patch; nil for a strategic merge patch
	// means the object the patch itself names.
	Target *Selector
}

// Selector selects rendered objects, as kustomize does. Group, Version,
// Kind, Namespace and Name are regular expressions anchored at both ends;
// LabelSelector and AnnotationSelector use Kubernetes label selector syntax.
// Empty fields match everything.
type Selector struct {
	// Group is the API group.
	Group string
	// Version is the API version within the group.
	Version string
	// Kind is the object kind.
	Kind string
	// Namespace is the object namespace.
	Namespace string
	// Name is the object name.
	Name string
	// AnnotationSelector selects by annotations, e.g. "team=web,!skip".
	AnnotationSelector string
	// LabelSelector selects by labels, e.g. "app in (web,api)".
	LabelSelector string
}

// Image changes one container image (Flux's kustomize.Image).
type Image struct {
	// Name is the image name to match, without tag or digest.
	Name string
	// NewName replaces the name.
	NewName string
	// NewTag replaces the tag.
	NewTag string
	// Digest replaces the tag with a digest; NewTag is then ignored.
	Digest string
}

// CommonMetadata adds labels and annotations to the metadata of every
// rendered object (Flux's spec.commonMetadata). It overwrites keys the
// chart or a user patch set. It is a Helm post-renderer itself (see Run);
// Build runs it after the kustomize post-renderers.
type CommonMetadata struct {
	// Labels added to metadata.labels of every object (not to selectors or
	// pod templates).
	Labels map[string]string
	// Annotations added to metadata.annotations of every object.
	Annotations map[string]string
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
