package postrender

import (
	"bytes"
	"fmt"

	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"

	"github.com/helmfleet/helmfleet/internal/kyamlschema"
)

// Run sets m's labels and annotations on the metadata of every rendered
// object, overwriting what the chart or earlier post-renderers set for the
// same keys, with kustomize's builtin label and annotation transformers (as
// Flux does). It implements Helm's postrender.PostRenderer. Order and
// "# Source:" lines are kept as Kustomize.Run keeps them. An m without
// labels and annotations returns renderedManifests unchanged.
func (m CommonMetadata) Run(renderedManifests *bytes.Buffer) (*bytes.Buffer, error) {
	if len(m.Labels) == 0 && len(m.Annotations) == 0 {
		return renderedManifests, nil
	}
	var ts []resmap.Transformer
	if len(m.Labels) > 0 {
		ts = append(ts, labelTransformer(m.Labels))
	}
	if len(m.Annotations) > 0 {
		ts = append(ts, &builtins.AnnotationsTransformerPlugin{
			Annotations: m.Annotations,
			FieldSpecs:  []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}},
		})
	}
	out, err := transform(renderedManifests.Bytes(), ts...)
	if err != nil {
		return nil, &Error{Path: "commonMetadata", Err: maskSecrets(renderedManifests.Bytes(), err)}
	}
	return out, nil
}

// Run sets o's labels on every rendered object. It implements Helm's
// postrender.PostRenderer.
func (o OriginLabels) Run(renderedManifests *bytes.Buffer) (*bytes.Buffer, error) {
	out, err := transform(renderedManifests.Bytes(), labelTransformer(o.Labels()))
	if err != nil {
		return nil, &Error{Path: "originLabels", Err: maskSecrets(renderedManifests.Bytes(), err)}
	}
	return out, nil
}

// labelTransformer sets labels on metadata.labels only: selectors and pod
// templates are left alone, so adding a label never changes which pods a
// Deployment or Service selects.
func labelTransformer(l map[string]string) resmap.Transformer {
	return &builtins.LabelTransformerPlugin{
		Labels:     l,
		FieldSpecs: []kustypes.FieldSpec{{Path: "metadata/labels", CreateIfNotPresent: true}},
	}
}

// transform parses in, runs ts over it and writes it back with its Source
// lines.
func transform(in []byte, ts ...resmap.Transformer) (out *bytes.Buffer, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	kyamlschema.Init() // before renders on several goroutines touch kyaml's schema
	m, err := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()).NewResMapFromBytes(in)
	if err != nil {
		return nil, fmt.Errorf("reading the rendered manifests: %w", err)
	}
	for _, t := range ts {
		if err := t.Transform(m); err != nil {
			return nil, err
		}
	}
	return write(m, indexSources(in))
}
