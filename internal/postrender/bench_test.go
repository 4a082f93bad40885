package postrender

import (
	"bytes"
	"encoding/json"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
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
	kz := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{inputFile},
	}
	for _, p := range k.Patches {
		kz.Patches = append(kz.Patches, kustypes.Patch{Patch: p.Patch, Target: p.Target.kustomize()})
	}
	for _, img := range k.Images {
		kz.Images = append(kz.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	data, err := json.Marshal(kz)
	if err != nil {
		return nil, err
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.WriteFile(inputFile, in); err != nil {
		return nil, err
	}
	if err := fs.WriteFile(konfigFile, data); err != nil {
		return nil, err
	}
	m, err := krusty.MakeKustomizer(&krusty.Options{LoadRestrictions: kustypes.LoadRestrictionsNone, PluginConfig: kustypes.DisabledPluginConfig()}).Run(fs, ".")
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
}
