package postrender

import (
	"bytes"
	"testing"

	"sigs.k8s.io/kustomize/api/builtins"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
)

// benchKustomize is a typical post-renderer: two patches and an image.
var benchKustomize = Kustomize{
	Patches: []Patch{
		{Patch: replicas3},
		{Patch: "- op: replace\n  path: /spec/type\n  value: NodePort\n", Target: &Selector{Kind: "Service", Name: "web"}},
	},
	Images: []Image{{Name: "ghcr.io/example/web", NewTag: "1.5.0"}},
}

// fluxRun is the baseline: what Flux's helm-controller does per run (the
// same kustomization through krusty, output with resmap.AsYaml), without
// helmfleet's Source lines.
func fluxRun(k Kustomize, in []byte) ([]byte, error) {
	m, err := runKrusty(in, k.kustomization(len(k.Patches), len(k.Images)),
		&krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()})
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

func BenchmarkKustomizeRun(b *testing.B) {
	in := rendered(b).Bytes()
	b.Run("helmfleet", func(b *testing.B) {
		for b.Loop() {
			if _, err := benchKustomize.Run(bytes.NewBuffer(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("flux", func(b *testing.B) {
		for b.Loop() {
			if _, err := fluxRun(benchKustomize, in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCommonMetadataRun(b *testing.B) {
	in := rendered(b).Bytes()
	m := CommonMetadata{Labels: map[string]string{"env": "prod"}, Annotations: map[string]string{"owner": "platform"}}
	b.Run("helmfleet", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Run(bytes.NewBuffer(in)); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Flux's CommonRenderer: the same transformers, output with
	// resmap.AsYaml, no Source lines.
	b.Run("flux", func(b *testing.B) {
		for b.Loop() {
			rm, err := resmap.NewFactory(provider.NewDefaultDepProvider().GetResourceFactory()).NewResMapFromBytes(in)
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range []resmap.Transformer{labelTransformer(m.Labels), &builtins.AnnotationsTransformerPlugin{
				Annotations: m.Annotations,
				FieldSpecs:  []kustypes.FieldSpec{{Path: "metadata/annotations", CreateIfNotPresent: true}},
			}} {
				if err := t.Transform(rm); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := rm.AsYaml(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
